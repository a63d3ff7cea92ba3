// After review: approved actions execute once, as the agent, with authorization and
// capabilities checked again at that moment; rejected and expired ones never execute.
// A run that waits for the outcome gets it as a step and is queued again.
import type { Db, PrismaClient } from "../../../db/prisma.ts";
import type { AgentPendingAction, Prisma } from "../../../generated/prisma/client.ts";
import { AppError } from "../../../lib/errors.ts";
import { emitEvent } from "../../events.ts";
import type { Registry } from "../../registry/registry.ts";
import { toActor } from "../../registry/types.ts";
import { requeue } from "../core/runs.ts";
import { recordResources, recordStep } from "../core/steps.ts";

class AlreadySettled extends Error {}
/** Approved only after its expiry had passed (by an older version, or by hand): it must not run. */
class ApprovedTooLate extends Error {}

export const EXPIRED_UNREVIEWED = "Nobody reviewed it before it expired.";
export const AGENT_ARCHIVED = "Its agent was archived, so it will not run.";

/** Actions still waiting for a person's review: pending and not yet expired (an expired one is only settled later). */
export const awaitingReview = (now = new Date()) => ({ status: "pending" as const, expiresAt: { gt: now } });
const APPROVED_TOO_LATE = "It was approved after it had expired, so it did not run.";

export type Outcome =
  | { status: "executed"; notice: string; path: string }
  | { status: "failed" | "rejected" | "expired"; message: string };

/** Hands the outcome to a run that waits for it: recorded as a step the model will read, then the run is queued again. */
export async function resumeWaitingRun(
  tx: Db,
  pending: AgentPendingAction,
  outcome: Outcome,
  actorId: string,
) {
  if (!pending.waits || !pending.runId) return;
  const [run] = await tx.$queryRaw<
    { status: string; steps_count: number; tenant_id: string; agent_id: string }[]
  >`
    SELECT status, steps_count, tenant_id, agent_id FROM subagent_task_runs WHERE id = ${pending.runId} FOR UPDATE`;
  if (run?.status !== "waiting") return;
  const last = await tx.subagentTaskRunStep.findFirst({
    where: { runId: pending.runId },
    orderBy: { number: "desc" },
  });
  const resultPath = (last?.detail as Record<string, unknown> | null)?.resultPath;
  await recordStep(tx, { id: pending.runId, tenantId: run.tenant_id }, null, {
    number: run.steps_count + 1,
    type: "approval",
    path: pending.pagePath,
    detail: { pending: pending.id, action: pending.actionName, ...outcome, resultPath },
  });
  await requeue(tx, { id: pending.runId, tenantId: run.tenant_id, agentId: run.agent_id }, actorId);
}

/**
 * First in the executing transaction: whoever flips approved → executed runs it; any other
 * attempt rolls back. The statement that locks the row is the one that checks the expiry.
 */
async function claimApproved(tx: Db, id: string, now: Date) {
  const [row] = await tx.$queryRaw<{ status: string; in_time: boolean | null }[]>`
    SELECT status::text, (expires_at > ${now} OR reviewed_at <= expires_at) AS in_time
    FROM agent_pending_actions WHERE id = ${id} FOR UPDATE`;
  if (row?.status !== "approved") throw new AlreadySettled();
  if (!row.in_time) throw new ApprovedTooLate();
  await tx.agentPendingAction.update({ where: { id }, data: { status: "executed", executedAt: now } });
}

/** An approved action that will not run, settled so; null if another worker settled it first. */
async function settleUnrun(db: Db, id: string, status: "failed" | "expired", message: string) {
  const batchPayload = await db.agentPendingAction.updateMany({
    where: { id, status: "approved" },
    data: { status, error: message, executedAt: status === "failed" ? new Date() : null },
  });
  return batchPayload.count === 1 ? ({ status, message } satisfies Outcome) : null;
}

/**
 * Executes an approved action once. An approval given before the expiry runs however late
 * the worker gets to it: the owner decided in time, and authorization, capabilities and
 * params are checked again now. One given after it (only an older version or a hand-made
 * row can hold one) never runs: it is marked expired.
 */
export async function executeApproved(
  registry: Pick<Registry, "run">,
  db: PrismaClient,
  pendingId: string,
): Promise<Outcome | null> {
  const pending = await db.agentPendingAction.findUnique({ where: { id: pendingId } });
  if (pending?.status !== "approved") return null;
  // Before anything is read: the expiry is checked against when the worker took it up.
  const now = new Date();
  const acting = await actingAgent(db, pending);
  // Archived after it was approved (the archive expires it too; this covers a row it missed).
  if (acting.agent.archivedAt) return settleUnrun(db, pending.id, "expired", AGENT_ARCHIVED);
  const outcome = await runApproved(registry, db, pending, acting, now);
  if (!outcome) return null;
  await db.$transaction(async (tx) => {
    await emitEvent(tx, {
      tenantId: pending.tenantId,
      actorId: pending.agentId,
      type: `approval.${outcome.status}`,
      subjectType: "pending_action",
      subjectId: pending.id,
    });
    await resumeWaitingRun(tx, pending, outcome, pending.reviewedById ?? pending.agentId);
  });
  return outcome;
}

type Acting = Awaited<ReturnType<typeof actingAgent>>;

/** The agent the action runs as, in its tenant, within the run that asked for it (if it still exists). */
async function actingAgent(db: PrismaClient, pending: AgentPendingAction) {
  const [agent, tenant, run] = await Promise.all([
    db.user.findUniqueOrThrow({ where: { id: pending.agentId } }),
    db.tenant.findUniqueOrThrow({ where: { id: pending.tenantId } }),
    pending.runId
      ? db.subagentTaskRun.findUnique({
          where: { id: pending.runId },
          select: { id: true, chainDepth: true },
        })
      : null,
  ]);
  const ctx = {
    db,
    tenant,
    actor: toActor(agent),
    ...(run && { run: { id: run.id, chainDepth: run.chainDepth } }),
  };
  return { agent, run, ctx };
}

/** Runs the action through the registry's guard, claimed in its transaction; null if another worker settled it. */
async function runApproved(
  registry: Pick<Registry, "run">,
  db: PrismaClient,
  pending: AgentPendingAction,
  { run, ctx }: Acting,
  now: Date,
): Promise<Outcome | null> {
  const params = (pending.editedParams ?? pending.params) as Record<string, unknown>;
  try {
    const done = await registry.run(ctx, pending.pagePath, pending.actionName, params, {
      form: false,
      approved: true,
      claim: (tx) => claimApproved(tx, pending.id, now),
      inTx: async (tx, actionOutcome, emitted) => {
        await tx.agentPendingAction.update({
          where: { id: pending.id },
          // What it created, so that content can say a person edited it before it was posted.
          data: {
            result: actionOutcome.notice,
            resultPath: actionOutcome.location,
            resultSubjectId: emitted[0]?.subjectId ?? null,
          },
        });
        if (run) await attributeToStep(tx, pending, run.id, actionOutcome.location, emitted);
      },
    });
    return { status: "executed", notice: done.notice, path: done.location };
  } catch (err) {
    return refused(db, pending, err);
  }
}

/** What it created, attributed to the step that asked for it, so the run page reads in order. */
async function attributeToStep(
  tx: Db,
  pending: AgentPendingAction,
  runId: string,
  location: string,
  emitted: Parameters<typeof recordResources>[4],
) {
  const [asked] = await tx.$queryRaw<{ number: number }[]>`
    SELECT number FROM subagent_task_run_steps WHERE run_id = ${runId} AND detail->>'pending' = ${pending.id}`;
  await recordResources(tx, { id: runId, tenantId: pending.tenantId }, asked?.number ?? 0, location, emitted);
}

/** Why it did not run, settled so; null if another worker settled it first. Anything else is thrown on. */
async function refused(db: PrismaClient, pending: AgentPendingAction, err: unknown): Promise<Outcome | null> {
  if (err instanceof AlreadySettled) return null;
  if (err instanceof ApprovedTooLate) return settleUnrun(db, pending.id, "expired", APPROVED_TOO_LATE);
  // Refused at execution time (capability revoked, content gone, params no longer valid): failed, safely.
  if (err instanceof AppError && err.status < 500) return settleUnrun(db, pending.id, "failed", err.message);
  throw err;
}

/**
 * Archiving an agent ends what it asked for: its queued actions, and approved ones the worker
 * has not run yet, expire in the archive's transaction, so no review (or a late worker) can
 * make an archived agent act. Its managers' notices of them are settled. Returns how many.
 * Its owner's deactivation does the same with its own `reason` (actions/deactivation.ts).
 */
export async function expireAgentPending(
  tx: Db,
  agent: { id: string; handle: string },
  reason = AGENT_ARCHIVED,
): Promise<number> {
  const { count } = await tx.agentPendingAction.updateMany({
    where: { agentId: agent.id, status: { in: ["pending", "approved"] } },
    data: { status: "expired", error: reason },
  });
  if (count)
    await tx.notification.updateMany({
      where: {
        kind: "agent",
        path: { startsWith: `/subagents/${agent.handle}/pending/` },
        dismissedAt: null,
      },
      data: { dismissedAt: new Date() },
    });
  return count;
}

/**
 * Marks a pending action expired and hands that to a run waiting for it: the review that
 * finds it overdue and the sweep end it the same way. False if it was no longer pending.
 */
export async function expirePending(tx: Db, pending: AgentPendingAction): Promise<boolean> {
  const expired = await tx.agentPendingAction.updateMany({
    where: { id: pending.id, status: "pending" },
    data: { status: "expired", error: EXPIRED_UNREVIEWED },
  });
  if (!expired.count) return false;
  await resumeWaitingRun(tx, pending, { status: "expired", message: EXPIRED_UNREVIEWED }, pending.agentId);
  return true;
}

/**
 * Tidies up pending actions past their expiry. Reviews check the expiry themselves, so
 * nothing depends on when this runs: it only moves rows nobody looked at and wakes their runs.
 */
export async function expireOverdue(db: PrismaClient): Promise<number> {
  const due = await db.agentPendingAction.findMany({
    where: { status: "pending", expiresAt: { lte: new Date() } },
    take: 500,
  });
  let count = 0;
  for (const pending of due) if (await db.$transaction((tx) => expirePending(tx, pending))) count += 1;
  return count;
}

export type PendingWithAgent = Prisma.AgentPendingActionGetPayload<{ include: { agent: true; run: true } }>;

/**
 * Waiting runs whose review already settled but never reached them — the review landed
 * before the run was marked waiting, or the hand-over transaction failed after the
 * action executed. The maintenance job closes that gap, as the sweeper does for runs.
 */
export async function resumeSettled(db: PrismaClient): Promise<number> {
  const missed = await db.$queryRaw<{ id: string }[]>`
    SELECT p.id FROM agent_pending_actions p JOIN subagent_task_runs r ON r.id = p.run_id
    WHERE p.waits AND r.status = 'waiting' AND r.stop_reason = 'awaiting_approval'
      AND p.status IN ('executed', 'failed', 'rejected', 'expired')
      AND NOT EXISTS (SELECT 1 FROM subagent_task_run_steps s
                      WHERE s.run_id = r.id AND s.type = 'approval' AND s.detail->>'pending' = p.id)
    LIMIT 200`;
  for (const { id } of missed)
    await db.$transaction(async (tx) => {
      const pending = await tx.agentPendingAction.findUniqueOrThrow({ where: { id } });
      const outcome: Outcome =
        pending.status === "executed"
          ? { status: "executed", notice: pending.result ?? "", path: pending.resultPath ?? pending.pagePath }
          : {
              status: pending.status as "failed" | "rejected" | "expired",
              message: pending.reviewNote ?? pending.error ?? "",
            };
      await resumeWaitingRun(tx, pending, outcome, pending.reviewedById ?? pending.agentId);
    });
  return missed.length;
}
