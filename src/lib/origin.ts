// Where a workspace is reached from outside a request (a mail, an outgoing webhook): each
// workspace is a subdomain of BASE_DOMAIN (plugins/tenancy.ts), but DEFAULT_WORKSPACE is
// reached at the base domain itself: that install may have no wildcard DNS at all.
import type { Config } from "../config.ts";

export type OriginConfig = Pick<Config, "PUBLIC_SCHEME" | "BASE_DOMAIN" | "PUBLIC_PORT" | "PORT"> &
  Partial<Pick<Config, "DEFAULT_WORKSPACE">>;

function portPart(originConfig: OriginConfig): string {
  const port =
    originConfig.PUBLIC_PORT ?? (originConfig.BASE_DOMAIN === "localhost" ? originConfig.PORT : undefined);
  return port ? `:${port}` : "";
}

export function workspaceOrigin(originConfig: OriginConfig, subdomain: string): string {
  const host =
    subdomain === originConfig.DEFAULT_WORKSPACE
      ? originConfig.BASE_DOMAIN
      : `${subdomain}.${originConfig.BASE_DOMAIN}`;
  return `${originConfig.PUBLIC_SCHEME}://${host}${portPart(originConfig)}`;
}

/** The bare BASE_DOMAIN from outside: where sign-up lives (routes/signup.ts). */
export function baseOrigin(originConfig: OriginConfig): string {
  return `${originConfig.PUBLIC_SCHEME}://${originConfig.BASE_DOMAIN}${portPart(originConfig)}`;
}
