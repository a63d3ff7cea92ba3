import { z } from "zod";
import { canonical } from "../../lib/canonical-json.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { pendingPath } from "../agents/core/notify.ts";
import { managedBySql } from "../agents/core/ownership.ts";
import type { Rule } from "../agents/core/settings.ts";
import {
  allowRule,
  checkedBreadth,
  judgedPending,
  NOT_FOR_RULES,
  ruleBreadth,
} from "../agents/policy/always-allow.ts";
import { AGENT_ARCHIVED, expirePending, resumeWaitingRun } from "../agents/policy/approvals.ts";
import { emit } from "../events.ts";
import { studioHandleOf } from "../page-titles.ts";
import { when } from "../pages/format.ts";
import { describePending } from "../pages/pending-format.ts";
import { useLink } from "../reach/review-links.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { parseParams } from "../registry/params.ts";
import { type ActionCtx, type ActionDef, type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { idSchema, text } from "../validation.ts";
import { parsePatterns, saveConfig } from "./agent-settings.ts";

/**
 * People review; on a page that knows what waits there for this person (a thread, a run),
 * only when something does, so a page does not offer a review with nothing to review.
 */
const reviewer = (ctx: Ctx, scope: Scope) =>
  ctx.actor.kind !== "person"
    ? "only people review agents' actions"
    : scope.reviewable && !scope.reviewable.length
      ? "nothing here waits for your review"
      : null;

/**
 * The pending action, locked, if it belongs to an agent the actor manages (otherwise the
 * same 404 as a missing one), and still open for review at `now`. Two admins of a studio's
 * agent reviewing at once queue on this lock: the second finds it reviewed. The statement that locks it
 * also checks its expiry: one past it is refused whether or not the sweep got to it, and
 * marked expired here as the sweep would (the refusal commits that), so its run resumes.
 */
async function lockOwned(ctx: ActionCtx, id: string, now: Date) {
  const rows = await ctx.tx.$queryRaw<{ id: string; overdue: boolean }[]>`
    SELECT p.id, (p.status = 'pending' AND p.expires_at <= ${now}) AS overdue
    FROM agent_pending_actions p JOIN users a ON a.id = p.agent_id
    WHERE p.id = ${id} AND p.tenant_id = ${ctx.tenant.id} AND ${managedBySql("a", ctx.actor.id)}
    FOR UPDATE OF p`;
  if (!rows.length) throw new NotFoundError(`No pending action #${id}`);
  const pending = await ctx.tx.agentPendingAction.findUniqueOrThrow({
    where: { id },
    include: { agent: true },
  });
  const expired = `#${id} expired at ${when(pending.expiresAt)}: it will not run`;
  if (rows[0]!.overdue && (await expirePending(ctx.tx, pending)))
    throw new ConflictError(expired, { commits: true });
  if (pending.status === "expired")
    throw new ConflictError(pending.error === AGENT_ARCHIVED ? `#${id} expired: ${AGENT_ARCHIVED}` : expired);
  if (pending.status !== "pending") throw new ConflictError(`#${id} is already ${pending.status}`);
  return pending;
}

/** A review by one manager settles the request for all: their notifications of it are done. */
async function settleRequest(ctx: ActionCtx, pending: { id: string; agent: { handle: string } }) {
  await ctx.tx.notification.updateMany({
    where: {
      tenantId: ctx.tenant.id,
      kind: "agent",
      path: pendingPath(pending.agent.handle, pending.id),
      dismissedAt: null,
    },
    data: { dismissedAt: new Date() },
  });
}

/** The params as the action reads them, or null when they no longer parse (the action changed since). */
function parsed(action: ActionDef, params: Record<string, unknown>, form: boolean) {
  try {
    return parseParams(action.params, params, { form });
  } catch {
    return null;
  }
}

/** What "Approve and always allow this" adds: the rule, first of the agent's rules. */
async function alwaysAllow(
  ctx: ActionCtx,
  pending: Awaited<ReturnType<typeof lockOwned>>,
  patterns: string | undefined,
  allowAny: boolean,
): Promise<{ name: string; breadth: string }> {
  if (NOT_FOR_RULES.includes(pending.matchedRule))
    throw new ConflictError(
      `#${pending.id} was held for ${pending.matchedRule === "disclosure" ? "what it would disclose" : "whose connection it would use"}: no rule can allow that, so approve it alone`,
    );
  // A tool call's rule names the tool (actions/tool-calls.ts).
  const action = judgedPending(pending.actionName, pending.params as Record<string, unknown>).action;
  const params = parsePatterns(ctx, action, patterns, "allow_when");
  checkedBreadth(params, allowAny, action);
  const studio = studioHandleOf(pending.pagePath);
  const rule = allowRule({ id: pending.id, actionName: action }, params, studio, ctx.actor.handle);
  await saveConfig(ctx, pending.agent, (config) => {
    const rules = ((config.rules as Rule[]) ?? []).filter((r) => r.name !== rule.name);
    config.rules = [rule, ...rules];
  });
  return { name: rule.name, breadth: ruleBreadth(action, params, studio) };
}

/** Approves a pending action the actor reviews, as asked or with edits; settled for every reviewer. */
async function approve(
  ctx: ActionCtx,
  id: string,
  options: {
    params?: Record<string, unknown>;
    alwaysAllow?: boolean;
    allowWhen?: string;
    allowAny?: boolean;
  } = {},
) {
  const now = new Date();
  const pending = await lockOwned(ctx, id, now);
  const edited = options.params ? editedParams(ctx, pending, options.params) : undefined;
  const rule = options.alwaysAllow
    ? await alwaysAllow(ctx, pending, options.allowWhen, options.allowAny === true)
    : null;
  await ctx.tx.agentPendingAction.update({
    where: { id: pending.id },
    data: {
      status: "approved",
      reviewedById: ctx.actor.id,
      // The time the expiry was checked against: the executor trusts an approval given before it.
      reviewedAt: now,
      ...(edited && { editedParams: edited as object }),
    },
  });
  await settleRequest(ctx, pending);
  // Execution happens in the approved-actions worker, from this outbox event.
  await emit(ctx, { type: "approval.approved", subjectType: "pending_action", subjectId: pending.id });
  return {
    status: 200 as const,
    location: pendingPath(pending.agent.handle, pending.id),
    // What the person did, not what happens next: the page below shows that, live.
    notice: `You approved #${pending.id}${edited ? " with your edits" : ""}${rule ? `. The rule “${rule.name}” now lets ${rule.breadth} through without review` : ""}.`,
  };
}

/** The reviewer's edits, parsed as the action reads them; undefined when they change nothing. */
function editedParams(
  ctx: ActionCtx,
  pending: { actionName: string; params: unknown },
  given: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const action = ctx.actionDefs.get(pending.actionName);
  if (!action) throw new ConflictError(`The action \`${pending.actionName}\` no longer exists`);
  let edited: Record<string, unknown>;
  try {
    // A form sends each param as text, as it would to the action itself.
    edited = parseParams(action.params, given, { form: ctx.form });
  } catch (err) {
    if (err instanceof ValidationError)
      throw new ValidationError(
        err.issues.map((i) => ({ field: `params.${i.field}`, message: i.message, label: i.label })),
      );
    throw err;
  }
  // The review form starts filled with the params as asked: sent back unchanged, they are not an edit.
  const asked = parsed(action, pending.params as Record<string, unknown>, false);
  return asked && canonical(edited) === canonical(asked) ? undefined : edited;
}

export const approveAction = defineAction({
  name: "approve_action",
  description:
    "Approve a queued action (optionally with edited params, or always allowing it from now on): it executes once, as the agent",
  params: z.object({
    id: idSchema.meta({ description: "the pending action's id", pickedBeside: true }),
    params: z
      .record(z.string(), z.unknown())
      .meta({
        label: "Params it will run with",
        description:
          "the action's params, changed where you want them changed; leave it out to approve as asked",
      })
      .optional(),
    always_allow: z.boolean().optional().meta({
      label: "Always allow this",
      description: "also add a rule that lets the same action through without review from now on",
    }),
    allow_when: z.string().max(2000).optional().meta({
      label: "…when its params match",
      multiline: true,
      description:
        "one per line, param=regex, as proposed from this action (exact values); widen or remove a line to allow more, keeping at least one. The rule also keeps to this studio.",
    }),
    allow_any: z.boolean().optional().meta({
      label: "…or any such action here, whatever its params",
      description:
        "instead of patterns: the rule lets every such action in this studio through without review",
    }),
  }),
  writes: true,
  audience: toAgentManagers("review"),
  available: reviewer,
  staysOnPage: true,
  execute: (ctx, params) =>
    approve(ctx, params.id, {
      params: params.params,
      alwaysAllow: params.always_allow,
      allowWhen: params.allow_when,
      allowAny: params.allow_any,
    }),
});

/** Rejects a pending action the actor reviews; a run waiting for it reads the reason. */
async function reject(ctx: ActionCtx, id: string, reason: string) {
  const now = new Date();
  const pending = await lockOwned(ctx, id, now);
  const updated = await ctx.tx.agentPendingAction.update({
    where: { id: pending.id },
    data: { status: "rejected", reviewedById: ctx.actor.id, reviewedAt: now, reviewNote: reason },
  });
  await settleRequest(ctx, pending);
  await emit(ctx, { type: "approval.rejected", subjectType: "pending_action", subjectId: pending.id });
  await resumeWaitingRun(ctx.tx, updated, { status: "rejected", message: reason }, ctx.actor.id);
  return {
    status: 200 as const,
    location: pendingPath(pending.agent.handle, pending.id),
    notice: `Rejected #${pending.id}`,
  };
}

const reason = text(2000).meta({ label: "Why (the agent reads this)", multiline: true });

export const rejectAction = defineAction({
  name: "reject_action",
  destructive:
    "The agent's action never runs, and the agent reads your reason. A rejection cannot be taken back.",
  description: "Reject a queued action, saying why: it never executes",
  params: z.object({
    id: idSchema.meta({ description: "the pending action's id", pickedBeside: true }),
    reason,
  }),
  writes: true,
  audience: toAgentManagers("review"),
  available: reviewer,
  staysOnPage: true,
  confirmText: (ctx, params) => describePending(ctx, String(params.id ?? "")),
  execute: (ctx, params) => reject(ctx, params.id, params.reason),
});

// A mail's review link: the same review, after the link is taken for its one use
// (services/reach/review-links.ts). Only the person it was sent to may use it.
const token = z
  .string()
  .trim()
  .max(128)
  .meta({ label: "Review link", description: "the link's token, from its address", pickedBeside: true });
const linkUser = (ctx: Ctx) => (ctx.actor.kind === "person" ? null : "only people review agents' actions");

export const approveFromLink = defineAction({
  name: "approve_from_link",
  description: "Approve the action a review link from a mail names: it executes once, as the agent",
  params: z.object({ token }),
  writes: true,
  audience: toAgentManagers("review"),
  available: linkUser,
  async execute(ctx, params) {
    const link = await useLink(ctx.tx, ctx.tenant.id, params.token, ctx.actor.id, "approve");
    return approve(ctx, link.pendingId);
  },
});

export const rejectFromLink = defineAction({
  name: "reject_from_link",
  destructive: "The agent's action never runs, and the agent reads your reason.",
  description: "Reject the action a review link from a mail names, saying why",
  params: z.object({ token, reason }),
  writes: true,
  audience: toAgentManagers("review"),
  available: linkUser,
  async execute(ctx, params) {
    const link = await useLink(ctx.tx, ctx.tenant.id, params.token, ctx.actor.id, "reject");
    return reject(ctx, link.pendingId, params.reason);
  },
});
