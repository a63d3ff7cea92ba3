// The sign-in's second step, for a half session (plugins/auth.ts req.pendingSession):
// /login/verify asks for a code from one of the person's factors (listed from factorsOf, one
// entry per method; a passkey has its own form, answered in routes/passkeys.ts), /login/enrol sets up an authenticator when the
// workspace requires one the person lacks. Both end in finishSignIn; wrong codes are counted
// like wrong passwords, under their own account key, so guessing six digits is as slow as a
// password. Everything else a half session asks for answers as signed out.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { User } from "../generated/prisma/client.ts";
import { negotiate } from "../http/format.ts";
import { sendLayout } from "../http/render.ts";
import { finishSignIn, safeNext, stepPath } from "../http/sign-in.ts";
import { TooManyRequestsError, UnauthorizedError, ValidationError } from "../lib/errors.ts";
import { workspaceOrigin } from "../lib/origin.ts";
import { useRecoveryCode } from "../services/accounts/recovery-codes.ts";
import { type Factors, factorsOf } from "../services/accounts/second-factor.ts";
import { recordSecurityEvent } from "../services/accounts/security-events.ts";
import { acceptTotpCode, pendingTotp, startTotpEnrolment } from "../services/accounts/totp.ts";
import { confirmTotp } from "../services/accounts/two-factor.ts";
import { countAttempt, loginSucceeded, type ThrottleSettings } from "../services/login-throttle.ts";
import { passkeySecondStepForm } from "../services/pages/security-passkeys.ts";
import { enrolmentHtml, recoveryCodesHtml } from "../services/pages/two-factor-views.ts";
import { escapeHtml } from "../services/registry/html.ts";

const codeBody = z.object({
  method: z.enum(["totp", "recovery"]).default("totp"),
  code: z.string().max(100).default(""),
  next: z.string().max(2000).optional(),
  _csrf: z.string().optional(),
});

/** One way to answer the second step: what the page lists, from the person's factors. */
interface StepMethod {
  method: string;
  label: string;
  field: string;
  hint: string;
  autocomplete: string;
}

function methodsFor(factors: Factors): StepMethod[] {
  const methods: StepMethod[] = [];
  if (factors.totp)
    methods.push({
      method: "totp",
      label: "Code from your authenticator app",
      field: "Code",
      hint: "Six digits; a new one every 30 seconds.",
      autocomplete: "one-time-code",
    });
  if (factors.recoveryCodesLeft)
    methods.push({
      method: "recovery",
      label: "A recovery code",
      field: "Recovery code",
      hint: `One of the codes you saved when you set up two-factor (${factors.recoveryCodesLeft} left); each works once.`,
      autocomplete: "off",
    });
  return methods;
}

function methodForm(csrf: string, next: string, method: StepMethod, first: boolean): string {
  const id = `code-${method.method}`;
  return `<form method="post" action="/login/verify" class="action-form">
<h2>${escapeHtml(method.label)}</h2>
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<input type="hidden" name="method" value="${escapeHtml(method.method)}">
<div class="field"><label for="${id}">${escapeHtml(method.field)}</label><input type="text" id="${id}" name="code" autocomplete="${method.autocomplete}"${method.method === "totp" ? ' inputmode="numeric"' : ""} required${first ? " autofocus" : ""}><p class="hint">${escapeHtml(method.hint)}</p></div>
<button type="submit">Verify</button>
</form>`;
}

function signOutForm(csrf: string): string {
  return `<form method="post" action="/logout" class="action-form"><input type="hidden" name="_csrf" value="${escapeHtml(csrf)}"><button type="submit" class="secondary">Sign out</button></form>`;
}

/** "Too many wrong codes" with the wait in minutes a person can act on. */
function tooMany(seconds: number): string {
  return `Too many wrong codes: try again in ${seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`}.`;
}

/** Whose account the wrong codes are counted against: not the email, so its own scope. */
const attemptOf = (req: FastifyRequest, user: Pick<User, "id">) => ({
  tenantId: req.tenant!.id,
  email: `second-factor:${user.id}`,
  address: req.ip,
});

export default async function secondStepRoutes(app: FastifyInstance, opts: { throttle: ThrottleSettings }) {
  const nextOf = (req: FastifyRequest) => safeNext((req.query as { next?: string } | undefined)?.next);
  const markdown = (req: FastifyRequest, path: string) => negotiate(req, path).format === "markdown";

  /** Not in this step: a full session goes on, another step goes there, nobody goes to /login. */
  function elsewhere(req: FastifyRequest, reply: FastifyReply, stage: string, next: string) {
    if (req.actor) return reply.redirect(next, 303);
    if (!req.pendingSession) return reply.redirect(`/login?next=${encodeURIComponent(next)}`, 303);
    if (req.pendingSession.stage !== stage)
      return reply.redirect(stepPath(req.pendingSession.stage, next), 303);
    return null;
  }

  async function verifyPage(req: FastifyRequest, reply: FastifyReply, next: string, error = "") {
    const user = req.pendingSession!.user;
    const factors = await factorsOf(app.prisma, user);
    const methods = methodsFor(factors);
    return sendLayout(req, reply, {
      title: "Two-factor sign-in",
      breadcrumb: [],
      content: `<div class="login">
${error ? `<div class="form-errors" role="alert">${escapeHtml(error)}</div>` : ""}
<p>Your password was right. One more step, @${escapeHtml(user.handle)}: prove it is you with one of these.</p>
${factors.passkeys ? passkeySecondStepForm(next, req.csrfToken) : ""}
${methods.map((method, index) => methodForm(req.csrfToken, next, method, index === 0)).join("\n")}
${signOutForm(req.csrfToken)}
</div>`,
    });
  }

  app.get("/login/verify", async (req, reply) => {
    const next = nextOf(req);
    if (markdown(req, "/login/verify"))
      throw new UnauthorizedError("The second step of a sign-in is a browser page: sign in in the browser.");
    return elsewhere(req, reply, "second_factor", next) ?? verifyPage(req, reply, next);
  });

  app.post("/login/verify", async (req, reply) => {
    const parsed = codeBody.safeParse(req.body ?? {});
    const body = parsed.success ? parsed.data : { method: "totp" as const, code: "", next: "/" };
    const next = safeNext(body.next);
    const away = elsewhere(req, reply, "second_factor", next);
    if (away) return away;
    const user = req.pendingSession!.user;
    const asMarkdown = markdown(req, "/login/verify");
    const field = body.method === "recovery" ? "Recovery code" : "Code";
    if (!body.code.trim()) {
      if (asMarkdown) throw new ValidationError([{ field, message: "required" }]);
      reply.code(400);
      return verifyPage(req, reply, next, `${field}: required.`);
    }
    const attempt = attemptOf(req, user);
    const count = await countAttempt(app.prisma, opts.throttle, attempt);
    const refuse = (message: string, retryAfter?: number) => {
      if (asMarkdown)
        throw retryAfter ? new TooManyRequestsError(message, retryAfter) : new UnauthorizedError(message);
      if (retryAfter) reply.header("Retry-After", String(retryAfter));
      reply.code(retryAfter ? 429 : 401);
      return verifyPage(req, reply, next, message);
    };
    if (count.waitSeconds) return refuse(tooMany(count.waitSeconds), count.waitSeconds);
    const accepted = await app.prisma.$transaction(async (tx) => {
      if (body.method === "totp") return acceptTotpCode(tx, user, body.code);
      if (!(await useRecoveryCode(tx, user, body.code))) return false;
      await recordSecurityEvent(tx, {
        tenantId: user.tenantId,
        userId: user.id,
        actorId: user.id,
        kind: "recovery_code_used",
        detail:
          "A recovery code was used to sign in to your account. If that was you, make a new set when you are low.",
        address: req.ip,
        origin: workspaceOrigin(app.signInSettings.origin, req.tenant!.subdomain),
      });
      return true;
    });
    if (!accepted)
      return count.lockSeconds
        ? refuse(tooMany(count.lockSeconds), count.lockSeconds)
        : refuse(`Wrong ${field.toLowerCase()}: check it and try again.`);
    await loginSucceeded(app.prisma, attempt);
    if (!(await finishSignIn(app, req, reply, user)))
      return reply.redirect(`/login?next=${encodeURIComponent(next)}`, 303);
    return reply.redirect(next, 303);
  });

  async function enrolPage(req: FastifyRequest, reply: FastifyReply, next: string, error = "") {
    const user = req.pendingSession!.user;
    const pending = await pendingTotp(app.prisma, user, req.tenant!.name);
    return sendLayout(req, reply, {
      title: "Set up two-factor",
      breadcrumb: [],
      content: `<div class="login">
${error ? `<div class="form-errors" role="alert">${escapeHtml(error)}</div>` : ""}
<p>${escapeHtml(req.tenant!.name)} requires two-factor sign-in. Set up an authenticator app to continue, @${escapeHtml(user.handle)}.</p>
${enrolmentHtml({ csrf: req.csrfToken, next, pending, startAction: "/login/enrol/start", confirmAction: "/login/enrol" })}
${signOutForm(req.csrfToken)}
</div>`,
    });
  }

  app.get("/login/enrol", async (req, reply) => {
    const next = nextOf(req);
    if (markdown(req, "/login/enrol"))
      throw new UnauthorizedError("Setting up two-factor is a browser page: sign in in the browser.");
    return elsewhere(req, reply, "enrol", next) ?? enrolPage(req, reply, next);
  });

  app.post("/login/enrol/start", async (req, reply) => {
    const next = safeNext(codeBody.safeParse(req.body ?? {}).data?.next);
    const away = elsewhere(req, reply, "enrol", next);
    if (away) return away;
    await startTotpEnrolment(app.prisma, req.pendingSession!.user);
    return reply.redirect(stepPath("enrol", next), 303);
  });

  app.post("/login/enrol", async (req, reply) => {
    const body = codeBody.safeParse(req.body ?? {}).data ?? { code: "", next: "/" };
    const next = safeNext(body.next);
    const away = elsewhere(req, reply, "enrol", next);
    if (away) return away;
    const user = req.pendingSession!.user;
    if (!body.code.trim()) {
      reply.code(400);
      return enrolPage(req, reply, next, "Code: required.");
    }
    const attempt = attemptOf(req, user);
    const count = await countAttempt(app.prisma, opts.throttle, attempt);
    if (count.waitSeconds) {
      reply.code(429).header("Retry-After", String(count.waitSeconds));
      return enrolPage(req, reply, next, tooMany(count.waitSeconds));
    }
    const origin = workspaceOrigin(app.signInSettings.origin, req.tenant!.subdomain);
    const codes = await app.prisma.$transaction((tx) =>
      confirmTotp(tx, user, body.code, { address: req.ip, origin }),
    );
    if (!codes) {
      reply.code(400);
      return enrolPage(
        req,
        reply,
        next,
        "Code: that is not the code your app shows now. Check the app's clock and try again.",
      );
    }
    await loginSucceeded(app.prisma, attempt);
    if (!(await finishSignIn(app, req, reply, user)))
      return reply.redirect(`/login?next=${encodeURIComponent(next)}`, 303);
    // Shown here, once: the answer to this POST is the only place they ever appear.
    return sendLayout(req, reply, {
      title: "Two-factor is on",
      breadcrumb: [],
      content: `<div class="login">${recoveryCodesHtml(codes)}<p><a class="button" href="${escapeHtml(next)}">I saved them: continue</a></p></div>`,
    });
  });
}
