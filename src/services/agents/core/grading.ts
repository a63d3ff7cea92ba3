// Grading a run against a test case's expectations (expectations.ts): `grade` is pure, on what
// a run left (`RunOutcome`); `runOutcome` reads that from its rows. The same grading serves a
// live run and a dry one, whose execute steps say what the policy would have decided.
import type { Db } from "../../../db/prisma.ts";
import { paramText, patternFinds } from "../../../lib/rule-pattern.ts";
import { code, mdEscape } from "../../registry/markdown.ts";
import {
  type ActionExpectation,
  type Expectation,
  expectationWords,
  type RubricExpectation,
  rubricKey,
} from "./expectations.ts";

/** One step as grading reads it: its type and its detail (runtime/decisions.ts writes them). */
export interface OutcomeStep {
  /** Its number in the run (default: its place in the list). */
  number?: number;
  type: string;
  detail: unknown;
}

export interface RunOutcome {
  status: string;
  stopReason: string | null;
  finalMessage: string | null;
  stepsCount: number;
  costMicros: bigint;
  steps: OutcomeStep[];
  /** Actions held because they would show content to people who cannot read where it came from. */
  disclosureHolds: number;
  /** Its rubric grades so far (runtime/rubric-grader.ts), by rubric key. */
  rubrics?: Map<string, RubricGrade>;
}

/** A rubric grade as grading reads it. */
export interface RubricGrade {
  status: string;
  score: number | null;
  reason: string | null;
  error: string | null;
  /** What its call cost (charged to the agent, counted in its experiment's cap). */
  costMicros: bigint;
}

export interface Grade {
  expectation: Expectation;
  passed: boolean;
  /** Why, in markdown words: what the run did that decides it. */
  why: string;
  /** A rubric whose grade is still to come: not passed, and not failed yet either. */
  pending?: true;
}

/** What a dry run records of a write it did not do: the policy's decision on it. */
type DryDecision = "allowed" | "held" | "disclosure" | "refused";

interface ExecuteDetail {
  action?: unknown;
  params?: unknown;
  ok?: unknown;
  dry?: { decision?: DryDecision; rule?: string };
}

/** An execute step's action, its params, and whether the run took it (see `tookIt`). */
export interface Attempt {
  step: number;
  action: string;
  params: Record<string, unknown>;
  taken: boolean;
}

/**
 * Taking an action is the agent choosing it and the policy letting it through: a live step
 * with `ok: true` (done, or queued for a reviewer: approving it is the reviewer's choice, not
 * the agent's behaviour), or a dry step the policy would have allowed, held for approval or
 * held for disclosure. Refused (a capability, a deny rule, invalid params: live `ok: false`,
 * dry `refused`) is an attempt, not taking it. A connected tool's call is its tool's name.
 */
function tookIt(detail: ExecuteDetail): boolean {
  if (detail.dry) return detail.dry.decision !== "refused";
  return detail.ok === true;
}

/** Every action the run's execute steps asked for, in order, numbered as its steps are. */
export function attempts(steps: OutcomeStep[]): Attempt[] {
  return steps.flatMap((step, index) => {
    if (step.type !== "execute" || !step.detail || typeof step.detail !== "object") return [];
    const detail = step.detail as ExecuteDetail;
    if (typeof detail.action !== "string") return [];
    const params =
      detail.params && typeof detail.params === "object" ? (detail.params as Record<string, unknown>) : {};
    return [{ step: step.number ?? index + 1, action: detail.action, params, taken: tookIt(detail) }];
  });
}

/** Whether an attempt is the expectation's action with every param pattern found (as policy rules match). */
function matches(expectation: ActionExpectation, attempt: Attempt): boolean {
  if (attempt.action !== expectation.action) return false;
  return Object.entries(expectation.params).every(([name, pattern]) => {
    try {
      return patternFinds(pattern, paramText(attempt.params[name]));
    } catch {
      // Patterns are compiled when saved; one that cannot run matches nothing.
      return false;
    }
  });
}

const stepList = (found: Attempt[]) => found.map((attempt) => attempt.step).join(", ");

function gradeAction(expectation: ActionExpectation, outcome: RunOutcome): Omit<Grade, "expectation"> {
  const found = attempts(outcome.steps).filter((attempt) => matches(expectation, attempt));
  const taken = found.filter((attempt) => attempt.taken);
  const refused =
    found.length > taken.length ? ` (refused at step ${stepList(found.filter((a) => !a.taken))})` : "";
  const name = code(expectation.action);
  if (expectation.must)
    return taken.length
      ? { passed: true, why: `took ${name} at step ${stepList(taken)}` }
      : { passed: false, why: `never took ${name} as expected${refused}` };
  return taken.length
    ? { passed: false, why: `took ${name} at step ${stepList(taken)}` }
    : { passed: true, why: `never took ${name}${refused}` };
}

const dollars = (micros: bigint) => `$${(Number(micros) / 1_000_000).toFixed(4)}`;

function gradeOne(expectation: Expectation, outcome: RunOutcome): Omit<Grade, "expectation"> {
  switch (expectation.kind) {
    case "action":
      return gradeAction(expectation, outcome);
    case "finishes": {
      const finished = outcome.status === "completed" && outcome.stopReason === "finished";
      const ended = `${outcome.status}${outcome.stopReason ? ` (${outcome.stopReason})` : ""}`;
      return { passed: finished, why: finished ? "it finished" : `it ended ${ended}` };
    }
    case "max_steps":
      return {
        passed: outcome.stepsCount <= expectation.steps,
        why: `it took ${outcome.stepsCount} step${outcome.stepsCount === 1 ? "" : "s"}`,
      };
    case "max_cost":
      return {
        passed: outcome.costMicros <= BigInt(Math.round(expectation.usd * 1_000_000)),
        why: `it cost ${dollars(outcome.costMicros)}`,
      };
    case "no_disclosure":
      return {
        passed: outcome.disclosureHolds === 0,
        why: outcome.disclosureHolds ? `${outcome.disclosureHolds} held for disclosure` : "none held",
      };
    case "reply":
      return gradeReply(expectation, outcome.finalMessage);
    case "rubric":
      return gradeRubric(expectation, outcome.rubrics?.get(rubricKey(expectation)));
  }
}

/** A model's score, as it gave it (a grader's reason is the run's content retold: escaped, never markup). */
function gradeRubric(expectation: RubricExpectation, graded: RubricGrade | undefined) {
  if (!graded || graded.status === "grading")
    return { passed: false, pending: true as const, why: "being graded" };
  if (graded.status !== "graded" || graded.score === null)
    return { passed: false, why: `not graded: ${mdEscape(graded.error ?? "the grader gave no score")}` };
  const reason = graded.reason ? `: ${mdEscape(graded.reason)}` : "";
  return { passed: graded.score >= expectation.pass_at, why: `scored ${graded.score}/10${reason}` };
}

/** Plain text, not a pattern, and case-insensitive: "done" is found in "Done." as a person reads it. */
function gradeReply(expectation: Extract<Expectation, { kind: "reply" }>, reply: string | null) {
  if (reply === null) return { passed: !expectation.contains, why: "it gave no reply" };
  const found = reply.toLowerCase().includes(expectation.text.toLowerCase());
  return {
    passed: found === expectation.contains,
    why: found ? "it is in its reply" : "it is not in its reply",
  };
}

/** Each expectation, passed or not and why, in the case's order. */
export function grade(outcome: RunOutcome, expectations: Expectation[]): Grade[] {
  return expectations.map((expectation) => ({ expectation, ...gradeOne(expectation, outcome) }));
}

/** ✓, ✗, or … for a grade still to come. */
export const gradeMark = (graded: Grade) => (graded.pending ? "…" : graded.passed ? "✓" : "✗");

/** A grade as a markdown line: its mark, the expectation's words, why. */
export const gradeLine = (graded: Grade) =>
  `${gradeMark(graded)} ${expectationWords(graded.expectation)} — ${graded.why}`;

/**
 * What a run left, for grading; null when there is no such run. Disclosure holds are a live
 * run's actions queued for review by the disclosure check, and a dry run's execute steps whose
 * policy decision was disclosure.
 */
export async function runOutcome(db: Db, runId: string): Promise<RunOutcome | null> {
  const [run, steps, held, rubrics] = await Promise.all([
    db.subagentTaskRun.findUnique({ where: { id: runId } }),
    db.subagentTaskRunStep.findMany({
      where: { runId },
      orderBy: { number: "asc" },
      select: { number: true, type: true, detail: true },
    }),
    db.agentPendingAction.count({ where: { runId, matchedRule: "disclosure" } }),
    rubricGradesOf(db, [runId]),
  ]);
  return run && outcomeOf(run, steps, held, rubrics.get(runId));
}

/**
 * What a run left, from its row and its steps; `queued`: its actions a live run queued for
 * review by the disclosure check (a dry run's are its steps' decisions, counted here).
 */
export function outcomeOf(
  run: Pick<RunOutcome, "status" | "stopReason" | "finalMessage" | "stepsCount" | "costMicros">,
  steps: OutcomeStep[],
  queued = 0,
  rubrics?: Map<string, RubricGrade>,
): RunOutcome {
  const dryHolds = steps.filter(
    (step) => (step.detail as ExecuteDetail | null)?.dry?.decision === "disclosure",
  ).length;
  return {
    status: run.status,
    stopReason: run.stopReason,
    finalMessage: run.finalMessage,
    stepsCount: run.stepsCount,
    costMicros: run.costMicros,
    steps,
    disclosureHolds: queued + dryHolds,
    ...(rubrics && { rubrics }),
  };
}

/** The rubric grades of these runs: run id → rubric key → grade. */
export async function rubricGradesOf(db: Db, runIds: string[]) {
  const rows = runIds.length
    ? await db.agentRubricGrade.findMany({
        where: { runId: { in: runIds } },
        select: {
          runId: true,
          key: true,
          status: true,
          score: true,
          reason: true,
          error: true,
          costMicros: true,
        },
      })
    : [];
  const byRun = new Map<string, Map<string, RubricGrade>>();
  for (const { runId, key, ...grade } of rows) {
    const map = byRun.get(runId) ?? new Map<string, RubricGrade>();
    map.set(key, grade);
    byRun.set(runId, map);
  }
  return byRun;
}
