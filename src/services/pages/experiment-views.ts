// An experiment's results as views (pure: loaded results in, markdown and CSV out): each case's
// expectations on the current settings and on the candidate side by side, with steps, cost,
// the dry runs and a diff of the actions each side chose. agent-experiments.ts loads them.
import type { AgentExperiment } from "../../generated/prisma/client.ts";
import { diffText, lineDiff } from "../../lib/line-diff.ts";
import { expectationWords } from "../agents/core/expectations.ts";
import type { ArmResult, CaseResult, ExperimentResults } from "../agents/core/experiments.ts";
import { gradeMark } from "../agents/core/grading.ts";
import { usd, usdTiny } from "../money/pricing.ts";
import { fenced, link, mdEscape } from "../registry/markdown.ts";
import { runPath } from "./run-steps.ts";

type Experiment = Pick<AgentExperiment, "candidateWords" | "baselineVersion" | "costCapMicros" | "error">;

/** "Current settings (version 3)" and the candidate's words. */
export const sideNames = (experiment: Experiment) => ({
  current: `Current settings${experiment.baselineVersion ? ` (version ${experiment.baselineVersion})` : ""}`,
  candidate: `Candidate: ${experiment.candidateWords}`,
});

/** Where it stands: running, stopped and why, or ended. */
export function stateWords(experiment: Experiment, results: ExperimentResults): string {
  const spent = `${usd(results.spentMicros)} of its ${usd(Number(experiment.costCapMicros))} cap`;
  if (experiment.error && results.ended) return `**Stopped**: ${mdEscape(experiment.error)} (${spent})`;
  if (experiment.error)
    return `**Stopping**: ${mdEscape(experiment.error)} Its runs still out end at their next step (${spent}).`;
  return `${results.ended ? "**Ended**" : "**Running**"}: ${spent} spent`;
}

/** "passes 3 of 4 cases", on each side. */
export function summaryLine(experiment: Experiment, results: ExperimentResults): string {
  const names = sideNames(experiment);
  const of = results.cases.length;
  return `${names.current}: passes **${results.passed.current} of ${of}** · ${names.candidate}: passes **${results.passed.candidate} of ${of}**`;
}

const cell = (arm: ArmResult | undefined, index: number) => {
  if (!arm) return "—";
  if (!arm.ended) return "_running_";
  const graded = arm.grades[index];
  // Its words are markdown already (grading.ts): a table cell takes them as they are.
  return graded ? `${gradeMark(graded)} ${graded.why}` : "—";
};

const runCell = (handle: string, arm: ArmResult | undefined) =>
  arm
    ? `${link(`dry run ${arm.run.id}`, runPath(handle, arm.run.id))} · ${arm.run.status} · ${arm.run.stepsCount} steps · ${usd(Number(arm.run.costMicros))}${arm.gradingMicros ? ` · graded for ${usdTiny(arm.gradingMicros)}` : ""}`
    : "—";

/** One case: its expectations as rows, each side a column; its runs; the actions each chose. */
export function caseBlock(handle: string, experiment: Experiment, result: CaseResult): string {
  const { current, candidate } = result.arms;
  const names = sideNames(experiment);
  const graded = current?.grades.length ? current.grades : (candidate?.grades ?? []);
  const verdict = (arm?: ArmResult) =>
    !arm?.ended ? "…" : arm.grading ? "… grading" : arm.passed ? "✓ passes" : "✗ fails";
  const rows = graded.map(
    (row, index) =>
      `| ${expectationWords(row.expectation)} | ${cell(current, index)} | ${cell(candidate, index)} |`,
  );
  const diff = lineDiff((current?.actions ?? []).join("\n"), (candidate?.actions ?? []).join("\n"));
  return [
    `### ${mdEscape(result.name)} — current ${verdict(current)}, candidate ${verdict(candidate)}`,
    "",
    `| expectation | ${mdEscape(names.current)} | ${mdEscape(names.candidate)} |`,
    "|---|---|---|",
    ...rows,
    `| **run** | ${runCell(handle, current)} | ${runCell(handle, candidate)} |`,
    "",
    diff.length
      ? `Actions chosen, current (−) against candidate (+):\n\n${fenced(diffText(diff), "diff")}`
      : "Neither side chose an action.",
  ].join("\n");
}

const CSV_HEADER = ["case", "expectation", "current", "candidate", "current_why", "candidate_why"];

/** The results as CSV rows: one per case and expectation, then one per case for its runs. */
export function resultRows(results: ExperimentResults): unknown[][] {
  const rows: unknown[][] = [CSV_HEADER];
  const mark = (arm: ArmResult | undefined, index: number) => {
    if (!arm) return "";
    if (!arm.ended) return "running";
    const graded = arm.grades[index];
    return graded?.pending ? "grading" : graded?.passed ? "pass" : "fail";
  };
  for (const result of results.cases) {
    const { current, candidate } = result.arms;
    const graded = current?.grades.length ? current.grades : (candidate?.grades ?? []);
    graded.forEach((row, index) => {
      rows.push([
        result.name,
        expectationWords(row.expectation),
        mark(current, index),
        mark(candidate, index),
        current?.grades[index]?.why ?? "",
        candidate?.grades[index]?.why ?? "",
      ]);
    });
    const runs = (arm?: ArmResult) =>
      arm
        ? `${arm.run.id} ${arm.run.status} ${arm.run.stepsCount} steps ${usd(arm.run.costMicros, 6)}${arm.gradingMicros ? ` graded ${usd(arm.gradingMicros, 6)}` : ""}`
        : "";
    rows.push([result.name, "(run)", runs(current), runs(candidate), "", ""]);
  }
  return rows;
}
