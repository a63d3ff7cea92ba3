// One heartbeat per worker process for all the runs it holds: a single UPDATE renews
// every lease and reads back stop requests. A run whose lease was lost (another worker
// took it over) or whose owner pressed Stop has its AbortController fired, which also
// cancels its in-flight LLM call.
import type { PrismaClient } from "../../db/prisma.ts";

export type StopReason = "stopped" | "lease_lost" | "shutdown";

export interface Heartbeat {
  track(runId: string): AbortController;
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
  let beating = false;

  async function beat() {
    if (beating || !active.size) return;
    beating = true;
    try {
      const ids = [...active.keys()];
      // Locked in id order, as the step and ledger batches lock runs: an UPDATE alone
      // takes rows in whatever order its plan visits them (a bitmap scan: the heap's), and
      // two statements locking the same runs in different orders can deadlock.
      const rows = await db.$queryRaw<{ id: string; stop: boolean }[]>`
        WITH mine AS (
          SELECT id FROM subagent_task_runs
          WHERE id = ANY(${ids}::text[]) AND lease_owner = ${owner} AND status = 'running'
          ORDER BY id FOR UPDATE
        )
        UPDATE subagent_task_runs r SET lease_expires_at = now() + make_interval(secs => ${leaseSeconds})
        FROM mine WHERE r.id = mine.id
        RETURNING r.id, r.stop_requested_at IS NOT NULL AS stop`;
      const alive = new Map(rows.map((r) => [r.id, r.stop]));
      for (const id of ids) {
        const c = active.get(id);
        if (!c || c.signal.aborted) continue;
        if (!alive.has(id)) c.abort("lease_lost" satisfies StopReason);
        else if (alive.get(id)) c.abort("stopped" satisfies StopReason);
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
      const c = new AbortController();
      active.set(runId, c);
      return c;
    },
    untrack(runId) {
      active.delete(runId);
    },
    beat,
    stop() {
      clearInterval(timer);
      for (const c of active.values()) c.abort("shutdown" satisfies StopReason);
    },
  };
}
