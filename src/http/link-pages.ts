// What the pages a mailed link opens before there is a session have in common (a set-up link,
// an invitation, the shared invite link): the name-and-password form, a refused link's answer in
// the request's format, and signing the person in once the link did its work.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { type AppError, ValidationError } from "../lib/errors.ts";
import { escapeHtml } from "../services/registry/html.ts";
import { createSession, type SessionLimits } from "../services/sessions.ts";
import { negotiate } from "./format.ts";
import { sendLayout } from "./render.ts";

/** The body of a name-and-password form (set-up, invitation). */
export const nameAndPasswordBody = z.object({
  name: z.string().max(200).default(""),
  password: z.string().max(1000).default(""),
  _csrf: z.string().optional(),
});

/** The form's fields' messages from a 400, by field. */
export const fieldErrors = (err: AppError) =>
  err instanceof ValidationError
    ? Object.fromEntries(err.issues.map((issue) => [issue.field, issue.message]))
    : {};

export interface NameFormState {
  name: string;
  errors: Record<string, string>;
  alert?: string;
}

const fieldError = (state: NameFormState, field: string) =>
  state.errors[field] ? `<p class="field-error" role="alert">${escapeHtml(state.errors[field])}</p>` : "";

/**
 * The form that asks a name and a first password; `intro` is trusted markup shown above it.
 * It posts back to the address it came from, with no `action`: the link's token is in that
 * address and must not be written again into the page (the leak tests hold it).
 */
export function nameAndPasswordForm(
  csrf: string,
  state: NameFormState,
  o: { button: string; intro?: string } = { button: "Set up and sign in" },
): string {
  return `<div class="login">
${state.alert ? `<div class="form-errors" role="alert">${escapeHtml(state.alert)}</div>` : ""}
${o.intro ?? ""}
<form method="post" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<div class="field"><label for="name">Your name</label><input type="text" id="name" name="name" value="${escapeHtml(state.name)}" autocomplete="name" required>${fieldError(state, "name")}</div>
<div class="field"><label for="password">Password</label><input type="password" id="password" name="password" autocomplete="new-password" required minlength="10">${fieldError(state, "password")}
<p class="hint">At least 10 characters; a few unrelated words together work well.</p></div>
<button type="submit">${escapeHtml(o.button)}</button>
</form>
</div>`;
}

export const wantsMarkdown = (req: FastifyRequest, path: string) =>
  negotiate(req, path).format === "markdown";

/** A markdown answer, as every page's: `Vary: Accept`, since the same address serves HTML. */
export function sendMarkdown(reply: FastifyReply, markdown: string) {
  return reply.type("text/markdown; charset=utf-8").header("Vary", "Accept").send(markdown);
}

/** A refused link's page, in the request's format: which refusal and what to do. */
export function refusedLink(req: FastifyRequest, reply: FastifyReply, path: string, reason: string) {
  reply.code(410);
  if (wantsMarkdown(req, path)) return sendMarkdown(reply, `# This link cannot be used\n\n${reason}\n`);
  return sendLayout(req, reply, {
    title: "This link cannot be used",
    breadcrumb: [],
    content: `<p role="alert">${escapeHtml(reason)}</p>`,
  });
}

/** Signs the person in with a new session cookie (the pre-session CSRF cookie is done with). */
export async function signInAfterLink(
  app: FastifyInstance,
  req: FastifyRequest,
  reply: FastifyReply,
  userId: string,
  limits: SessionLimits,
) {
  const { token, expiresAt } = await createSession(app.prisma, req.tenant!.id, userId, limits, {
    userAgent: req.headers["user-agent"] ?? "",
    ipAddress: req.ip,
  });
  app.cookieJar.set(reply, "session", token, { signed: true, expires: expiresAt });
  app.cookieJar.clear(reply, "csrf");
}
