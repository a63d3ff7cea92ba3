// A run page's live feed: its steps as they are recorded, its status as it changes, and
// "thinking…" while an LLM call is out. A position is `<last step sent>.<state sent>`
// (`7.running`; `7` before any state was sent), so a stream resumed from any event id sends
// exactly the steps after it and the state when it changed: no gap, no step twice. Steps
// and the run are read in one statement, one snapshot, and a read carries at most a batch
// of steps, so a long run's history streams without holding it all in memory.
import { hotQuery } from "../../db/prisma.ts";
import { Prisma, type RunStatus, type SubagentTaskRun } from "../../generated/prisma/client.ts";
import { type LiveBatch, type LiveEvent, type LiveFeed, sharedReads } from "../live/feed.ts";
import {
  ENDED,
  type ProgressRow,
  progressHtml,
  progressLine,
  type RunState,
  runState,
  type StepRow,
  stepHtml,
  stepMarkdown,
  stepPath,
} from "./run-steps.ts";

const BATCH = 50;
/** The states of a run whose model may be writing: a stop or a pause waits for the step in flight. */
const WORKING: ReadonlySet<RunState> = new Set(["running", "stopping", "pausing"]);

interface Position {
  step: number;
  state: RunState | null;
}

export function positionOf(step: number, state: RunState | null): string {
  return state ? `${step}.${state}` : String(step);
}

function parsePosition(since: string | null): Position {
  const parts = since ? /^(\d{1,6})(?:\.([a-z_]{1,20}))?$/.exec(since) : null;
  return parts
    ? { step: Number(parts[1]), state: (parts[2] as RunState | undefined) ?? null }
    : { step: 0, state: null };
}

type Read = ProgressRow & { steps: StepRow[]; lastStepAt: Date | null };

type Dates = "startedAt" | "completedAt" | "stopRequestedAt" | "pauseRequestedAt" | "lastStepAt";
interface RawRead {
  // Timestamps come as JSON's ISO text, without a zone: they are UTC.
  run: Omit<ProgressRow, Dates | "costMicros"> & Record<Dates, string | null> & { costMicros: string };
  steps: Read["steps"];
}

const date = (stamp: string | null) => (stamp ? new Date(`${stamp}Z`) : null);

async function readRun(
  db: Parameters<typeof hotQuery>[0],
  runId: string,
  after: number,
): Promise<Read | null> {
  const [row] = await hotQuery<RawRead>(
    db,
    Prisma.sql`
    SELECT json_build_object('status', r.status, 'stopRequestedAt', r.stop_requested_at,
        'pauseRequestedAt', r.pause_requested_at, 'stopReason', r.stop_reason,
        'stepsCount', r.steps_count, 'maxSteps', r.max_steps, 'inputTokens', r.input_tokens,
        'cachedTokens', r.cached_tokens, 'cacheWriteTokens', r.cache_write_tokens,
        'outputTokens', r.output_tokens, 'costMicros', r.cost_micros::text,
        'startedAt', r.started_at, 'completedAt', r.completed_at,
        'lastStepAt', (SELECT max(created_at) FROM subagent_task_run_steps WHERE run_id = r.id)) AS run,
      COALESCE((SELECT json_agg(s ORDER BY s.number) FROM (
        SELECT number, type, path, detail, input_tokens AS "inputTokens", output_tokens AS "outputTokens",
          duration_ms AS "durationMs", model_text AS "modelText"
        FROM subagent_task_run_steps WHERE run_id = r.id AND number > ${after}
        ORDER BY number LIMIT ${BATCH}) s), '[]') AS steps
    FROM subagent_task_runs r WHERE r.id = ${runId}`,
  );
  if (!row) return null;
  const run = row.run;
  return {
    ...run,
    status: run.status as RunStatus,
    costMicros: BigInt(run.costMicros),
    startedAt: date(run.startedAt),
    completedAt: date(run.completedAt),
    stopRequestedAt: date(run.stopRequestedAt),
    pauseRequestedAt: date(run.pauseRequestedAt),
    lastStepAt: date(run.lastStepAt),
    steps: row.steps,
  };
}

interface Rendered {
  run: Read;
  /** Each step as its event carries it. */
  steps: { number: number; type: string; markdown: string; html: string }[];
  progress: { markdown: string; html: string };
}

/** A read, rendered as the page renders it: the same for every stream at that position. */
async function readRendered(
  db: Parameters<typeof hotQuery>[0],
  handle: string,
  runId: string,
  after: number,
): Promise<Rendered | null> {
  const read = await readRun(db, runId, after);
  if (!read) return null;
  const steps = read.steps.map((step) => ({
    number: step.number,
    type: step.type,
    markdown: stepMarkdown(step, stepPath(handle, runId, step.number)),
    html: stepHtml(step, stepPath(handle, runId, step.number), true),
  }));
  return { run: read, steps, progress: { markdown: progressLine(read), html: progressHtml(read) } };
}

// Streams of one process at the same position of the same run share a read and its rendering.
const shared = sharedReads<Rendered | null>();

/** What the run page shows live. */
export function runFeed(
  db: Parameters<typeof hotQuery>[0],
  agent: { handle: string },
  run: Pick<SubagentTaskRun, "id">,
): LiveFeed {
  const thinking = (id: string, step: number, since: Date): LiveEvent => ({
    event: "thinking",
    id,
    data: { step, since: since.toISOString() },
  });
  return {
    topics: [`run:${run.id}`],
    async read(since, first): Promise<LiveBatch> {
      const position = parsePosition(since);
      const read = await shared(`${run.id}:${position.step}`, () =>
        readRendered(db, agent.handle, run.id, position.step),
      );
      if (!read) return { events: [], ended: true };
      const { run: current, progress } = read;
      const events: LiveEvent[] = read.steps.map((step) => ({
        event: "step",
        id: positionOf(step.number, position.state),
        data: { ...step, progress },
      }));
      const more = current.steps.length === BATCH;
      const last = current.steps.at(-1)?.number ?? position.step;
      const state = runState(current);
      if (!more && state !== position.state)
        events.push({ event: "status", id: positionOf(last, state), data: { state, progress } });
      // A stream that starts, or sends anything, learns from the rows whether the model is
      // thinking: since the last step, or the start, as the worker calls at once after either.
      if (!more && state === "running" && (first || events.length))
        events.push(
          thinking(
            events.at(-1)?.id ?? since ?? "0",
            last + 1,
            current.lastStepAt ?? current.startedAt ?? new Date(),
          ),
        );
      return { events, more, ended: ENDED.has(state) };
    },
    direct(notice, since) {
      if (notice.kind !== "call" && notice.kind !== "text") return null;
      // Only for a step not yet sent, of a run still running where the stream stands.
      const position = parsePosition(since);
      if (notice.step <= position.step || !(position.state === null || WORKING.has(position.state)))
        return null;
      // The model's reply so far (services/live/text.ts): the step, once recorded, replaces it.
      if (notice.kind === "text")
        return { event: "text", id: since, data: { step: notice.step, text: notice.text } };
      return thinking(since, notice.step, new Date(notice.at));
    },
  };
}
