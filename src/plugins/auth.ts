// Who is asking: a Bearer token (API and external agents) or a session cookie (people).
// CSRF applies only to cookie-authenticated writes: a token in a header cannot be
// sent by another site's form. The token a form must carry is bound to the session, or,
// before there is one (the login form), to a random pre-session cookie (src/http/csrf.ts).
import type { FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { SessionStage, TokenScope, User } from "../generated/prisma/client.ts";
import { type CookieJar, cookieJar } from "../http/cookies.ts";
import { csrfKey, csrfToken, sameToken } from "../http/csrf.ts";
import { ForbiddenError, UnauthorizedError } from "../lib/errors.ts";
import { randomToken } from "../lib/ids.ts";
import type { OriginConfig } from "../lib/origin.ts";
import { NO_WORKSPACE } from "../services/login-throttle.ts";
import { type Actor, toActor } from "../services/registry/types.ts";
import { findSession, type SessionLimits } from "../services/sessions.ts";
import { verifyApiToken } from "../services/tokens.ts";
import { PUBLIC_PREFIXES } from "./tenancy.ts";

declare module "fastify" {
  interface FastifyInstance {
    cookieJar: CookieJar;
    /** What a new session is made with (http/sign-in.ts). */
    signInSettings: { sessionLimits: SessionLimits; origin: OriginConfig };
  }
  interface FastifyRequest {
    actor?: Actor;
    authVia?: "session" | "token";
    /** The API token a token-authenticated request was made with (rate limits, audit). */
    tokenId?: string;
    /** An agent's token: the label of what was read with it (agents/policy/labels.ts). */
    tokenLabel?: unknown;
    /** The label of the token's agent, shared by all its tokens (agents/policy/labels.ts agentTokenFlow). */
    agentLabel?: unknown;
    /** What that token may do (services/registry/token-scope.ts). */
    tokenScope?: TokenScope;
    sessionId?: string;
    /**
     * A session short of full (the second step, enrolment): no actor, so every page answers
     * as signed out; only the step's own routes and sign-out read it.
     */
    pendingSession?: { id: string; stage: Exclude<SessionStage, "full">; user: User };
    csrfToken: string;
  }
  interface FastifyContextConfig {
    /** The route authenticates each request by its own signature (webhooks): no session, token or CSRF. */
    signed?: boolean;
  }
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export default fp<{
  secure: boolean;
  sessionSecret: string;
  sessionLimits: SessionLimits;
  origin: OriginConfig;
}>(
  async (app, opts) => {
    const jar = cookieJar(opts.secure);
    const key = csrfKey(opts.sessionSecret);
    app.decorate("cookieJar", jar);
    app.decorate("signInSettings", { sessionLimits: opts.sessionLimits, origin: opts.origin });
    app.decorateRequest("actor", undefined);
    app.decorateRequest("authVia", undefined);
    app.decorateRequest("tokenId", undefined);
    app.decorateRequest("tokenLabel", undefined);
    app.decorateRequest("agentLabel", undefined);
    app.decorateRequest("tokenScope", undefined);
    app.decorateRequest("sessionId", undefined);
    app.decorateRequest("pendingSession", undefined);
    app.decorateRequest("csrfToken", "");

    app.addHook("onRequest", async (req, reply) => {
      if (PUBLIC_PREFIXES.some((p) => req.url.startsWith(p)) || req.routeOptions.config.signed) return;
      // No workspace (sign-up at the base host): nobody to sign in, but its forms carry a token.
      if (!req.tenant) {
        req.csrfToken = csrfToken(key, NO_WORKSPACE, {
          kind: "pre-session",
          nonce: preSessionNonce(req, reply),
        });
        return;
      }
      const auth = req.headers.authorization;
      if (auth) {
        const m = /^Bearer\s+(\S+)$/i.exec(auth);
        const found = m ? await verifyApiToken(app.prisma, req.tenant.id, m[1]!) : null;
        if (!found)
          throw new UnauthorizedError("Invalid, revoked, expired or unknown API token for this workspace.");
        req.actor = toActor(found.user);
        req.authVia = "token";
        req.tokenId = found.tokenId;
        req.tokenLabel = found.label;
        req.agentLabel = found.agentLabel;
        req.tokenScope = found.scope;
        return;
      }
      const raw = jar.read(req, "session");
      const unsigned = raw ? req.unsignCookie(raw) : null;
      if (unsigned?.valid && unsigned.value) {
        const session = await findSession(app.prisma, req.tenant.id, unsigned.value, opts.sessionLimits);
        // Its forms (the code, sign-out) carry the session's token; nothing else sees it signed in.
        if (session && session.stage !== "full") {
          req.pendingSession = { id: session.id, stage: session.stage, user: session.user };
          req.csrfToken = csrfToken(key, req.tenant.id, { kind: "session", sessionId: session.id });
          return;
        }
        if (session) {
          req.actor = toActor(session.user);
          req.authVia = "session";
          req.sessionId = session.id;
          req.csrfToken = csrfToken(key, req.tenant.id, { kind: "session", sessionId: session.id });
          return;
        }
      }
      req.csrfToken = csrfToken(key, req.tenant.id, {
        kind: "pre-session",
        nonce: preSessionNonce(req, reply),
      });
    });

    /** The browser's random pre-session cookie, set when it has none. */
    function preSessionNonce(req: FastifyRequest, reply: FastifyReply): string {
      let nonce = jar.read(req, "csrf");
      if (!nonce || !/^[A-Za-z0-9_-]{32,}$/.test(nonce)) {
        nonce = randomToken(24);
        jar.set(reply, "csrf", nonce);
      }
      return nonce;
    }

    // What a signed-in person or a token is answered is theirs: no browser cache or proxy may
    // keep it, so Back after logging out (or the next person at a shared computer) finds nothing.
    // Every answer, redirects and errors included: a 404 says what exists, a flash what was done.
    app.addHook("onSend", async (req, reply) => {
      if (req.actor || req.pendingSession) reply.header("cache-control", "no-store");
    });

    app.addHook("preHandler", async (req) => {
      if (SAFE_METHODS.has(req.method) || req.authVia === "token") return;
      if (req.routeOptions.config.signed || PUBLIC_PREFIXES.some((p) => req.url.startsWith(p))) return;
      const body = req.body as Record<string, unknown> | undefined;
      const sent = (typeof body?._csrf === "string" ? body._csrf : undefined) ?? req.headers["x-csrf-token"];
      if (typeof sent !== "string" || !sameToken(sent, req.csrfToken))
        throw new ForbiddenError("Missing or invalid CSRF token: reload the page and try again.");
    });
  },
  { name: "auth", dependencies: ["prisma", "tenancy", "@fastify/cookie"] },
);
