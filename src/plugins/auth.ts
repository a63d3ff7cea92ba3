// Who is asking: a Bearer token (API and external agents) or a session cookie (people).
// CSRF applies only to cookie-authenticated writes: a token in a header cannot be
// sent by another site's form.
import { timingSafeEqual } from "node:crypto";
import fp from "fastify-plugin";
import { ForbiddenError, UnauthorizedError } from "../lib/errors.ts";
import { randomToken } from "../lib/ids.ts";
import { type Actor, toActor } from "../services/registry/types.ts";
import { findSession, SESSION_COOKIE } from "../services/sessions.ts";
import { verifyApiToken } from "../services/tokens.ts";
import { PUBLIC_PREFIXES } from "./tenancy.ts";

declare module "fastify" {
  interface FastifyRequest {
    actor?: Actor;
    authVia?: "session" | "token";
    sessionId?: string;
    csrfToken: string;
  }
}

export const CSRF_COOKIE = "cadre_csrf";
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export default fp<{ secure: boolean }>(
  async (app, opts) => {
    app.decorateRequest("actor", undefined);
    app.decorateRequest("authVia", undefined);
    app.decorateRequest("sessionId", undefined);
    app.decorateRequest("csrfToken", "");

    app.addHook("onRequest", async (req, reply) => {
      if (PUBLIC_PREFIXES.some((p) => req.url.startsWith(p)) || !req.tenant) return;
      let csrf = req.cookies[CSRF_COOKIE];
      if (!csrf || !/^[A-Za-z0-9_-]{32,}$/.test(csrf)) {
        csrf = randomToken(24);
        reply.setCookie(CSRF_COOKIE, csrf, {
          path: "/",
          httpOnly: true,
          sameSite: "lax",
          secure: opts.secure,
        });
      }
      req.csrfToken = csrf;

      const auth = req.headers.authorization;
      if (auth) {
        const m = /^Bearer\s+(\S+)$/i.exec(auth);
        const user = m ? await verifyApiToken(app.prisma, req.tenant.id, m[1]!) : null;
        if (!user) throw new UnauthorizedError("Invalid, revoked or unknown API token for this workspace.");
        req.actor = toActor(user);
        req.authVia = "token";
        return;
      }
      const raw = req.cookies[SESSION_COOKIE];
      const unsigned = raw ? req.unsignCookie(raw) : null;
      if (unsigned?.valid && unsigned.value) {
        const session = await findSession(app.prisma, req.tenant.id, unsigned.value);
        if (session) {
          req.actor = toActor(session.user);
          req.authVia = "session";
          req.sessionId = session.id;
        }
      }
    });

    app.addHook("preHandler", async (req) => {
      if (SAFE_METHODS.has(req.method) || req.authVia === "token" || !req.tenant) return;
      const body = req.body as Record<string, unknown> | undefined;
      const sent = (typeof body?._csrf === "string" ? body._csrf : undefined) ?? req.headers["x-csrf-token"];
      if (typeof sent !== "string" || !sameToken(sent, req.csrfToken))
        throw new ForbiddenError("Missing or invalid CSRF token: reload the page and try again.");
    });
  },
  { name: "auth", dependencies: ["prisma", "tenancy", "@fastify/cookie"] },
);
