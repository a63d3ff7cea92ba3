// Resolves the tenant from the Host header: `<tenant>.<BASE_DOMAIN>`. Every later
// lookup is scoped by it, so the host is the first line of tenant isolation.
import fp from "fastify-plugin";
import type { Tenant } from "../generated/prisma/client.ts";
import { NotFoundError } from "../lib/errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    tenant?: Tenant;
  }
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

export default fp<{ baseDomain: string }>(
  async (app, opts) => {
    app.decorateRequest("tenant", undefined);
    app.addHook("onRequest", async (req) => {
      if (PUBLIC_PREFIXES.some((p) => req.url.startsWith(p))) return;
      const sub = subdomainOf(req.headers.host, opts.baseDomain);
      const tenant = sub ? await app.prisma.tenant.findUnique({ where: { subdomain: sub } }) : null;
      if (!tenant)
        throw new NotFoundError(
          sub
            ? `No workspace called “${sub}” here.`
            : `Open a workspace at <name>.${opts.baseDomain}, for example demo.${opts.baseDomain}.`,
        );
      req.tenant = tenant;
    });
  },
  { name: "tenancy", dependencies: ["prisma"] },
);
