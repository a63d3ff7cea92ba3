// The one way a browser gets a session after its first factor (password, SSO, passkey):
// beginSession decides full / second step / enrolment (services/accounts/sign-in.ts), writes
// the session, sets the cookie and sends the browser on. finishSignIn makes a half session
// full once its step is done (routes/second-step.ts, and the passkey step). Every way in calls
// these two; none writes a session cookie of its own.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { SignInMethod, User } from "../generated/prisma/client.ts";
import { randomToken } from "../lib/ids.ts";
import { workspaceOrigin } from "../lib/origin.ts";
import { noteSignIn, STAGE_PATHS, stageFor } from "../services/accounts/sign-in.ts";
import { createSession, promoteSession, type SignInFrom } from "../services/sessions.ts";

type Person = Pick<User, "id" | "tenantId" | "tenantAdmin" | "knownBrowsers">;

/**
 * A random id the browser keeps across sessions (a year): a sign-in from one never seen is
 * news to its person. Set at the first factor, read again when the session becomes full.
 */
function browserIdOf(app: FastifyInstance, req: FastifyRequest, reply: FastifyReply): string {
  let browserId = app.cookieJar.read(req, "browser");
  if (!browserId || !/^[A-Za-z0-9_-]{32,64}$/.test(browserId)) {
    browserId = randomToken(24);
    app.cookieJar.set(reply, "browser", browserId, { expires: new Date(Date.now() + 365 * 86_400_000) });
  }
  return browserId;
}

const fromOf = (req: FastifyRequest): SignInFrom => ({
  userAgent: req.headers["user-agent"] ?? "",
  ipAddress: req.ip,
});

/**
 * Only local paths: `next` must never send someone to another site after logging in.
 * Printable URL characters only: browsers drop tabs and newlines, so `/<TAB>/evil.com`
 * would become `//evil.com`, and other control or non-ASCII characters break the header.
 */
export function safeNext(next: string | undefined): string {
  return next && /^\/(?!\/)[\w\-.~%!$&'()*+,;=:@/?#[\]]*$/.test(next) && !next.startsWith("/login")
    ? next
    : "/";
}

/** Where a half session's step lives, keeping where the person was going. */
export function stepPath(stage: keyof typeof STAGE_PATHS, next: string): string {
  return next === "/" ? STAGE_PATHS[stage] : `${STAGE_PATHS[stage]}?next=${encodeURIComponent(next)}`;
}

/**
 * After the first factor: the session at the stage the person and the workspace's policy
 * call for, its cookie, and a redirect (to `next` when full, else to the step). `next` must
 * already be a safe local path.
 */
export async function beginSession(
  app: FastifyInstance,
  req: FastifyRequest,
  reply: FastifyReply,
  person: Person,
  how: { method: SignInMethod; next: string },
) {
  const browserId = browserIdOf(app, req, reply);
  const from = fromOf(req);
  const origin = workspaceOrigin(app.signInSettings.origin, req.tenant!.subdomain);
  // The session and, when full, the browser remembered and its notice: together or not at all.
  const session = await app.prisma.$transaction(async (tx) => {
    const stage = await stageFor(tx, person, how.method);
    const created = await createSession(
      tx,
      person.tenantId,
      person.id,
      app.signInSettings.sessionLimits,
      from,
      {
        stage,
        method: how.method,
      },
    );
    if (stage === "full") await noteSignIn(tx, person, browserId, from, origin);
    return { ...created, stage };
  });
  app.cookieJar.set(reply, "session", session.token, { signed: true, expires: session.expiresAt });
  // From here on the forms carry the session's token; the pre-session one is spent.
  app.cookieJar.clear(reply, "csrf");
  return reply.redirect(session.stage === "full" ? how.next : stepPath(session.stage, how.next), 303);
}

/**
 * The half session of this request passed its step: it becomes full under a new cookie, and
 * the browser's notice is written. False when the session is gone (expired meanwhile).
 */
export async function finishSignIn(
  app: FastifyInstance,
  req: FastifyRequest,
  reply: FastifyReply,
  person: Person,
): Promise<boolean> {
  const pending = req.pendingSession;
  if (!pending) return false;
  const from = fromOf(req);
  const browserId = browserIdOf(app, req, reply);
  const origin = workspaceOrigin(app.signInSettings.origin, req.tenant!.subdomain);
  const promoted = await app.prisma.$transaction(async (tx) => {
    const session = await promoteSession(tx, pending.id, app.signInSettings.sessionLimits);
    if (session) await noteSignIn(tx, person, browserId, from, origin);
    return session;
  });
  if (!promoted) return false;
  app.cookieJar.set(reply, "session", promoted.token, { signed: true, expires: promoted.expiresAt });
  return true;
}
