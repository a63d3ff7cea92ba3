// Where a workspace is reached from outside a request (a mail, an outgoing webhook): each
// workspace is a subdomain of BASE_DOMAIN (plugins/tenancy.ts), but DEFAULT_WORKSPACE is
// reached at the base domain itself: that install may have no wildcard DNS at all.
import type { Config } from "../config.ts";

export type OriginConfig = Pick<Config, "PUBLIC_SCHEME" | "BASE_DOMAIN" | "PUBLIC_PORT" | "PORT"> &
  Partial<Pick<Config, "DEFAULT_WORKSPACE">>;

export function workspaceOrigin(c: OriginConfig, subdomain: string): string {
  const port = c.PUBLIC_PORT ?? (c.BASE_DOMAIN === "localhost" ? c.PORT : undefined);
  const host = subdomain === c.DEFAULT_WORKSPACE ? c.BASE_DOMAIN : `${subdomain}.${c.BASE_DOMAIN}`;
  return `${c.PUBLIC_SCHEME}://${host}${port ? `:${port}` : ""}`;
}
