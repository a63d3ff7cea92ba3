// A run its manager paused (pause_run) stops at its next step boundary: before its next
// model call, never during one, so the step in flight is recorded and charged as usual. The
// request is in the run's row: the claim reads it (a run recovered after its worker died
// while asked to pause pauses at once), and the worker's heartbeat reads it every beat
// (heartbeat.ts) and fires the run's pause signal. Pausing ends the claim like waiting for
// an answer does: the lease is released, the worker takes the agent's next run, and
// resume_run queues this one again; its deadline is rebuilt from its steps' durations
// (step-state.ts setUpRun), so time spent paused does not count against its timeout.
import type { RunStart } from "../core/run-start.ts";
import type { Finish } from "../core/runs.ts";

export const PAUSED: Finish = { status: "paused", stopReason: "paused_by_owner" };

/** Whether the run must pause before its next model call. */
export function pauseAsked(start: RunStart, signal: AbortSignal | undefined): boolean {
  return Boolean(signal?.aborted || start.run.pauseRequestedAt);
}
