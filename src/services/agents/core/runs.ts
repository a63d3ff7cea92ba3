// Run lifecycle in Postgres, the source of truth. Creating a run writes a `run.queued`
// outbox event in the same transaction; the relay turns it into an `agent-runs` job, so
// no web request ever writes to Redis and a run can never be lost between the two.
import { batchRows, grouped } from "../../../db/group-commit.ts";
import { type Db, hotQuery } from "../../../db/prisma.ts";
import { Prisma, type RunStatus, type SubagentTaskRun } from "../../../generated/prisma/client.ts";
import { newId } from "../../../lib/ids.ts";
import { activeTraceparent } from "../../../lib/telemetry.ts";
import { storable } from "../../../lib/text.ts";
import { emitEvent } from "../../events.ts";
import type { Audience } from "../../registry/types.ts";
import { parseRunStart, type RunStart, runStartSql } from "./run-start.ts";
import { maskText } from "./secret-masking.ts";
import { POLICY_KEYS } from "./settings.ts";

export const TERMINAL: RunStatus[] = ["completed", "failed", "cancelled", "timed_out", "skipped"];
/** Lost workers before a run is given up, when the worker's configuration says nothing (RUN_MAX_WORKER_LOSSES). */
export const MAX_WORKER_LOSSES = 3;

export interface NewRun {
  tenantId: string;
  agentId: string;
  initiatedById: string | null;
  triggerEventId?: string;
  triggerKind: string;
  /** The subscription, schedule or webhook that woke the run. */
  triggerRef?: string;
  /** The note, decision or commitment whose thread woke it: the thread shows it working. */
  threadId?: string;
  chainDepth: number;
  /** Over the agent's trigger rate: claimed no earlier than this (dispatcher.ts). */
  notBefore?: Date;
  task: string;
  /** Who can read what the task quotes (a comment's studio): the run's label starts there. */
  label?: Audience[];
  /** Who woke it without managing its agent: it reads only what they can (agents/policy/labels.ts). */
  viewerIds?: string[];
  model: string | null;
  maxSteps: number;
  timeoutSeconds: number;
  /** W3C traceparent of what woke it, when the caller knows (an event's); else the active span's. */
  traceparent?: string | null;
  /** A dry run: its writes are judged and recorded, never executed (registry/rehearsal.ts). */
  dry?: boolean;
  /** The lane it waits in, one run at a time per agent and lane (claimNext); '' (the agent's own) when not named. */
  lane?: string;
}

/**
 * What decides its actions' fate when a run is queued (settings.ts POLICY_KEYS): a replay
 * "under the rules as they were" runs under these (triggers/replay.ts). A key the agent's
 * config lacks is kept as null, its default then. With them, the number of the agent's
 * version of its settings then (core/versions.ts): the run page says which it ran under.
 */
const policySnapshot = (agentId: string) => Prisma.sql`(
  SELECT jsonb_build_object(${Prisma.join(
    POLICY_KEYS.map((k) => Prisma.sql`${k}::text, u.agent_config->${k}::text`),
  )}, 'version', (SELECT max(v.number) FROM agent_versions v WHERE v.agent_id = u.id))
  FROM users u WHERE u.id = ${agentId})`;

/** The version of its agent's settings a run was queued under (its policy snapshot), when it kept one. */
export function runVersion(run: Pick<SubagentTaskRun, "policy">): number | null {
  const version = (run.policy as { version?: unknown } | null)?.version;
  return typeof version === "number" ? version : null;
}

/**
 * The run's row: queued, or skipped with why (`end`). No row when this (agent, trigger)
 * has one already. Written as SQL, not `createMany`: Prisma compiles a `createMany` on
 * every call (it caches no plan for one), 1.4 ms of the worker's CPU on a trigger's path.
 * Stamped when inserted, to the microsecond, not when its transaction began: runs are
 * claimed oldest first, and one transaction may queue several.
 */
function insertRun(
  newRun: NewRun,
  end?: { reason: string; message: string },
  traceparent: string | null = null,
): Prisma.Sql {
  // A task quotes what woke the agent: stored as the model reads it, so a key pasted into a
  // comment is not copied into its runs (secret-masking.ts).
  return Prisma.sql`
    INSERT INTO subagent_task_runs (id, tenant_id, agent_id, initiated_by_id, trigger_event_id, trigger_kind,
      trigger_ref, thread_id, chain_depth, task, label, viewer_ids, model, max_steps, timeout_seconds, status, stop_reason,
      error, completed_at, not_before, trigger_traceparent, policy, dry, lane, created_at)
    VALUES (${newId()}, ${newRun.tenantId}, ${newRun.agentId}, ${newRun.initiatedById}, ${newRun.triggerEventId ?? null}, ${newRun.triggerKind},
      ${newRun.triggerRef ?? null}, ${newRun.threadId ?? null}, ${newRun.chainDepth}, ${maskText(newRun.task)},
      ${JSON.stringify(newRun.label ?? [])}::jsonb, ${newRun.viewerIds ?? []}::text[], ${newRun.model}, ${newRun.maxSteps},
      ${newRun.timeoutSeconds}, ${end ? "skipped" : "queued"}::"RunStatus", ${end?.reason ?? null}, ${end?.message ?? null},
      ${end ? new Date() : null}::timestamp, ${end ? null : (newRun.notBefore ?? null)}::timestamp, ${traceparent}::text,
      ${end ? null : policySnapshot(newRun.agentId)}, ${newRun.dry ?? false}, ${newRun.lane ?? ""},
      clock_timestamp() AT TIME ZONE 'UTC')
    ON CONFLICT DO NOTHING`;
}

/** A run just queued, and its `run.queued` event (whose id names the run's job). */
export interface QueuedRun {
  id: string;
  eventId: string;
}

/**
 * Inserts a queued run and its `run.queued` event, in one statement. Returns null if this
 * (agent, trigger) already has a run.
 */
export async function queueRun(tx: Db, newRun: NewRun): Promise<QueuedRun | null> {
  const eventId = newId();
  // Whatever queued it (a request, an event's job) is where the run's trace links to.
  const traceparent = newRun.traceparent ?? activeTraceparent() ?? null;
  const [run] = await hotQuery<{ id: string }>(
    tx,
    Prisma.sql`
    WITH run AS (${insertRun(newRun, undefined, traceparent)} RETURNING id), event AS (
      INSERT INTO events (id, tenant_id, type, actor_id, subject_type, subject_id, traceparent)
      SELECT ${eventId}, ${newRun.tenantId}, 'run.queued', ${newRun.initiatedById ?? newRun.agentId}, 'run', id, ${traceparent}::text FROM run
    )
    SELECT id FROM run`,
  );
  return run ? { id: run.id, eventId } : null;
}

/** A trigger that was refused (too many waiting, chain depth, a paused or archived agent), kept so its managers see why and may retry it. */
export async function recordSkipped(tx: Db, run: NewRun, reason: string, message: string) {
  await hotQuery(tx, insertRun(run, { reason, message }));
}

/** Requeues a run (after an answer or an approval) through the outbox. */
export async function requeue(
  tx: Db,
  run: Pick<SubagentTaskRun, "id" | "tenantId" | "agentId">,
  actorId: string,
) {
  // `attempts` counts the claims of one stretch of work: waiting for a person is not a lost worker.
  await tx.subagentTaskRun.update({
    where: { id: run.id },
    data: { status: "queued", leaseOwner: null, leaseExpiresAt: null, attempts: 0 },
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
 * A run that may be claimed: queued (and due, when it waits for the agent's trigger rate), or
 * running under a lease that expired (its worker died).
 */
const CLAIMABLE = Prisma.sql`((r.status = 'queued' AND (r.not_before IS NULL OR r.not_before <= now()))
  OR (r.status = 'running' AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= now())))`;

/**
 * A running run being claimed again lost the worker of each claim since it was queued
 * (`attempts`, reset when it waits for a person): at the limit it is given up, not claimed.
 */
const EXHAUSTED = Prisma.sql`(next.status = 'running' AND next.attempts >= next.max_losses)`;

export interface Claim {
  /** The claimed run and what it starts with; null: nothing was claimed. */
  start: RunStart | null;
  /** The agent whose runs were looked at (null: no such run or agent). */
  agentId: string | null;
  /** The lane of the agent's that was looked at (null with agentId): the worker's next claim takes the same. */
  lane: string | null;
  /** A run was given up (too many lost workers): claim again for the next one. */
  retry: boolean;
  /** What woke the run that was given up, for the worker's metrics. */
  gaveUp?: { triggerKind: string };
}

/**
 * The runs a claim looks at: an agent's lane ('' when not named, the agent's own), or the
 * lane of one of its runs (a job's).
 */
export type ClaimSelector = { agentId: string; lane?: string } | { runId: string };

/**
 * Claims the next run of an agent's lane, oldest first, if no run of that agent and lane
 * holds a live lease: one running run per agent and lane, the others wait their turn. The
 * agent's own lane ('') is its real work, one run at a time for its memory and its order; an
 * experiment's lanes run beside it (NewRun.lane). One statement, so one round trip: the agent's row
 * lock serializes concurrent claims, and the UPDATE re-checks the run is still claimable
 * on the row it locks — a claim whose snapshot predates another's commit claims nothing.
 * A run whose lease expired is claimable again, up to `maxLosses` lost workers. The claimed run comes
 * back with its agent, owner, tenant and first page (run-start.ts), read in the same statement.
 */
export async function claimNext(
  db: Db,
  selector: ClaimSelector,
  owner: string,
  leaseSeconds: number,
  maxLosses = MAX_WORKER_LOSSES,
): Promise<Claim> {
  return claim(db, { by: selector, owner, leaseSeconds, maxLosses });
}

interface ClaimItem {
  by: ClaimSelector;
  owner: string;
  leaseSeconds: number;
  maxLosses: number;
}

// Jobs that start together claim together: 200 runs queued at once were 200 claims
// flooding the pool ahead of the first steps of the runs they started. Claims of one agent's
// different lanes may share a batch (an agent id has no space in it, so no two keys collide).
const claim = grouped<ClaimItem, Claim>({
  write: writeClaims,
  key: ({ by }) => ("agentId" in by ? `${by.agentId} ${by.lane ?? ""}` : by.runId),
});

/**
 * Claims for several jobs in one statement, each as claimNext says. The agents are locked
 * in id order; two claims that name one agent's lane (two of its runs' jobs) take it once:
 * the first claims the lane's oldest run, the second finds it taken, as it would one
 * statement later. Claims of one agent's different lanes each claim in their own.
 */
async function writeClaims(db: Db, items: ClaimItem[]): Promise<Claim[]> {
  const input = items.map((item, index) => ({
    i: index,
    agent_id: "agentId" in item.by ? item.by.agentId : null,
    lane: "agentId" in item.by ? (item.by.lane ?? "") : null,
    run_id: "runId" in item.by ? item.by.runId : null,
    owner: item.owner,
    lease_seconds: item.leaseSeconds,
    max_losses: item.maxLosses,
  }));
  const rows = await hotQuery<{
    i: number;
    agent_id: string | null;
    lane: string | null;
    start: Parameters<typeof parseRunStart>[0];
    gave_up: string | null;
  }>(
    db,
    Prisma.sql`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
        AS x(i int, agent_id text, lane text, run_id text, owner text, lease_seconds int, max_losses int)
        ${batchRows(input.length)}
    ), wanted AS (
      -- A job's claim (by run) takes its run's agent and lane.
      SELECT input.i, input.owner, input.lease_seconds, input.max_losses,
        COALESCE(input.agent_id, r.agent_id) AS agent, COALESCE(input.lane, r.lane) AS lane
      FROM input LEFT JOIN subagent_task_runs r ON r.id = input.run_id
    ), locked AS (
      SELECT u.id FROM users u WHERE u.id IN (SELECT agent FROM wanted) ORDER BY u.id FOR UPDATE
    ), agent AS (
      SELECT DISTINCT ON (w.agent, w.lane) w.agent AS id, w.lane, w.i, w.owner, w.lease_seconds, w.max_losses
      FROM wanted w JOIN locked ON locked.id = w.agent
      ORDER BY w.agent, w.lane, w.i
    ), next AS (
      SELECT agent.i, agent.owner, agent.lease_seconds, agent.max_losses, n.id, n.attempts, n.status
      FROM agent, LATERAL (
        SELECT r.id, r.attempts, r.status FROM subagent_task_runs r
        WHERE r.agent_id = agent.id AND r.lane = agent.lane AND ${CLAIMABLE} AND NOT EXISTS (
          -- The agent's id is a value here, so it is an index condition: the partial index
          -- of running runs reads this agent's (one per busy lane), not every running run
          -- there is, and the lane filters those few.
          SELECT 1 FROM subagent_task_runs b
          WHERE b.agent_id = agent.id AND b.lane = agent.lane AND b.status = 'running' AND b.lease_expires_at > now())
        ORDER BY r.created_at, r.id LIMIT 1) n
    ), gave_up AS (
      UPDATE subagent_task_runs r
      SET status = 'failed', stop_reason = 'worker_lost', completed_at = now(), lease_owner = NULL,
          error = 'Its worker was lost ' || next.attempts
            || CASE WHEN next.attempts = 1 THEN ' time' ELSE ' times' END || ' in a row (the process stopped, or '
            || 'could not renew the run''s lease), which is the limit (RUN_MAX_WORKER_LOSSES); giving up.'
      FROM next WHERE r.id = next.id AND ${EXHAUSTED} AND ${CLAIMABLE}
      RETURNING r.id, r.trigger_kind, next.i
    ), claimed AS (
      UPDATE subagent_task_runs r
      SET status = 'running', lease_owner = next.owner,
          lease_expires_at = now() + make_interval(secs => next.lease_seconds),
          started_at = COALESCE(r.started_at, now()), attempts = r.attempts + 1
      FROM next WHERE r.id = next.id AND NOT ${EXHAUSTED} AND ${CLAIMABLE}
      RETURNING r.*, next.i AS claim_i
    )
    SELECT w.i, (SELECT locked.id FROM locked WHERE locked.id = w.agent) AS agent_id,
      (SELECT w.lane FROM locked WHERE locked.id = w.agent) AS lane,
      (SELECT ${runStartSql(new Date())} FROM claimed c WHERE c.claim_i = w.i) AS start,
      (SELECT g.trigger_kind FROM gave_up g WHERE g.i = w.i) AS gave_up
    FROM wanted w`,
    { groupCommit: true },
  );
  const byItem = new Map(rows.map((r) => [Number(r.i), r]));
  return items.map((_, index) => {
    const row = byItem.get(index);
    return {
      start: parseRunStart(row?.start ?? null),
      agentId: row?.agent_id ?? null,
      lane: row?.lane ?? null,
      retry: Boolean(row?.gave_up),
      ...(row?.gave_up && { gaveUp: { triggerKind: row.gave_up } }),
    };
  });
}

/** The run this worker holds, read afresh to resume it (run-start.ts); null once its lease is gone. */
export async function reloadRun(db: Db, runId: string, owner: string): Promise<RunStart | null> {
  const [row] = await hotQuery<{ start: Parameters<typeof parseRunStart>[0] }>(
    db,
    Prisma.sql`SELECT ${runStartSql(new Date())} AS start FROM subagent_task_runs c
      WHERE c.id = ${runId} AND c.lease_owner = ${owner} AND c.status = 'running'`,
  );
  return parseRunStart(row?.start ?? null);
}

export interface Finish {
  status: RunStatus;
  stopReason?: string;
  finalMessage?: string;
  error?: string;
  question?: string;
}

/**
 * Ends (or pauses) a run this worker holds, and writes its `run.<status>` event: one
 * statement, so one round trip and atomic without a transaction. A worker that lost its
 * lease changes nothing and emits nothing.
 */
export async function finishRun(
  db: Db,
  run: Pick<SubagentTaskRun, "id" | "tenantId" | "agentId">,
  owner: string,
  finish: Finish,
): Promise<boolean> {
  const done = TERMINAL.includes(finish.status);
  // The model's own words (its final message, its question) may hold text Postgres refuses.
  const text = (value: string | undefined) => (value === undefined ? null : storable(value, "\ufffd"));
  const [row] = await hotQuery<{ ended: number }>(
    db,
    Prisma.sql`
    WITH ended AS (
      UPDATE subagent_task_runs
      SET status = ${finish.status}::"RunStatus", stop_reason = ${finish.stopReason ?? null},
          final_message = COALESCE(${text(finish.finalMessage)}, final_message),
          error = COALESCE(${text(finish.error)}, error), question = COALESCE(${text(finish.question)}, question),
          lease_owner = NULL, lease_expires_at = NULL,
          completed_at = CASE WHEN ${done}::boolean THEN ${new Date()}::timestamp ELSE completed_at END
      WHERE id = ${run.id} AND lease_owner = ${owner} AND status = 'running'
      RETURNING id
    ), event AS (
      INSERT INTO events (id, tenant_id, type, actor_id, subject_type, subject_id)
      SELECT ${newId()}, ${run.tenantId}, ${`run.${finish.status}`}, ${run.agentId}, 'run', id FROM ended
      RETURNING id
    )
    SELECT (SELECT count(*) FROM event)::int AS ended`,
  );
  return Number(row?.ended) === 1;
}
