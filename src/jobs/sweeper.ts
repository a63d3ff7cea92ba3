// Postgres is the source of truth; Redis is transport. The sweeper closes the gap when
// transport fails: runs whose worker died (lease expired) and queued runs no job is
// carrying (Redis lost, enqueue missed) get a fresh job. Claims are idempotent, so an
// extra job is harmless. A run that waited for its agent's trigger rate (`not_before`) gets
// its job here too, as soon as it is due: its first job found nothing to claim. Runs are
// claimed one at a time per agent and lane (core/runs.ts claimNext), so each lane gets its
// own job: an experiment's queued runs are not held up by the agent's own running one.
import type { PrismaClient } from "../db/prisma.ts";
import type { Queues } from "./queues.ts";

export async function sweep(
  prisma: PrismaClient,
  queues: Pick<Queues, "agent-runs">,
  staleMs: number,
): Promise<number> {
  const rows = await prisma.$queryRaw<{ id: string; attempts: number }[]>`
    SELECT DISTINCT ON (agent_id, lane) id, attempts FROM subagent_task_runs r
    WHERE (status = 'running' AND lease_expires_at < now())
       OR (status = 'queued' AND (CASE WHEN not_before IS NULL
             THEN created_at < now() - make_interval(secs => ${staleMs / 1000}) ELSE not_before <= now() END)
           AND NOT EXISTS (SELECT 1 FROM subagent_task_runs busy WHERE busy.agent_id = r.agent_id
                           AND busy.lane = r.lane AND busy.status = 'running' AND busy.lease_expires_at > now()))
    ORDER BY agent_id, lane, created_at`;
  const bucket = Math.floor(Date.now() / Math.max(staleMs, 1000));
  for (const row of rows)
    await queues["agent-runs"].add(
      "run",
      { runId: row.id },
      { jobId: `sweep-${row.id}-${row.attempts}-${bucket}` },
    );
  return rows.length;
}

/** How long an approved action may wait for its job before the sweep sends another. */
const APPROVED_STALE_MS = 60_000;

/**
 * Approved actions that never executed: their job gave up while the database or Redis was
 * away, or Redis lost it. Executing is idempotent (whoever flips approved → executed runs
 * it), so an extra job is harmless; one a minute at most per action.
 */
export async function sweepApproved(
  prisma: PrismaClient,
  queues: Pick<Queues, "approved-actions">,
): Promise<number> {
  const rows = await prisma.$queryRaw<{ id: string }[]>`
    SELECT id FROM agent_pending_actions
    WHERE status = 'approved' AND reviewed_at < now() - make_interval(secs => ${APPROVED_STALE_MS / 1000})
    ORDER BY reviewed_at LIMIT 200`;
  const bucket = Math.floor(Date.now() / APPROVED_STALE_MS);
  if (rows.length)
    await queues["approved-actions"].addBulk(
      rows.map((row) => ({
        name: "execute",
        data: { pendingId: row.id },
        opts: { jobId: `approved-${row.id}-${bucket}` },
      })),
    );
  return rows.length;
}
