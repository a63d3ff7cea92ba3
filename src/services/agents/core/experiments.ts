// An agent's experiments (triggers/experiments.ts starts one): its test cases run again as dry
// runs, once under its current settings and once under a candidate's, side by side. Its results
// are its runs, graded when read (grading.ts): nothing has to "finish" an experiment, and a
// result is never stale — but for a rubric, whose model's score is kept once given
// (runtime/rubric-grader.ts) and whose cost counts in the cap as its runs' does. Its cost cap
// is checked before every model call of its runs (runtime/loop.ts, through the navigator's
// ports): the first run to find it reached stops the experiment and says why; the others end
// at their next call.
import type { Db } from "../../../db/prisma.ts";
import type { AgentExperiment, AgentTestCase, SubagentTaskRun } from "../../../generated/prisma/client.ts";
import { usd } from "../../money/pricing.ts";
import { parseLabel } from "../../registry/audiences.ts";
import type { Audience } from "../../registry/types.ts";
import { storedExpectations } from "./expectations.ts";
import {
  attempts,
  type Grade,
  grade,
  type OutcomeStep,
  outcomeOf,
  type RubricGrade,
  rubricGradesOf,
} from "./grading.ts";
import { TERMINAL } from "./runs.ts";

/** The two sides of an experiment, in the order its pages show them. */
export const ARMS = ["current", "candidate"] as const;
export type Arm = (typeof ARMS)[number];

export type Candidate =
  | { kind: "version"; version: number }
  | { kind: "prompt"; identity_prompt: string }
  | { kind: "model"; model: string };

export const experimentsPath = (handle: string) => `/subagents/${handle}/experiments`;
export const experimentPath = (handle: string, id: string) => `${experimentsPath(handle)}/${id}`;

/** The reason a run of a stopped experiment ends with. */
export const EXPERIMENT_STOPPED = "experiment_stopped";

/**
 * Before a model call of an experiment's run: why it must not be made (the experiment was
 * stopped, or its runs together reached its cost cap, which stops it now), or null. Calls
 * already out when the cap is reached still land: at most one per run running at once.
 */
export async function experimentStop(db: Db, experimentId: string): Promise<string | null> {
  const [row] = await db.$queryRaw<{ cap: bigint; spent: bigint; error: string | null }[]>`
    SELECT e.cost_cap_micros AS cap, e.error,
      ((SELECT coalesce(sum(r.cost_micros), 0) FROM subagent_task_runs r WHERE r.experiment_id = e.id)
        + (SELECT coalesce(sum(g.cost_micros), 0) FROM agent_rubric_grades g WHERE g.experiment_id = e.id))::bigint AS spent
    FROM agent_experiments e WHERE e.id = ${experimentId}`;
  if (!row) return "Its experiment was deleted.";
  if (row.error) return row.error;
  if (row.spent < row.cap) return null;
  const error = `Stopped at the experiment's cost cap: ${usd(Number(row.spent))} spent of ${usd(Number(row.cap))}.`;
  // The first run to get here says why; a concurrent one keeps the first one's words.
  const [kept] = await db.$queryRaw<{ error: string }[]>`
    UPDATE agent_experiments SET stop_reason = 'cost_cap', error = coalesce(error, ${error}),
      stopped_at = coalesce(stopped_at, now())
    WHERE id = ${experimentId} RETURNING error`;
  return kept?.error ?? error;
}

type ArmRun = Pick<
  SubagentTaskRun,
  "id" | "caseId" | "arm" | "status" | "stopReason" | "finalMessage" | "stepsCount" | "costMicros" | "label"
>;

/** One side of one case: its run, how it grades, the actions it chose. */
export interface ArmResult {
  run: ArmRun;
  ended: boolean;
  grades: Grade[];
  /** A rubric of it is still being graded: neither passed nor failed yet. */
  grading: boolean;
  /** What grading it against its rubrics cost. */
  gradingMicros: number;
  passed: boolean;
  /** The actions it chose, one line each (`add_comment {"text":"…"}`), for the side-by-side diff. */
  actions: string[];
}

export interface CaseResult {
  caseId: string | null;
  name: string;
  arms: Partial<Record<Arm, ArmResult>>;
}

export interface ExperimentResults {
  cases: CaseResult[];
  /** Its runs have all ended (or it was stopped and none is left running). */
  ended: boolean;
  spentMicros: number;
  /** Cases passed on each side, of those that ran to an end there. */
  passed: Record<Arm, number>;
  /** Who could read what its runs took in (each run's label, agents/policy/labels.ts). */
  sources: Audience[];
}

function armResult(
  run: ArmRun,
  steps: OutcomeStep[],
  testCase: AgentTestCase | undefined,
  rubrics: Map<string, RubricGrade> = new Map(),
): ArmResult {
  const ended = TERMINAL.includes(run.status);
  const grades =
    testCase && ended
      ? grade(outcomeOf(run, steps, 0, rubrics), storedExpectations(testCase.expectations))
      : [];
  const actions = attempts(steps).map(
    (attempt) => `${attempt.action} ${JSON.stringify(attempt.params)}${attempt.taken ? "" : " (refused)"}`,
  );
  const grading = grades.some((graded) => graded.pending);
  const gradingMicros = [...rubrics.values()].reduce((sum, graded) => sum + Number(graded.costMicros), 0);
  const passed = ended && !grading && grades.every((graded) => graded.passed);
  return { run, ended, grades, grading, gradingMicros, passed, actions };
}

/** Every case's two sides, graded now, in the order the cases were queued. */
export async function experimentResults(
  db: Db,
  experiment: Pick<AgentExperiment, "id">,
): Promise<ExperimentResults> {
  const runs = await db.subagentTaskRun.findMany({
    where: { experimentId: experiment.id },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    select: {
      id: true,
      caseId: true,
      arm: true,
      status: true,
      stopReason: true,
      finalMessage: true,
      stepsCount: true,
      costMicros: true,
      label: true,
    },
  });
  const caseIds = [...new Set(runs.flatMap((run) => (run.caseId ? [run.caseId] : [])))];
  const [cases, steps, rubrics] = await Promise.all([
    db.agentTestCase.findMany({ where: { id: { in: caseIds } } }),
    db.subagentTaskRunStep.findMany({
      where: { runId: { in: runs.map((run) => run.id) } },
      orderBy: [{ runId: "asc" }, { number: "asc" }],
      select: { runId: true, number: true, type: true, detail: true },
    }),
    rubricGradesOf(
      db,
      runs.map((run) => run.id),
    ),
  ]);
  const caseById = new Map(cases.map((testCase) => [testCase.id, testCase]));
  const stepsOf = new Map<string, OutcomeStep[]>();
  for (const step of steps) {
    const list = stepsOf.get(step.runId);
    if (list) list.push(step);
    else stepsOf.set(step.runId, [step]);
  }
  const byCase = new Map<string, CaseResult>();
  for (const run of runs) {
    const key = run.caseId ?? `deleted:${run.id}`;
    const testCase = run.caseId ? caseById.get(run.caseId) : undefined;
    const entry = byCase.get(key) ?? {
      caseId: run.caseId,
      name: testCase?.name ?? "(a deleted case)",
      arms: {},
    };
    entry.arms[(run.arm ?? "candidate") as Arm] = armResult(
      run,
      stepsOf.get(run.id) ?? [],
      testCase,
      rubrics.get(run.id),
    );
    byCase.set(key, entry);
  }
  const results = [...byCase.values()];
  const passedOn = (arm: Arm) => results.filter((result) => result.arms[arm]?.passed).length;
  const arms = results.flatMap((result) => Object.values(result.arms));
  return {
    cases: results,
    ended: runs.every((run) => TERMINAL.includes(run.status)) && !arms.some((arm) => arm.grading),
    spentMicros: arms.reduce((sum, arm) => sum + Number(arm.run.costMicros) + arm.gradingMicros, 0),
    passed: { current: passedOn("current"), candidate: passedOn("candidate") },
    sources: runs.flatMap((run) => parseLabel(run.label)),
  };
}

/** An agent's experiments, newest first, a page of them. */
export function listExperiments(db: Db, agentId: string, take: number) {
  return db.agentExperiment.findMany({
    where: { agentId },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take,
    include: { createdBy: { select: { handle: true, name: true } } },
  });
}
