// Where a workspace is reached from outside a request (a mail, an outgoing webhook): each
// workspace is a subdomain of BASE_DOMAIN (plugins/tenancy.ts).
import type { Config } from "../config.ts";

export type OriginConfig = Pick<Config, "PUBLIC_SCHEME" | "BASE_DOMAIN" | "PUBLIC_PORT" | "PORT">;

export function workspaceOrigin(originConfig: OriginConfig, subdomain: string): string {
  const port =
    originConfig.PUBLIC_PORT ?? (originConfig.BASE_DOMAIN === "localhost" ? originConfig.PORT : undefined);
  return `${originConfig.PUBLIC_SCHEME}://${subdomain}.${originConfig.BASE_DOMAIN}${port ? `:${port}` : ""}`;
}
