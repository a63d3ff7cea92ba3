// Single sign-on with the workspace's OpenID Provider: /login/sso sends the browser there with
// a flow bound to it (a cookie naming a short-lived row: state, nonce, PKCE verifier), and
// /login/sso/callback takes the flow once, checks the provider's answer and signs in whom its
// ID token names (services/accounts/sso-sign-in.ts decides who that may be). The code, the
// tokens and the ID token never reach a log: the request log writes paths, not query strings
// (plugins/audit.ts), and failures are answered in words without the provider's error text.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { negotiate } from "../http/format.ts";
import { sendLayout } from "../http/render.ts";
import { beginSession, safeNext } from "../http/sign-in.ts";
import { AppError } from "../lib/errors.ts";
import { type OriginConfig, workspaceOrigin } from "../lib/origin.ts";
import { redirectUriFor } from "../services/accounts/sso-settings.ts";
import { finishSsoLogin, startSsoLogin } from "../services/accounts/sso-sign-in.ts";
import { escapeHtml } from "../services/registry/html.ts";
import type { SessionLimits } from "../services/sessions.ts";

const startQuery = z.object({ next: z.string().max(2000).optional() });

/** The workspace's address as this request reached it: the redirect URI registered at the provider. */
const requestOrigin = (req: FastifyRequest) => `${req.protocol}://${req.headers.host}`;

export default async function ssoRoutes(
  app: FastifyInstance,
  opts: { sessionLimits: SessionLimits; origin: OriginConfig },
) {
  /** A sign-in that cannot go on, in words, with the way back; 403 for a refusal of the person. */
  function refused(req: FastifyRequest, reply: FastifyReply, reason: string, status = 403) {
    if (negotiate(req, "/login/sso").format === "markdown") throw new AppError(status, reason);
    reply.code(status);
    return sendLayout(req, reply, {
      title: "Single sign-on did not work",
      breadcrumb: [],
      content: `<div class="login"><p role="alert">${escapeHtml(reason)}</p><p><a href="/login">Back to log in</a></p></div>`,
    });
  }

  app.get("/login/sso", async (req, reply) => {
    const next = safeNext(startQuery.safeParse(req.query).data?.next);
    const started = await startSsoLogin(app.prisma, {
      tenantId: req.tenant!.id,
      redirectUri: redirectUriFor(requestOrigin(req)),
      next,
    }).catch(() => ({
      refusal:
        "The workspace's identity provider cannot be reached just now: try again in a moment, or ask an admin.",
    }));
    if ("refusal" in started) return refused(req, reply, started.refusal, 503);
    app.cookieJar.set(reply, "sso", started.cookie, { signed: true, expires: started.expiresAt });
    return reply.redirect(started.url.href, 303);
  });

  app.get("/login/sso/callback", async (req, reply) => {
    const signed = app.cookieJar.read(req, "sso");
    const unsigned = signed ? req.unsignCookie(signed) : null;
    app.cookieJar.clear(reply, "sso");
    const outcome = await finishSsoLogin(app.prisma, {
      tenantId: req.tenant!.id,
      cookie: unsigned?.valid ? (unsigned.value ?? undefined) : undefined,
      callbackUrl: new URL(req.url, requestOrigin(req)),
      address: req.ip,
      origin: workspaceOrigin(opts.origin, req.tenant!.subdomain),
    });
    if ("refusal" in outcome) return refused(req, reply, outcome.refusal);
    // The identity provider answers for the second factor: method "sso" skips Cadre's own.
    return beginSession(app, req, reply, outcome.user, { method: "sso", next: safeNext(outcome.next) });
  });
}
