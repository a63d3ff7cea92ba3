// How a run and its steps read, in markdown and in HTML: the run page, its live stream and
// the step's own page all show them through these functions, so a step that arrives live
// is the step a reload shows.
import type { RunStatus, SubagentTaskRun, SubagentTaskRunStep } from "../../generated/prisma/client.ts";
import { describeMasked, type MaskCounts } from "../agents/core/secret-masking.ts";
import { usd } from "../money/pricing.ts";
import { escapeHtml, inlineHtml, markdownToHtml } from "../registry/html.ts";
import { fenced, link, mdEscape, quote } from "../registry/markdown.ts";
import type { Block } from "../registry/types.ts";
import { rehearsedOf, wouldHave } from "./run-dry.ts";

/** A run's status as its watchers see it: a running run its owner asked to stop is `stopping`, to pause `pausing`. */
export type RunState = RunStatus | "stopping" | "pausing";

export const ENDED: ReadonlySet<RunState> = new Set([
  "completed",
  "failed",
  "cancelled",
  "timed_out",
  "skipped",
]);

export function runState(
  run: Pick<SubagentTaskRun, "status" | "stopRequestedAt"> & { pauseRequestedAt?: Date | null },
): RunState {
  if (run.status !== "running") return run.status;
  return run.stopRequestedAt ? "stopping" : run.pauseRequestedAt ? "pausing" : "running";
}

const STATE_WORDS: Partial<Record<RunState, string>> = {
  stopping: "running — stopping…",
  pausing: "running — pausing after this step…",
};

// A long run folds its steps: past this many, all but the last few show as their headline.
const FOLD_AFTER = 8;
const OPEN_AT_END = 3;
const PAGE_START = 600;

export type StepRow = Pick<
  SubagentTaskRunStep,
  "number" | "type" | "path" | "detail" | "inputTokens" | "outputTokens" | "durationMs" | "modelText"
> & { replayed?: boolean };

export const runPath = (handle: string, runId: string) => `/subagents/${handle}/runs/${runId}`;
export const stepPath = (handle: string, runId: string, stepNumber: number) =>
  `${runPath(handle, runId)}/steps/${stepNumber}`;

const detailOf = (step: Pick<StepRow, "detail">) => (step.detail ?? {}) as Record<string, unknown>;

export function stepHead(step: StepRow): string {
  const detail = detailOf(step);
  const head = `${step.number} · ${step.type}${step.path ? ` \`${step.path}\`` : ""}${detail.ok === false ? " · **failed**" : ""}`;
  // A replay's copied steps say so: recorded by the original run, not done again.
  if (step.replayed) return `${head} · replayed from the original run, not done again`;
  // A fallback model answered (runtime/fallback.ts): said on the step, since the run names its own model.
  const fallbackNote =
    typeof detail.model === "string" ? ` · answered by fallback \`${mdEscape(detail.model)}\`` : "";
  return `${head} · ${step.inputTokens} in / ${step.outputTokens} out tokens · ${step.durationMs} ms${fallbackNote}`;
}

/** What the model said and meant: its text beside the call, its reason, its note. */
function stepWords(step: StepRow, detail: Record<string, unknown>): string[] {
  const lines: string[] = [];
  if (detail.masked && typeof detail.masked === "object")
    lines.push(`Masked before the model saw this step: ${describeMasked(detail.masked as MaskCounts)}.`, "");
  if (step.modelText) lines.push("The model wrote:", "", quote(step.modelText), "");
  if (typeof detail.reason === "string" && detail.reason) lines.push(`Why: ${mdEscape(detail.reason)}`, "");
  if (typeof detail.note === "string" && detail.note)
    lines.push("Its note (its memory for this run):", "", quote(detail.note), "");
  return lines;
}

/** What the step did and what came of it. */
function stepOutcome(step: StepRow, detail: Record<string, unknown>): string[] {
  const lines: string[] = [];
  if (step.type === "execute")
    lines.push(
      `Action \`${String(detail.action)}\` with:`,
      "",
      fenced(JSON.stringify(detail.params ?? {}, null, 2).slice(0, 2000), "json"),
      "",
    );
  if (detail.ok === false && detail.error) lines.push(`Error: ${mdEscape(String(detail.error))}`, "");
  const rehearsed = rehearsedOf(step);
  if (rehearsed) lines.push(`Dry run: it ${wouldHave(rehearsed)}; nothing was done.`, "");
  if (detail.notice)
    lines.push(
      `Result: ${mdEscape(String(detail.notice))}${detail.location ? ` → ${link(String(detail.location), String(detail.location))}` : ""}`,
      "",
    );
  if (step.type === "finish") lines.push(quote(String(detail.message ?? "")), "");
  if (step.type === "ask_owner") lines.push("Asked:", "", quote(String(detail.question ?? "")), "");
  if (step.type === "answer") lines.push("Owner answered:", "", quote(String(detail.answer ?? "")), "");
  if (step.type === "approval")
    lines.push(
      `Review of #${String(detail.pending)} (\`${String(detail.action)}\`): **${String(detail.status)}**${detail.message ? ` — ${mdEscape(String(detail.message))}` : ""}`,
      "",
    );
  if (step.type === "error" && typeof detail.reply === "string")
    lines.push("The model replied:", "", fenced(detail.reply.slice(0, 600)), "");
  // A reply with several tool calls: only the first ran, and the next prompt said so.
  if (Array.isArray(detail.unrun) && detail.unrun.length)
    lines.push(
      `Not run (the reply called ${detail.unrun.length + 1} tools; only the first runs, and the model was told): ${detail.unrun.map((n) => `\`${String(n)}\``).join(", ")}`,
      "",
    );
  return lines;
}

/** What the model said, what the step did and what came of it, in markdown. */
export function stepText(step: StepRow): string {
  const detail = detailOf(step);
  return [...stepWords(step, detail), ...stepOutcome(step, detail)].join("\n").trim();
}

/** The start of the page the step saw (fenced), its length, and a link to its whole page and prompt. */
function stepPage(step: StepRow, detailPath: string) {
  const detail = detailOf(step);
  const page = typeof detail.page === "string" ? detail.page : null;
  return {
    length: page?.length ?? 0,
    start:
      page === null
        ? null
        : fenced(page.length > PAGE_START ? `${page.slice(0, PAGE_START)}\n…` : page, "markdown"),
    more:
      page !== null || detail.prompt
        ? link(`The whole page and prompt of step ${step.number}`, detailPath)
        : null,
  };
}

export function stepMarkdown(step: StepRow, detailPath: string): string {
  const { length, start, more } = stepPage(step, detailPath);
  const seen = start && `Page seen (start, ${length} characters):\n\n${start}`;
  return [`### ${stepHead(step)}`, stepText(step), seen, more].filter(Boolean).join("\n\n");
}

/** A step as a fold: its headline always shows, the rest when open, the page it saw in a fold of its own. */
export function stepHtml(step: StepRow, detailPath: string, open: boolean): string {
  const { length, start, more } = stepPage(step, detailPath);
  const seen = start
    ? `<details class="seen"><summary>The page it saw (${length} characters)</summary>${markdownToHtml(start)}</details>`
    : "";
  return `<details class="step" id="step-${step.number}" data-step="${step.number}"${open ? " open" : ""}><summary>${inlineHtml(stepHead(step))}</summary>${markdownToHtml(stepText(step))}${seen}${more ? `<p>${inlineHtml(more)}</p>` : ""}</details>`;
}

/** The steps section. `#run-steps` is where live steps are added. */
export function stepsBlock(steps: StepRow[], handle: string, runId: string): Block {
  const head = `## Steps (${steps.length})`;
  const detail = (step: StepRow) => stepPath(handle, runId, step.number);
  const folded = steps.length > FOLD_AFTER ? steps.length - OPEN_AT_END : 0;
  const none = steps.length ? "" : "_No steps yet._";
  return {
    md: [head, none, ...steps.map((s) => stepMarkdown(s, detail(s)))].filter(Boolean).join("\n\n"),
    html: `<h2 id="steps">${escapeHtml(`Steps (${steps.length})`)}</h2>${folded ? `<p class="fold-note">${folded} earlier steps are folded: open one to read it.</p>` : ""}<div id="run-steps">${none ? markdownToHtml(none) : ""}${steps.map((s, i) => stepHtml(s, detail(s), i >= folded)).join("")}</div>`,
  };
}

export type ProgressRow = Partial<Pick<SubagentTaskRun, "pauseRequestedAt">> &
  Pick<
    SubagentTaskRun,
    | "status"
    | "stopRequestedAt"
    | "stopReason"
    | "stepsCount"
    | "maxSteps"
    | "inputTokens"
    | "cachedTokens"
    | "cacheWriteTokens"
    | "outputTokens"
    | "costMicros"
    | "startedAt"
    | "completedAt"
  >;

function duration(run: ProgressRow): string {
  if (!run.startedAt) return "not started";
  const end = run.completedAt ?? new Date();
  return `${((end.getTime() - run.startedAt.getTime()) / 1000).toFixed(1)} s${run.completedAt ? "" : " so far"}`;
}

/** What of the input the provider's prompt cache served or took in (both are inside "in"). */
function cacheNote(run: ProgressRow): string {
  const parts = [
    run.cachedTokens ? `${run.cachedTokens} cached` : "",
    run.cacheWriteTokens ? `${run.cacheWriteTokens} written to cache` : "",
  ].filter(Boolean);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

/** Status, steps, tokens, cost and time: the line that moves while a run works. */
export function progressLine(run: ProgressRow): string {
  const state = runState(run);
  return [
    `Status: **${STATE_WORDS[state] ?? state}**${run.stopReason && !STATE_WORDS[state] && state !== "paused" ? ` (${run.stopReason})` : ""}`,
    `steps: ${run.stepsCount} of ${run.maxSteps}`,
    `tokens: ${run.inputTokens} in${cacheNote(run)} / ${run.outputTokens} out`,
    `cost: ${usd(run.costMicros)}`,
    `time: ${duration(run)}`,
  ].join(" · ");
}

export function progressHtml(run: ProgressRow): string {
  return `<p id="run-progress" data-state="${runState(run)}">${inlineHtml(progressLine(run))}</p>`;
}
