import { z } from "zod";
import { ConflictError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { pendingPath } from "../agents/core/notify.ts";
import { managedBySql } from "../agents/core/ownership.ts";
import { AGENT_ARCHIVED, expirePending, resumeWaitingRun } from "../agents/policy/approvals.ts";
import { emit } from "../events.ts";
import { when } from "../pages/format.ts";
import { describePending } from "../pages/pending-format.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { parseParams } from "../registry/params.ts";
import { type ActionCtx, type ActionDef, type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { idSchema, text } from "../validation.ts";

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
  const p = await ctx.tx.agentPendingAction.findUniqueOrThrow({ where: { id }, include: { agent: true } });
  const expired = `#${id} expired at ${when(p.expiresAt)}: it will not run`;
  if (rows[0]!.overdue && (await expirePending(ctx.tx, p)))
    throw new ConflictError(expired, { commits: true });
  if (p.status === "expired")
    throw new ConflictError(p.error === AGENT_ARCHIVED ? `#${id} expired: ${AGENT_ARCHIVED}` : expired);
  if (p.status !== "pending") throw new ConflictError(`#${id} is already ${p.status}`);
  return p;
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

/** JSON with its object keys sorted, so two equal param sets compare equal whatever their key order. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as object).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );
}

/** The params as the action reads them, or null when they no longer parse (the action changed since). */
function parsed(action: ActionDef, params: Record<string, unknown>, form: boolean) {
  try {
    return parseParams(action.params, params, { form });
  } catch {
    return null;
  }
}

export const approveAction = defineAction({
  name: "approve_action",
  description: "Approve a queued action (optionally with edited params): it executes once, as the agent",
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
  }),
  writes: true,
  audience: toAgentManagers("review"),
  available: reviewer,
  staysOnPage: true,
  async execute(ctx, p) {
    const now = new Date();
    const pending = await lockOwned(ctx, p.id, now);
    let edited: Record<string, unknown> | undefined;
    if (p.params) {
      const action = ctx.actionDefs.get(pending.actionName);
      if (!action) throw new ConflictError(`The action \`${pending.actionName}\` no longer exists`);
      try {
        // A form sends each param as text, as it would to the action itself.
        edited = parseParams(action.params, p.params, { form: ctx.form });
      } catch (err) {
        if (err instanceof ValidationError)
          throw new ValidationError(
            err.issues.map((i) => ({ field: `params.${i.field}`, message: i.message, label: i.label })),
          );
        throw err;
      }
      // The review form starts filled with the params as asked: sent back unchanged, they are not an edit.
      const asked = parsed(action, pending.params as Record<string, unknown>, false);
      if (asked && canonical(edited) === canonical(asked)) edited = undefined;
    }
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
      status: 200,
      location: pendingPath(pending.agent.handle, pending.id),
      notice: `Approved #${pending.id}${edited ? " with your edits" : ""}: it runs in a moment`,
    };
  },
});

export const rejectAction = defineAction({
  name: "reject_action",
  destructive:
    "The agent's action never runs, and the agent reads your reason. A rejection cannot be taken back.",
  description: "Reject a queued action, saying why: it never executes",
  params: z.object({
    id: idSchema.meta({ description: "the pending action's id", pickedBeside: true }),
    reason: text(2000).meta({ label: "Why (the agent reads this)", multiline: true }),
  }),
  writes: true,
  audience: toAgentManagers("review"),
  available: reviewer,
  staysOnPage: true,
  confirmText: (ctx, params) => describePending(ctx, String(params.id ?? "")),
  async execute(ctx, p) {
    const now = new Date();
    const pending = await lockOwned(ctx, p.id, now);
    const updated = await ctx.tx.agentPendingAction.update({
      where: { id: pending.id },
      data: { status: "rejected", reviewedById: ctx.actor.id, reviewedAt: now, reviewNote: p.reason },
    });
    await settleRequest(ctx, pending);
    await emit(ctx, { type: "approval.rejected", subjectType: "pending_action", subjectId: pending.id });
    await resumeWaitingRun(ctx.tx, updated, { status: "rejected", message: p.reason }, ctx.actor.id);
    return {
      status: 200,
      location: pendingPath(pending.agent.handle, pending.id),
      notice: `Rejected #${pending.id}`,
    };
  },
});
