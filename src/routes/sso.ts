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
import { AppError } from "../lib/errors.ts";
import { randomToken } from "../lib/ids.ts";
import { type OriginConfig, workspaceOrigin } from "../lib/origin.ts";
import { noteBrowser } from "../services/accounts/known-browsers.ts";
import { recordSecurityEvent } from "../services/accounts/security-events.ts";
import { redirectUriFor } from "../services/accounts/sso-settings.ts";
import { finishSsoLogin, startSsoLogin } from "../services/accounts/sso-sign-in.ts";
import { escapeHtml } from "../services/registry/html.ts";
import { createSession, type SessionLimits } from "../services/sessions.ts";
import { safeNext } from "./auth.ts";

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
    await beginSsoSession(req, reply, outcome.user);
    return reply.redirect(safeNext(outcome.next), 303);
  });

  /**
   * The session, the browser remembered and the notice of a new one, as /login makes them.
   * TODO(totp): replace with the shared beginSession(..., method "sso") once it is merged; the
   * identity provider answers for the second factor, so SSO skips it.
   */
  async function beginSsoSession(
    req: FastifyRequest,
    reply: FastifyReply,
    user: Parameters<typeof noteBrowser>[1] & { id: string },
  ) {
    let browserId = app.cookieJar.read(req, "browser");
    if (!browserId || !/^[A-Za-z0-9_-]{32,64}$/.test(browserId)) browserId = randomToken(24);
    app.cookieJar.set(reply, "browser", browserId, { expires: new Date(Date.now() + 365 * 86_400_000) });
    const from = { userAgent: req.headers["user-agent"] ?? "", ipAddress: req.ip };
    const { token, expiresAt } = await app.prisma.$transaction(async (tx) => {
      const session = await createSession(tx, req.tenant!.id, user.id, opts.sessionLimits, from);
      const news = await noteBrowser(tx, user, browserId, from);
      if (news)
        await recordSecurityEvent(tx, {
          tenantId: req.tenant!.id,
          userId: user.id,
          actorId: user.id,
          kind: "new_sign_in",
          detail: `${news} If it was not you, end that session on your security page and tell your admin.`,
          address: req.ip,
          origin: workspaceOrigin(opts.origin, req.tenant!.subdomain),
        });
      return session;
    });
    app.cookieJar.set(reply, "session", token, { signed: true, expires: expiresAt });
    app.cookieJar.clear(reply, "csrf");
  }
}
