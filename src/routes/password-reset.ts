// "Forgot password" for people who are signed out: /forgot-password asks for an address and
// mails a link; /reset-password/<token> takes a new password, ends every session and signs
// in. Forms in HTML for browsers; a markdown client gets the same answers in markdown.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { negotiate } from "../http/format.ts";
import { sendLayout } from "../http/render.ts";
import { stepPath } from "../http/sign-in.ts";
import { AppError, TooManyRequestsError, ValidationError } from "../lib/errors.ts";
import { type OriginConfig, workspaceOrigin } from "../lib/origin.ts";
import { textProblem } from "../lib/text.ts";
import {
  checkResetLink,
  RESET_ANSWER,
  requestReset,
  takeResetLink,
} from "../services/accounts/password-reset.ts";
import { assertStrong, storePassword } from "../services/accounts/passwords.ts";
import { stageFor } from "../services/accounts/sign-in.ts";
import { passwordRefusal } from "../services/accounts/sso-settings.ts";
import { countAttempt, loginSucceeded, type ThrottleSettings } from "../services/login-throttle.ts";
import { hashPassword } from "../services/passwords.ts";
import { escapeHtml } from "../services/registry/html.ts";
import { createSession, type SessionLimits } from "../services/sessions.ts";

const forgotBody = z.object({
  email: z
    .string()
    .trim()
    .toLowerCase()
    .max(200)
    .refine((value) => !textProblem(value)),
  _csrf: z.string().optional(),
});
const resetBody = z.object({ password: z.string().max(1000), _csrf: z.string().optional() });
const tokenParams = z.object({ token: z.string().max(200) });

const errorBox = (error: string) =>
  error ? `<div class="form-errors" role="alert">${escapeHtml(error)}</div>` : "";

function forgotForm(csrf: string, email = "", error = ""): string {
  return `<div class="login">
${errorBox(error)}
<p>Type the address you sign in with: we mail you a link to choose a new password.</p>
<form method="post" action="/forgot-password" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<div class="field"><label for="email">Email</label><input type="email" id="email" name="email" value="${escapeHtml(email)}" autocomplete="username" required autofocus></div>
<button type="submit">Mail me a link</button>
</form>
<p class="hint"><a href="/login">Back to log in</a></p>
</div>`;
}

function resetForm(csrf: string, error = ""): string {
  return `<div class="login">
${errorBox(error)}
<form method="post" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<div class="field"><label for="password">New password</label><input type="password" id="password" name="password" autocomplete="new-password" required autofocus>
<p class="hint">At least 10 characters, hard to guess: a few words together work well. Every other session of yours ends.</p></div>
<button type="submit">Set password and log in</button>
</form>
</div>`;
}

const message = (text: string, link?: { href: string; label: string }) =>
  `<div class="login"><p>${escapeHtml(text)}</p>${link ? `<p><a href="${link.href}">${escapeHtml(link.label)}</a></p>` : ""}</div>`;

export default async function passwordResetRoutes(
  app: FastifyInstance,
  opts: { sessionLimits: SessionLimits; throttle: ThrottleSettings; origin: OriginConfig },
) {
  const markdown = (req: FastifyRequest) => negotiate(req, req.url.split("?")[0]!).format === "markdown";
  const page = (req: FastifyRequest, reply: FastifyReply, title: string, content: string) =>
    sendLayout(req, reply, { title, breadcrumb: [], content });

  // A workspace that signs in with its identity provider only has no passwords to reset:
  // every step of a reset says so, a link mailed before SSO only was turned on included.
  app.addHook("preHandler", async (req, reply) => {
    const path = req.url.split("?")[0]!;
    if (!/^\/(forgot-password|reset-password\/)/.test(path) || !req.tenant) return;
    const reason = await passwordRefusal(app.prisma, req.tenant.id);
    if (!reason) return;
    if (markdown(req)) throw new AppError(403, reason);
    reply.code(403);
    return page(
      req,
      reply,
      "Passwords are turned off",
      message(reason, { href: "/login", label: "Back to log in" }),
    );
  });

  app.get("/forgot-password", async (req, reply) => {
    if (markdown(req))
      return reply
        .type("text/markdown; charset=utf-8")
        .header("Vary", "Accept")
        .send(
          "# Forgot your password?\n\nPOST `email` here: a link to choose a new one is mailed to that address when it belongs to an account of this workspace. The answer is the same either way.\n",
        );
    return page(req, reply, "Forgot your password?", forgotForm(req.csrfToken));
  });

  app.post("/forgot-password", async (req, reply) => {
    const parsed = forgotBody.safeParse(req.body ?? {});
    if (!parsed.success || !parsed.data.email.includes("@")) {
      if (markdown(req)) throw new ValidationError([{ field: "Email", message: "an email address, please" }]);
      reply.code(400);
      return page(
        req,
        reply,
        "Forgot your password?",
        forgotForm(req.csrfToken, "", "Type an email address."),
      );
    }
    const { email } = parsed.data;
    // Counted as a login attempt is, for the address asked about and the client: mailing
    // someone a hundred links, or probing for accounts, is held back as guessing is.
    const count = await countAttempt(app.prisma, opts.throttle, {
      tenantId: req.tenant!.id,
      email,
      address: req.ip,
    });
    if (count.waitSeconds) {
      const text = `Too many requests: try again in ${Math.ceil(count.waitSeconds / 60)} minutes.`;
      if (markdown(req)) throw new TooManyRequestsError(text, count.waitSeconds);
      reply.code(429).header("Retry-After", String(count.waitSeconds));
      return page(req, reply, "Forgot your password?", forgotForm(req.csrfToken, email, text));
    }
    await requestReset(app.prisma, req.tenant!, email, workspaceOrigin(opts.origin, req.tenant!.subdomain));
    if (markdown(req))
      return reply
        .type("text/markdown; charset=utf-8")
        .header("Vary", "Accept")
        .send(`# Check your mail\n\n${RESET_ANSWER}\n`);
    return page(
      req,
      reply,
      "Check your mail",
      message(RESET_ANSWER, { href: "/login", label: "Back to log in" }),
    );
  });

  app.get("/reset-password/:token", async (req, reply) => {
    const { token } = tokenParams.parse(req.params);
    const checked = await checkResetLink(app.prisma, req.tenant!.id, token);
    if (!checked.ok) return refused(req, reply, checked.reason);
    if (markdown(req))
      return reply
        .type("text/markdown; charset=utf-8")
        .header("Vary", "Accept")
        .send(
          "# Choose a new password\n\nPOST `password` here: it replaces the old one and ends every session.\n",
        );
    return page(req, reply, "Choose a new password", resetForm(req.csrfToken));
  });

  app.post("/reset-password/:token", async (req, reply) => {
    const { token } = tokenParams.parse(req.params);
    const password = resetBody.safeParse(req.body ?? {}).data?.password ?? "";
    const checked = await checkResetLink(app.prisma, req.tenant!.id, token);
    if (!checked.ok) return refused(req, reply, checked.reason);
    const person = await app.prisma.user.findUnique({ where: { id: checked.link.userId ?? "" } });
    if (!person) return refused(req, reply, "This account no longer exists.");
    try {
      assertStrong(person, password, "New password", req.tenant!.name);
    } catch (err) {
      if (markdown(req) || !(err instanceof ValidationError)) throw err;
      reply.code(400);
      return page(req, reply, "Choose a new password", resetForm(req.csrfToken, err.issues[0]!.message));
    }
    // Slow (scrypt): before the transaction, which then only writes.
    const passwordHash = await hashPassword(password);
    const outcome = await app.prisma.$transaction(async (tx) => {
      const taken = await takeResetLink(tx, req.tenant!.id, token);
      if ("refusal" in taken) return taken;
      // A reset proves the mailbox, not the second factor: the session still needs its step.
      const stage = await stageFor(tx, taken.user, "password");
      const session = {
        stage,
        ...(await createSession(
          tx,
          req.tenant!.id,
          taken.user.id,
          opts.sessionLimits,
          { userAgent: req.headers["user-agent"] ?? "", ipAddress: req.ip },
          { stage },
        )),
      };
      await storePassword(tx, taken.user, passwordHash, {
        kind: "password_reset",
        keep: session.id,
        address: req.ip,
        origin: workspaceOrigin(opts.origin, req.tenant!.subdomain),
      });
      return { session };
    });
    if ("refusal" in outcome) return refused(req, reply, outcome.refusal);
    // The requests that mailed the link counted as attempts: the account starts over, as after a login.
    if (person.email)
      await loginSucceeded(app.prisma, { tenantId: req.tenant!.id, email: person.email, address: req.ip });
    app.cookieJar.set(reply, "session", outcome.session.token, {
      signed: true,
      expires: outcome.session.expiresAt,
    });
    app.cookieJar.clear(reply, "csrf");
    if (markdown(req))
      return reply
        .type("text/markdown; charset=utf-8")
        .header("Vary", "Accept")
        .send("# Password set\n\nYour new password works now; every other session ended.\n");
    return reply.redirect(outcome.session.stage === "full" ? "/" : stepPath(outcome.session.stage, "/"), 303);
  });

  /** A link that cannot be used: which way it failed, and what to do, in the request's format. */
  function refused(req: FastifyRequest, reply: FastifyReply, reason: string) {
    if (markdown(req)) throw new AppError(410, reason);
    reply.code(410);
    return page(
      req,
      reply,
      "This link does not work",
      message(reason, { href: "/forgot-password", label: "Ask for a new link" }),
    );
  }
}
