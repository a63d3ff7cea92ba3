// Resolves the tenant from the Host header: `<tenant>.<BASE_DOMAIN>`, else a hostname a
// workspace claimed (workspace_hostnames), else DEFAULT_WORKSPACE for any other host (the bare
// domain, an IP, 127.0.0.1:3000), so one team needs no wildcard DNS. Every later lookup is
// scoped by it, so the host is the first line of tenant isolation. Sign-up's paths on a host
// that names no workspace have no tenant (routes/signup.ts).
import fp from "fastify-plugin";
import type { Tenant } from "../generated/prisma/client.ts";
import { NotFoundError } from "../lib/errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    tenant?: Tenant;
  }
}

/** The host without port or trailing dot, lowercased: how claimed hostnames are stored. */
export function bareHost(host: string | undefined): string {
  return (host ?? "").toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "");
}

export function subdomainOf(host: string | undefined, baseDomain: string): string | null {
  if (!host) return null;
  const name = host.toLowerCase().replace(/:\d+$/, "").replace(/\.$/, "");
  const suffix = `.${baseDomain.toLowerCase()}`;
  if (!name.endsWith(suffix)) return null;
  const sub = name.slice(0, -suffix.length);
  return /^[a-z0-9][a-z0-9-]{0,62}$/.test(sub) ? sub : null;
}

// No workspace and no user: static files (and the icon browsers ask for at the root), the health
// check, and /metrics (its own bearer token).
export const PUBLIC_PREFIXES = ["/assets/", "/favicon.ico", "/healthz", "/metrics"];

export interface TenancyOptions {
  baseDomain: string;
  /** DEFAULT_WORKSPACE: served on every host that names no workspace. */
  defaultWorkspace?: string;
  /**
   * Paths served with no workspace on a host that names none (sign-up), checked before the
   * DEFAULT_WORKSPACE fallback: a one-host install's bare domain still has its sign-up.
   */
  workspaceless?: (url: string) => boolean;
}

export default fp<TenancyOptions>(
  async (app, opts) => {
    app.decorateRequest("tenant", undefined);
    app.addHook("onRequest", async (req) => {
      if (PUBLIC_PREFIXES.some((p) => req.url.startsWith(p))) return;
      const sub = subdomainOf(req.headers.host, opts.baseDomain);
      let tenant = sub ? await app.prisma.tenant.findUnique({ where: { subdomain: sub } }) : null;
      // A host that is no subdomain: a workspace's own hostname first, then the default.
      if (!sub) {
        const claimed = await app.prisma.workspaceHostname.findUnique({
          where: { hostname: bareHost(req.headers.host) },
          include: { tenant: true },
        });
        if (!claimed && opts.workspaceless?.(req.url)) return;
        tenant =
          claimed?.tenant ??
          (opts.defaultWorkspace
            ? await app.prisma.tenant.findUnique({ where: { subdomain: opts.defaultWorkspace } })
            : null);
      }
      if (!tenant)
        throw new NotFoundError(
          sub
            ? `No workspace called “${sub}” here.`
            : opts.defaultWorkspace
              ? `The default workspace “${opts.defaultWorkspace}” (DEFAULT_WORKSPACE) does not exist yet: create it with bin/cadre workspace create.`
              : `Open a workspace at <name>.${opts.baseDomain}, for example demo.${opts.baseDomain}.`,
        );
      req.tenant = tenant;
    });
  },
  { name: "tenancy", dependencies: ["prisma"] },
);
