// After review: approved actions execute once, as the agent, with authorization and
// capabilities checked again at that moment; rejected and expired ones never execute.
// A run that waits for the outcome gets it as a step and is queued again.
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type { AgentPendingAction, Prisma } from "../../generated/prisma/client.ts";
import { AppError } from "../../lib/errors.ts";
import { registry } from "../catalog.ts";
import { emitEvent } from "../events.ts";
import { toActor } from "../registry/types.ts";
import { requeue } from "./runs.ts";
import { recordResources, recordStep } from "./steps.ts";

class AlreadySettled extends Error {}

export type Outcome =
  | { status: "executed"; notice: string; path: string }
  | { status: "failed" | "rejected" | "expired"; message: string };

/** Hands the outcome to a run that waits for it: recorded as a step the model will read, then the run is queued again. */
export async function resumeWaitingRun(tx: Db, p: AgentPendingAction, outcome: Outcome, actorId: string) {
  if (!p.waits || !p.runId) return;
  const [run] = await tx.$queryRaw<
    { status: string; steps_count: number; tenant_id: string; agent_id: string }[]
  >`
    SELECT status, steps_count, tenant_id, agent_id FROM subagent_task_runs WHERE id = ${p.runId} FOR UPDATE`;
  if (run?.status !== "waiting") return;
  const last = await tx.subagentTaskRunStep.findFirst({
    where: { runId: p.runId },
    orderBy: { number: "desc" },
  });
  const resultPath = (last?.detail as Record<string, unknown> | null)?.resultPath;
  await recordStep(tx, { id: p.runId, tenantId: run.tenant_id }, null, {
    number: run.steps_count + 1,
    type: "approval",
    path: p.pagePath,
    detail: { pending: p.id, action: p.actionName, ...outcome, resultPath },
  });
  await requeue(tx, { id: p.runId, tenantId: run.tenant_id, agentId: run.agent_id }, actorId);
}

export async function executeApproved(db: PrismaClient, pendingId: string): Promise<Outcome | null> {
  const p = await db.agentPendingAction.findUnique({ where: { id: pendingId } });
  if (p?.status !== "approved") return null;
  const [agent, tenant, run] = await Promise.all([
    db.user.findUniqueOrThrow({ where: { id: p.agentId } }),
    db.tenant.findUniqueOrThrow({ where: { id: p.tenantId } }),
    p.runId
      ? db.subagentTaskRun.findUnique({ where: { id: p.runId }, select: { id: true, chainDepth: true } })
      : null,
  ]);
  const ctx = {
    db,
    tenant,
    actor: toActor(agent),
    ...(run && { run: { id: run.id, chainDepth: run.chainDepth } }),
  };
  const params = (p.editedParams ?? p.params) as Record<string, unknown>;
  let outcome: Outcome;
  try {
    const done = await registry.run(ctx, p.pagePath, p.actionName, params, {
      form: false,
      approved: true,
      // First in the action's transaction: whoever flips approved → executed runs it; any other attempt rolls back.
      claim: async (tx) => {
        const n = await tx.agentPendingAction.updateMany({
          where: { id: p.id, status: "approved" },
          data: { status: "executed", executedAt: new Date() },
        });
        if (n.count !== 1) throw new AlreadySettled();
      },
      inTx: async (tx, o, emitted) => {
        await tx.agentPendingAction.update({
          where: { id: p.id },
          data: { result: o.notice, resultPath: o.location },
        });
        if (run) {
          // Attributed to the step that asked for it, so the run page reads in order.
          const [asked] = await tx.$queryRaw<{ number: number }[]>`
            SELECT number FROM subagent_task_run_steps WHERE run_id = ${run.id} AND detail->>'pending' = ${p.id}`;
          await recordResources(
            tx,
            { id: run.id, tenantId: p.tenantId },
            asked?.number ?? 0,
            o.location,
            emitted,
          );
        }
      },
    });
    outcome = { status: "executed", notice: done.notice, path: done.location };
  } catch (err) {
    if (err instanceof AlreadySettled) return null;
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    // Refused at execution time (capability revoked, content gone, params no longer valid): failed, safely.
    const n = await db.agentPendingAction.updateMany({
      where: { id: p.id, status: "approved" },
      data: { status: "failed", error: err.message, executedAt: new Date() },
    });
    if (n.count !== 1) return null;
    outcome = { status: "failed", message: err.message };
  }
  await db.$transaction(async (tx) => {
    await emitEvent(tx, {
      tenantId: p.tenantId,
      actorId: p.agentId,
      type: `approval.${outcome.status}`,
      subjectType: "pending_action",
      subjectId: p.id,
    });
    await resumeWaitingRun(tx, p, outcome, p.reviewedById ?? p.agentId);
  });
  return outcome;
}

/** Pending actions past their expiry: expired, never executed; waiting runs hear about it. */
export async function expireOverdue(db: PrismaClient): Promise<number> {
  const due = await db.agentPendingAction.findMany({
    where: { status: "pending", expiresAt: { lt: new Date() } },
    take: 500,
  });
  let n = 0;
  for (const p of due)
    await db.$transaction(async (tx) => {
      const res = await tx.agentPendingAction.updateMany({
        where: { id: p.id, status: "pending" },
        data: { status: "expired" },
      });
      if (!res.count) return;
      n += 1;
      await resumeWaitingRun(
        tx,
        p,
        { status: "expired", message: "Nobody reviewed it before it expired." },
        p.agentId,
      );
    });
  return n;
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
      const p = await tx.agentPendingAction.findUniqueOrThrow({ where: { id } });
      const outcome: Outcome =
        p.status === "executed"
          ? { status: "executed", notice: p.result ?? "", path: p.resultPath ?? p.pagePath }
          : { status: p.status as "failed" | "rejected" | "expired", message: p.reviewNote ?? p.error ?? "" };
      await resumeWaitingRun(tx, p, outcome, p.reviewedById ?? p.agentId);
    });
  return missed.length;
}
