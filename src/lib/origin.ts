// Where a workspace is reached from outside a request (a mail, an outgoing webhook): each
// workspace is a subdomain of BASE_DOMAIN (plugins/tenancy.ts).
import type { Config } from "../config.ts";

export type OriginConfig = Pick<Config, "PUBLIC_SCHEME" | "BASE_DOMAIN" | "PUBLIC_PORT" | "PORT">;

export function workspaceOrigin(c: OriginConfig, subdomain: string): string {
  const port = c.PUBLIC_PORT ?? (c.BASE_DOMAIN === "localhost" ? c.PORT : undefined);
  return `${c.PUBLIC_SCHEME}://${subdomain}.${c.BASE_DOMAIN}${port ? `:${port}` : ""}`;
}
