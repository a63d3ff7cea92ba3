// One heartbeat per worker process for all the runs it holds: every RUN_HEARTBEAT_MS one
// statement reads back stop requests and lost leases, and every third of a lease it is an
// UPDATE that also renews them all. Renewing every beat rewrote each held run's row (and
// its indexes) once a second: a worker holding 1,000 waiting runs made more row versions
// renewing leases than recording steps. A third of a lease still leaves two renewals to
// miss before a run is given up. A run whose lease was lost (another worker took it over)
// or whose owner pressed Stop has its AbortController fired, which also cancels its
// in-flight LLM call. A run its owner asked to pause has its pause signal fired instead: it
// pauses at its next step boundary (pause.ts), its call in flight left to finish.
import type { PrismaClient } from "../../../db/prisma.ts";

export type StopReason = "stopped" | "lease_lost" | "shutdown";

interface Beat {
  id: string;
  stop: boolean;
  pause: boolean;
}

export interface Heartbeat {
  track(runId: string): AbortController;
  /** Fired when the run's owner asks it to pause (pause_run); set by track. */
  pauseSignal(runId: string): AbortSignal | undefined;
  untrack(runId: string): void;
  beat(): Promise<void>;
  stop(): void;
}

export function startHeartbeat(
  db: PrismaClient,
  owner: string,
  leaseSeconds: number,
  intervalMs: number,
): Heartbeat {
  const active = new Map<string, AbortController>();
  const pauses = new Map<string, AbortController>();
  let beating = false;
  const renewEvery = Math.max(intervalMs, (leaseSeconds * 1000) / 3);
  let renewedAt = 0;

  // Locked in id order, as the step and ledger batches lock runs: an UPDATE alone takes rows
  // in whatever order its plan visits them (a bitmap scan: the heap's), and two statements
  // locking the same runs in different orders can deadlock.
  const renew = (ids: string[]) =>
    db.$queryRaw<Beat[]>`
        WITH mine AS (
          SELECT id FROM subagent_task_runs
          WHERE id = ANY(${ids}::text[]) AND lease_owner = ${owner} AND status = 'running'
          ORDER BY id FOR UPDATE
        )
        UPDATE subagent_task_runs r SET lease_expires_at = now() + make_interval(secs => ${leaseSeconds})
        FROM mine WHERE r.id = mine.id
        RETURNING r.id, r.stop_requested_at IS NOT NULL AS stop, r.pause_requested_at IS NOT NULL AS pause`;
  // Between renewals, only a read: the runs still ours, and whether their owners asked them to stop.
  const check = (ids: string[]) =>
    db.$queryRaw<Beat[]>`
        SELECT id, stop_requested_at IS NOT NULL AS stop, pause_requested_at IS NOT NULL AS pause FROM subagent_task_runs
        WHERE id = ANY(${ids}::text[]) AND lease_owner = ${owner} AND status = 'running'`;

  async function beat() {
    if (beating || !active.size) return;
    beating = true;
    try {
      const ids = [...active.keys()];
      // A run tracked since the last renewal was claimed with a full lease.
      const due = performance.now() - renewedAt >= renewEvery - intervalMs / 2;
      const rows = await (due ? renew(ids) : check(ids));
      if (due) renewedAt = performance.now();
      const alive = new Map(rows.map((r) => [r.id, r]));
      for (const id of ids) {
        const controller = active.get(id);
        if (!controller || controller.signal.aborted) continue;
        const row = alive.get(id);
        if (!row) controller.abort("lease_lost" satisfies StopReason);
        else if (row.stop) controller.abort("stopped" satisfies StopReason);
        else if (row.pause) pauses.get(id)?.abort("paused");
      }
    } catch {
      // A missed beat is harmless: the lease outlives several intervals.
    } finally {
      beating = false;
    }
  }

  const timer = setInterval(beat, intervalMs);
  timer.unref();
  return {
    track(runId) {
      const controller = new AbortController();
      active.set(runId, controller);
      pauses.set(runId, new AbortController());
      return controller;
    },
    pauseSignal: (runId) => pauses.get(runId)?.signal,
    untrack(runId) {
      active.delete(runId);
      pauses.delete(runId);
    },
    beat,
    stop() {
      clearInterval(timer);
      for (const controller of active.values()) controller.abort("shutdown" satisfies StopReason);
    },
  };
}
