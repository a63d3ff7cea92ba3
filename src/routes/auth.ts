import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { Db } from "../db/prisma.ts";
import { negotiate } from "../http/format.ts";
import { sendLayout } from "../http/render.ts";
import { beginSession, safeNext, stepPath } from "../http/sign-in.ts";
import { TooManyRequestsError, UnauthorizedError } from "../lib/errors.ts";
import type { OriginConfig } from "../lib/origin.ts";
import { textProblem } from "../lib/text.ts";
import { passwordsOffReason, ssoProviderOf } from "../services/accounts/sso-settings.ts";
import { countAttempt, loginSucceeded, type ThrottleSettings } from "../services/login-throttle.ts";
import { passkeySignInForm } from "../services/pages/security-passkeys.ts";
import { verifyPassword } from "../services/passwords.ts";
import { escapeHtml } from "../services/registry/html.ts";
import { deleteSession, type SessionLimits } from "../services/sessions.ts";

const loginBody = z.object({
  // A NUL would reach Postgres' lookup and fail as a 500; such an email is just a wrong one.
  email: z
    .string()
    .trim()
    .toLowerCase()
    .max(200)
    .refine((s) => !textProblem(s)),
  password: z.string().max(1000),
  next: z.string().max(2000).optional(),
  _csrf: z.string().optional(),
});

/** The workspace's single sign-on as the log-in page offers it (routes/sso.ts); null: none set. */
interface LoginSso {
  name: string;
  /** Passwords are refused here: the form for one is not shown. */
  only: boolean;
}

function ssoButton(sso: LoginSso, next: string): string {
  const href = `/login/sso${next === "/" ? "" : `?next=${encodeURIComponent(next)}`}`;
  return `<p><a class="button sso" href="${escapeHtml(href)}">Sign in with ${escapeHtml(sso.name)}</a></p>
${sso.only ? `<p class="hint">This workspace signs in with ${escapeHtml(sso.name)} only: passwords are turned off here.</p>` : ""}`;
}

function loginForm(csrf: string, next: string, email = "", error = "", sso: LoginSso | null = null): string {
  const errors = error ? `<div class="form-errors" role="alert">${escapeHtml(error)}</div>` : "";
  if (sso?.only) return `<div class="login">\n${errors}\n${ssoButton(sso, next)}</div>`;
  return `<div class="login">
${errors}
${sso ? ssoButton(sso, next) : ""}
<form method="post" action="/login" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<div class="field"><label for="email">Email</label><input type="email" id="email" name="email" value="${escapeHtml(email)}" autocomplete="username" required autofocus></div>
<div class="field"><label for="password">Password</label><input type="password" id="password" name="password" autocomplete="current-password" required></div>
<button type="submit">Log in</button>
</form>
${passkeySignInForm(next)}
<p class="hint"><a href="/forgot-password">Forgot your password?</a></p>
<p class="hint">Agents and scripts use a personal API token instead: <code>Authorization: Bearer &lt;token&gt;</code>.</p>
</div>`;
}

async function loginSso(db: Db, tenantId: string): Promise<LoginSso | null> {
  const provider = await ssoProviderOf(db, tenantId);
  return provider && { name: provider.displayName, only: provider.ssoOnly };
}

/** "Too many failed logins" with the wait in words a person can act on. */
function tooMany(seconds: number): string {
  const wait =
    seconds < 90
      ? `${seconds} seconds`
      : seconds < 2 * 3600
        ? `${Math.ceil(seconds / 60)} minutes`
        : `${Math.ceil(seconds / 3600)} hours`;
  return `Too many failed logins: try again in ${wait}.`;
}

export default async function authRoutes(
  app: FastifyInstance,
  opts: { sessionLimits: SessionLimits; throttle: ThrottleSettings; origin: OriginConfig },
) {
  app.get("/login", async (req, reply) => {
    const next = safeNext((req.query as { next?: string }).next);
    if (negotiate(req, "/login").format === "markdown") {
      return reply
        .type("text/markdown; charset=utf-8")
        .header("Vary", "Accept")
        .send(
          "# Log in\n\nPeople log in in the browser. Agents and scripts send a personal API token: `Authorization: Bearer <token>` (create one under your settings).\n\n## Actions\n\n_No actions on this page._\n",
        );
    }
    if (req.actor) return reply.redirect(next, 303);
    // Half signed in: the step it still needs, not the password again.
    if (req.pendingSession) return reply.redirect(stepPath(req.pendingSession.stage, next), 303);
    return sendLayout(req, reply, {
      title: `Log in to ${req.tenant!.name}`,
      breadcrumb: [],
      content: loginForm(req.csrfToken, next, "", "", await loginSso(app.prisma, req.tenant!.id)),
    });
  });

  app.post("/login", async (req, reply) => {
    const parsed = loginBody.safeParse(req.body ?? {});
    const body = parsed.success ? parsed.data : { email: "", password: "", next: "/" };
    const next = safeNext(body.next);
    const refuse = (message: string, retryAfter?: number) => {
      if (negotiate(req, "/login").format === "markdown")
        throw retryAfter ? new TooManyRequestsError(message, retryAfter) : new UnauthorizedError(message);
      if (retryAfter) reply.header("Retry-After", String(retryAfter));
      reply.code(retryAfter ? 429 : 401);
      return sendLayout(req, reply, {
        title: `Log in to ${req.tenant!.name}`,
        breadcrumb: [],
        content: loginForm(req.csrfToken, next, body.email, message, sso),
      });
    };
    const sso = await loginSso(app.prisma, req.tenant!.id);
    // Before the throttle and the password check: no password is tried here at all.
    if (sso?.only) return refuse(passwordsOffReason(sso.name));
    const attempt = { tenantId: req.tenant!.id, email: body.email, address: req.ip };
    const count = await countAttempt(app.prisma, opts.throttle, attempt);
    if (count.waitSeconds) return refuse(tooMany(count.waitSeconds), count.waitSeconds);
    const user = body.email
      ? await app.prisma.user.findUnique({
          where: { tenantId_email: { tenantId: req.tenant!.id, email: body.email } },
        })
      : null;
    const succeeded = await verifyPassword(
      body.password,
      user?.kind === "person" && !user.archivedAt ? user.passwordHash : null,
    );
    if (!user || !succeeded)
      return count.lockSeconds
        ? refuse(tooMany(count.lockSeconds), count.lockSeconds)
        : refuse("Wrong email or password.");
    await loginSucceeded(app.prisma, attempt);
    // Told only to whoever knows the password: the account exists, and is closed.
    if (user.deactivatedAt)
      return refuse("This account has been deactivated: a workspace admin can reactivate it.");
    return beginSession(app, req, reply, user, { method: "password", next });
  });

  app.post("/logout", async (req, reply) => {
    const sessionId = req.sessionId ?? req.pendingSession?.id;
    if (sessionId) await deleteSession(app.prisma, sessionId);
    app.cookieJar.clear(reply, "session");
    return reply.redirect("/login", 303);
  });
}
