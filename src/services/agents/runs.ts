// Run lifecycle in Postgres, the source of truth. Creating a run writes a `run.queued`
// outbox event in the same transaction; the relay turns it into an `agent-runs` job, so
// no web request ever writes to Redis and a run can never be lost between the two.
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type { RunStatus, SubagentTaskRun } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import { emitEvent } from "../events.ts";

export const TERMINAL: RunStatus[] = ["completed", "failed", "cancelled", "timed_out", "skipped"];
export const MAX_ATTEMPTS = 3;

export interface NewRun {
  tenantId: string;
  agentId: string;
  initiatedById: string | null;
  triggerEventId?: string;
  triggerKind: string;
  chainDepth: number;
  task: string;
  model: string | null;
  maxSteps: number;
  timeoutSeconds: number;
}

/** Inserts a queued run and its `run.queued` event. Returns null if this (agent, event) already has a run. */
export async function queueRun(tx: Db, r: NewRun): Promise<SubagentTaskRun | null> {
  const id = newId();
  const inserted = await tx.subagentTaskRun.createMany({ data: [{ id, ...r }], skipDuplicates: true });
  if (!inserted.count) return null;
  await emitEvent(tx, {
    tenantId: r.tenantId,
    actorId: r.initiatedById ?? r.agentId,
    type: "run.queued",
    subjectType: "run",
    subjectId: id,
  });
  return tx.subagentTaskRun.findUniqueOrThrow({ where: { id } });
}

/** A trigger that was refused (rate limit, chain depth, paused agent), kept so the owner can see why. */
export async function recordSkipped(tx: Db, r: NewRun, reason: string, message: string) {
  await tx.subagentTaskRun.createMany({
    data: [
      { id: newId(), ...r, status: "skipped", stopReason: reason, error: message, completedAt: new Date() },
    ],
    skipDuplicates: true,
  });
}

/** Requeues a run (after an answer or an approval) through the outbox. */
export async function requeue(
  tx: Db,
  run: Pick<SubagentTaskRun, "id" | "tenantId" | "agentId">,
  actorId: string,
) {
  await tx.subagentTaskRun.update({
    where: { id: run.id },
    data: { status: "queued", leaseOwner: null, leaseExpiresAt: null },
  });
  await emitEvent(tx, {
    tenantId: run.tenantId,
    actorId,
    type: "run.queued",
    subjectType: "run",
    subjectId: run.id,
  });
}

/**
 * Claims the agent's next run, oldest first, if the agent has no run holding a live
 * lease: one running run per agent, the others wait their turn. The agent's row lock
 * serializes concurrent claims. A run whose lease expired (its worker died) is
 * claimable again, up to MAX_ATTEMPTS.
 */
export async function claimNext(db: PrismaClient, agentId: string, owner: string, leaseSeconds: number) {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM users WHERE id = ${agentId} FOR UPDATE`;
    const busy = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM subagent_task_runs
      WHERE agent_id = ${agentId} AND status = 'running' AND lease_expires_at > now() LIMIT 1`;
    if (busy.length) return null;
    const [next] = await tx.$queryRaw<{ id: string; attempts: number; status: RunStatus }[]>`
      SELECT id, attempts, status FROM subagent_task_runs
      WHERE agent_id = ${agentId}
        AND (status = 'queued' OR (status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= now())))
      ORDER BY created_at, id LIMIT 1`;
    if (!next) return null;
    if (next.status === "running" && next.attempts >= MAX_ATTEMPTS) {
      await tx.subagentTaskRun.update({
        where: { id: next.id },
        data: {
          status: "failed",
          stopReason: "worker_lost",
          error: `The worker running this run stopped ${MAX_ATTEMPTS} times; giving up.`,
          completedAt: new Date(),
          leaseOwner: null,
        },
      });
      return "retry" as const;
    }
    const rows = await tx.$queryRaw<{ id: string }[]>`
      UPDATE subagent_task_runs
      SET status = 'running', lease_owner = ${owner},
          lease_expires_at = now() + make_interval(secs => ${leaseSeconds}),
          started_at = COALESCE(started_at, now()), attempts = attempts + 1
      WHERE id = ${next.id} RETURNING id`;
    return rows[0] ? tx.subagentTaskRun.findUniqueOrThrow({ where: { id: next.id } }) : null;
  });
}

export interface Finish {
  status: RunStatus;
  stopReason?: string;
  finalMessage?: string;
  error?: string;
  question?: string;
}

/** Ends (or pauses) a run this worker holds; a worker that lost its lease changes nothing. */
export async function finishRun(db: Db, runId: string, owner: string, f: Finish): Promise<boolean> {
  const done = TERMINAL.includes(f.status);
  const res = await db.subagentTaskRun.updateMany({
    where: { id: runId, leaseOwner: owner, status: "running" },
    data: {
      status: f.status,
      stopReason: f.stopReason ?? null,
      finalMessage: f.finalMessage ?? undefined,
      error: f.error ?? undefined,
      question: f.question ?? undefined,
      leaseOwner: null,
      leaseExpiresAt: null,
      ...(done && { completedAt: new Date() }),
    },
  });
  return res.count === 1;
}
