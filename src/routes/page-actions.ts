// POST <page>/actions/<name> (or a browser's form posting to its page with `_action`): the
// action run in one transaction, then the page it leads to, or the form again with what was
// wrong. Validation lives in each action's zod schema inside the registry.
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { BODY_LIMIT, tooLarge } from "../http/body-parsers.ts";
import { setFlash } from "../http/flash.ts";
import { type Format, isFormBody, pageFormat } from "../http/format.ts";
import { parseUrl, splitAction } from "../http/page-target.ts";
import { AppError, type Issue, TooManyRequestsError, ValidationError } from "../lib/errors.ts";
import { registry } from "../services/catalog/catalog.ts";
import { confirmForm, count } from "../services/registry/html.ts";
import { fields, humanize, parseParams } from "../services/registry/params.ts";
import { RECONFIRM_FIELD } from "../services/registry/step-up.ts";
import type { ActionOutcome, Ctx } from "../services/registry/types.ts";
import { stashSecret } from "../services/reveals.ts";
import { ctxOf, showPage } from "./page-context.ts";

const bodySchema = z.record(z.string(), z.unknown());

/** What a POST asks for: the action on which page, with which params, and how it was sent. */
interface Posted {
  format: Format;
  /** From a browser's form (strings, unticked boxes left out). */
  form: boolean;
  /** The action a browser's form named in its body (`_action`); null when the URL names it. */
  named: string | null;
  target: { page: string; action: string };
  body: Record<string, unknown>;
  confirm: unknown;
  /** The person's password or code re-confirming it is them (registry/step-up.ts); never a param, never shown again. */
  reconfirm: string | undefined;
  ctx: Ctx;
}

/**
 * Runs an action: read what was posted, run it in one transaction, then answer with the
 * page it leads to (a browser's form: a redirect), or the form again with what was wrong.
 */
export async function postAction(req: FastifyRequest, reply: FastifyReply) {
  const posted = readPost(req);
  if (req.formOverLimit !== null) return reshowOverLimit(req, reply, posted, req.formOverLimit);
  try {
    if (asksFirst(posted)) return await askToConfirm(req, reply, posted.target, posted.body);
    const { outcome, revealId } = await runPosted(req, posted);
    // Not awaited: a failure showing the result is not a mistake in the form.
    return answer(req, reply, posted, outcome, revealId);
  } catch (err) {
    const failed = reconfirmFailed(posted, err);
    if (failed) return askToConfirm(req, reply, posted.target, posted.body, failed);
    return reshowMistake(req, reply, posted, err);
  }
}

/**
 * A destructive action's confirmation step whose re-confirmation failed (a wrong password, too
 * many): the step again, saying why, since that is where the field is. Anything else: null.
 */
function reconfirmFailed(posted: Posted, err: unknown): { status: number; failed: string } | null {
  if (!(posted.named && posted.format === "html" && posted.confirm === "yes")) return null;
  if (err instanceof TooManyRequestsError) return { status: 429, failed: err.message };
  const issue = err instanceof ValidationError && err.issues.find((i) => i.field === RECONFIRM_FIELD);
  return issue ? { status: 400, failed: issue.message } : null;
}

/** The action, page and params of a POST; throws 405, 401 or 400 in that order. */
function readPost(req: FastifyRequest): Posted {
  const { format, path } = pageFormat(req, parseUrl(req.url).path);
  const parsed = bodySchema.safeParse(req.body ?? {});
  const form = isFormBody(req);
  // A browser's form posts to the page it is on and names its action: a mistake then shows that
  // page at its own address. API clients (and agents) post to `<page>/actions/<name>`.
  const named =
    form && parsed.success && typeof parsed.data._action === "string" ? parsed.data._action : null;
  const target = splitAction(path) ?? (named ? { page: path, action: named } : null);
  // Must come before any refusal: the audit line names what was asked, even when refused.
  req.audit = target ?? { page: path };
  if (!target) throw new AppError(405, `POST goes to an action: ${path === "/" ? "" : path}/actions/<name>`);
  // Must come before the body's check: a caller who is not signed in hears 401, not 400.
  const ctx = ctxOf(req);
  if (!parsed.success)
    throw new ValidationError([{ field: "", message: "the body must be a JSON object or a form" }]);
  // The proof a session re-confirms with comes out first, whoever sent it: it is no param.
  const { _csrf, _submit, [RECONFIRM_FIELD]: proof, ...sent } = parsed.data;
  // `_action` and `_confirm` belong to the browser's form only; a JSON client's body is all params.
  const { _action, _confirm, ...formBody } = sent;
  const reconfirm = typeof proof === "string" ? proof : undefined;
  return { format, form, named, target, body: form ? formBody : sent, confirm: _confirm, reconfirm, ctx };
}

/** Only a browser's form asks first: a client that names the action in the URL means it. */
function asksFirst({ named, format, confirm, target }: Posted): boolean {
  return Boolean(
    named && format === "html" && confirm !== "yes" && registry.actions.get(target.action)?.destructive,
  );
}

/**
 * Runs the action. A browser's new secret is stashed in the transaction that made it: a token
 * is never created without the one page that can show it.
 */
async function runPosted(req: FastifyRequest, { format, form, target, body, reconfirm, ctx }: Posted) {
  const sessionId = format === "html" && form ? req.sessionId : undefined;
  let revealId: string | undefined;
  const outcome = await registry.run(ctx, target.page, target.action, body, {
    form,
    reconfirm,
    inTx: async (tx, done) => {
      if (!done.secret || !sessionId) return;
      revealId = await stashSecret(
        tx,
        { tenantId: ctx.tenant.id, sessionId },
        {
          label: done.secretLabel ?? "Your new token",
          location: done.location,
          secret: done.secret,
          help: done.secretHelp,
        },
      );
    },
  });
  return { outcome, revealId };
}

/**
 * Browsers get Post/Redirect/Get so a reload never re-submits. A one-time secret waits,
 * sealed, for the page that shows it once (routes/secrets.ts): never in the cookie or URL.
 */
function answer(
  req: FastifyRequest,
  reply: FastifyReply,
  { format, form, named, target }: Posted,
  outcome: ActionOutcome,
  revealId: string | undefined,
) {
  if (format === "html" && form && (!outcome.secret || revealId)) {
    if (outcome.notice) setFlash(req, reply, outcome);
    const back = named && registry.actions.get(target.action)?.staysOnPage ? target.page : outcome.location;
    return reply.redirect(revealId ? `/secrets/${revealId}` : back, 303);
  }
  return showPage(req, reply, format, outcome.location, {
    status: outcome.status,
    notice: outcome.notice || undefined,
    warning: outcome.warning,
    secret: outcome.secret,
    secretLabel: outcome.secretLabel,
    secretHelp: outcome.secretHelp,
    location: outcome.status === 201 ? outcome.location : undefined,
  });
}

/** A person who made a mistake in a form sees the same page again, with their input and what was wrong. */
async function reshowMistake(req: FastifyRequest, reply: FastifyReply, posted: Posted, err: unknown) {
  const { format, form, target, body } = posted;
  if (!(format === "html" && form && err instanceof AppError && err.status < 500 && err.status !== 401))
    throw err;
  const issues = err instanceof ValidationError ? err.issues : [{ field: "", message: err.message }];
  if (err instanceof TooManyRequestsError) reply.header("Retry-After", String(err.retryAfterSeconds));
  try {
    return await showPage(req, reply, format, target.page, {
      status: err.status,
      state: { action: target.action, values: body, issues },
      // Not a field problem (403, 404, 409): say it at the top, where it cannot be missed.
      alert: err instanceof ValidationError ? undefined : err.message,
    });
  } catch {
    throw err;
  }
}

/**
 * A destructive action sent from a browser form without `_confirm=yes`: its params checked
 * (a mistake shows at the field as usual), then the page again with the question and a real
 * button that sends the same params confirmed. Nothing ran yet.
 */
async function askToConfirm(
  req: FastifyRequest,
  reply: FastifyReply,
  target: { page: string; action: string },
  body: Record<string, unknown>,
  reconfirmed?: { status: number; failed: string },
) {
  const ctx = ctxOf(req);
  const { action, resolved } = await registry.describe(ctx, target.page, target.action);
  // What the confirmation asks for itself (a rejection's reason) may still be missing; anything else is checked now.
  const asked = new Set(
    fields(action.params)
      .filter((field) => !field.pickedBeside)
      .map((field) => field.name),
  );
  try {
    parseParams(action.params, body, { form: true });
  } catch (err) {
    if (
      !(err instanceof ValidationError) ||
      err.issues.some((issue) => !asked.has(issue.field.split(".")[0] ?? ""))
    )
      throw err;
  }
  const confirm = confirmForm(action, {
    path: target.page,
    csrf: req.csrfToken,
    values: body,
    label: humanize(action.name),
    what: await action.confirmText?.(ctx, body, resolved.scope),
    ...(registry.asksConfirmation(ctx, action) && { reconfirm: { failed: reconfirmed?.failed } }),
  });
  return showPage(req, reply, "html", target.page, { confirm, status: reconfirmed?.status ?? 200 });
}

/**
 * A browser form past the body limit (a 340 KB paste into a note): never run, but shown again
 * on its page with what fits, each field cut at its own limit and the limits named, so the
 * person loses only what could never have been saved. Any other client gets the 413.
 */
async function reshowOverLimit(req: FastifyRequest, reply: FastifyReply, posted: Posted, bytes: number) {
  const { target, body } = posted;
  if (!(posted.named && posted.format === "html")) throw new AppError(413, tooLarge(bytes));
  const { action } = await registry.describe(ctxOf(req), target.page, target.action);
  const values: Record<string, unknown> = {};
  const issues: Issue[] = [];
  for (const field of fields(action.params)) {
    const sent = body[field.name];
    if (typeof sent !== "string") continue;
    if (field.maxLength && sent.length > field.maxLength) {
      values[field.name] = sent.slice(0, field.maxLength);
      issues.push({
        field: field.name,
        message: `${count(sent.length)} characters sent; it holds at most ${count(field.maxLength)}. The first ${count(field.maxLength)} are below; nothing was saved.`,
      });
    } else values[field.name] = sent.slice(0, BODY_LIMIT);
  }
  return showPage(req, reply, "html", target.page, {
    status: 413,
    state: { action: target.action, values, issues },
    alert: `${tooLarge(bytes)} What fits is below, each field cut at its own limit.`,
  });
}
