// /confirm: a person on a session confirms it is them (their password, or a two-factor code
// once they have one) before a sensitive change, then goes back to `next`. The change's own
// form asks the same in place (registry/step-up.ts); this page is for what is easier done first
// (a script's person, a page with many marked forms), and for people without a password: an
// SSO-only account re-confirms by signing in through its provider again, the `oidc` flow.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { negotiate } from "../http/format.ts";
import { sendLayout } from "../http/render.ts";
import { safeNext } from "../http/sign-in.ts";
import { AppError, ForbiddenError, UnauthorizedError, ValidationError } from "../lib/errors.ts";
import { confirmationStale, proofsOf, sessionStepUp, stepUpMinutes } from "../services/accounts/step-up.ts";
import { escapeHtml } from "../services/registry/html.ts";
import { RECONFIRM_FIELD, RECONFIRM_LABEL } from "../services/registry/step-up.ts";
import { ctxOf } from "./page-context.ts";

const confirmBody = z.object({
  [RECONFIRM_FIELD]: z.string().max(1000).default(""),
  next: z.string().max(2000).optional(),
  _csrf: z.string().optional(),
});

const TITLE = "Confirm it is you";

function confirmForm(csrf: string, next: string, error = ""): string {
  const errorId = error ? ' aria-invalid="true" aria-describedby="reconfirm-error"' : "";
  return `<div class="login">
<p>Sensitive changes (API tokens, provider keys, webhook secrets, what agents may do, workspace settings) ask for this when you last confirmed more than ${stepUpMinutes()} minutes ago.</p>
<form method="post" action="/confirm" class="action-form">
<input type="hidden" name="_csrf" value="${escapeHtml(csrf)}">
<input type="hidden" name="next" value="${escapeHtml(next)}">
<div class="field${error ? " has-error" : ""}"><label for="reconfirm">${RECONFIRM_LABEL}</label><input type="password" id="reconfirm" name="${RECONFIRM_FIELD}" autocomplete="current-password" required autofocus${errorId}>${error ? `<p class="field-error" id="reconfirm-error">${escapeHtml(error)}</p>` : ""}</div>
<button type="submit">Confirm</button>
</form>
<p class="hint"><a href="${escapeHtml(next)}">Back</a></p>
</div>`;
}

/** An account with no password (SSO only) confirms by signing in again: the hook the `oidc` flow fills. */
const NO_PASSWORD = `<div class="login"><p>Your account has no password to confirm with: sign out and sign in again (through your workspace's single sign-on, if it uses one), then make the change within ${stepUpMinutes()} minutes.</p></div>`;

/** The person on a session, or why not: a token is never asked, nobody signed in logs in first. */
function sessionOf(req: FastifyRequest) {
  if (!req.actor) throw new UnauthorizedError();
  if (req.authVia !== "session" || !req.sessionId)
    throw new ForbiddenError("API tokens are not asked to re-confirm: /confirm is for a signed-in browser.");
  return { actor: req.actor, sessionId: req.sessionId };
}

export default async function confirmRoutes(app: FastifyInstance) {
  app.get("/confirm", async (req, reply) => {
    const next = safeNext((req.query as { next?: string }).next);
    if (negotiate(req, "/confirm").format === "markdown")
      return reply
        .type("text/markdown; charset=utf-8")
        .header("Vary", "Accept")
        .send(
          `# ${TITLE}\n\nA person in a browser confirms here (password or two-factor code) before a sensitive change, when they last confirmed more than ${stepUpMinutes()} minutes ago; \`POST /confirm\` with \`${RECONFIRM_FIELD}\` does the same. API tokens are never asked.\n\n## Actions\n\n_No actions on this page._\n`,
        );
    const { actor } = sessionOf(req);
    const proofs = await proofsOf(app.prisma, req.tenant!.id, actor.id);
    return sendLayout(req, reply, {
      title: TITLE,
      breadcrumb: [],
      content: proofs.password || proofs.totp ? confirmForm(req.csrfToken, next) : NO_PASSWORD,
      ...(!confirmationStale(req.confirmation?.at) && {
        notice: `You confirmed within the last ${stepUpMinutes()} minutes: nothing to do unless you want to start the time again.`,
      }),
    });
  });

  app.post("/confirm", async (req, reply) => {
    sessionOf(req);
    const parsed = confirmBody.safeParse(req.body ?? {});
    const body = parsed.success ? parsed.data : { [RECONFIRM_FIELD]: "", next: "/" };
    const next = safeNext(body.next);
    const proof = body[RECONFIRM_FIELD];
    try {
      if (!proof)
        throw new ValidationError([{ field: RECONFIRM_FIELD, label: RECONFIRM_LABEL, message: "required" }]);
      await sessionStepUp.confirm(ctxOf(req), proof);
    } catch (err) {
      if (!(err instanceof AppError) || negotiate(req, "/confirm").format === "markdown") throw err;
      return refuse(req, reply, next, err);
    }
    if (negotiate(req, "/confirm").format === "markdown")
      return reply
        .type("text/markdown; charset=utf-8")
        .header("Vary", "Accept")
        .send(`# Confirmed\n\nSensitive changes are not asked again for ${stepUpMinutes()} minutes.\n`);
    return reply.redirect(next, 303);
  });
}

/** The form again with what went wrong at the field (a wrong proof, a wait). */
function refuse(req: FastifyRequest, reply: FastifyReply, next: string, err: AppError) {
  const message = err instanceof ValidationError ? (err.issues[0]?.message ?? err.message) : err.message;
  reply.code(err.status);
  if ("retryAfterSeconds" in err) reply.header("Retry-After", String(err.retryAfterSeconds));
  return sendLayout(req, reply, {
    title: TITLE,
    breadcrumb: [],
    content: confirmForm(req.csrfToken, next, message),
  });
}
