// How a run and its steps read, in markdown and in HTML: the run page, its live stream and
// the step's own page all show them through these functions, so a step that arrives live
// is the step a reload shows.
import type { RunStatus, SubagentTaskRun, SubagentTaskRunStep } from "../../generated/prisma/client.ts";
import { describeMasked, type MaskCounts } from "../agents/core/secret-masking.ts";
import { usd } from "../money/pricing.ts";
import { escapeHtml, inlineHtml, markdownToHtml } from "../registry/html.ts";
import { fenced, link, mdEscape, quote } from "../registry/markdown.ts";
import type { Block } from "../registry/types.ts";

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
  r: Pick<SubagentTaskRun, "status" | "stopRequestedAt"> & { pauseRequestedAt?: Date | null },
): RunState {
  if (r.status !== "running") return r.status;
  return r.stopRequestedAt ? "stopping" : r.pauseRequestedAt ? "pausing" : "running";
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
export const stepPath = (handle: string, runId: string, n: number) => `${runPath(handle, runId)}/steps/${n}`;

const detailOf = (s: Pick<StepRow, "detail">) => (s.detail ?? {}) as Record<string, unknown>;

export function stepHead(s: StepRow): string {
  const d = detailOf(s);
  const head = `${s.number} · ${s.type}${s.path ? ` \`${s.path}\`` : ""}${d.ok === false ? " · **failed**" : ""}`;
  // A replay's copied steps say so: recorded by the original run, not done again.
  if (s.replayed) return `${head} · replayed from the original run, not done again`;
  // A fallback model answered (runtime/fallback.ts): said on the step, since the run names its own model.
  const by = typeof d.model === "string" ? ` · answered by fallback \`${mdEscape(d.model)}\`` : "";
  return `${head} · ${s.inputTokens} in / ${s.outputTokens} out tokens · ${s.durationMs} ms${by}`;
}

/** What the model said and meant: its text beside the call, its reason, its note. */
function stepWords(s: StepRow, d: Record<string, unknown>): string[] {
  const lines: string[] = [];
  if (d.masked && typeof d.masked === "object")
    lines.push(`Masked before the model saw this step: ${describeMasked(d.masked as MaskCounts)}.`, "");
  if (s.modelText) lines.push("The model wrote:", "", quote(s.modelText), "");
  if (typeof d.reason === "string" && d.reason) lines.push(`Why: ${mdEscape(d.reason)}`, "");
  if (typeof d.note === "string" && d.note)
    lines.push("Its note (its memory for this run):", "", quote(d.note), "");
  return lines;
}

/** What the step did and what came of it. */
function stepOutcome(s: StepRow, d: Record<string, unknown>): string[] {
  const lines: string[] = [];
  if (s.type === "execute")
    lines.push(
      `Action \`${String(d.action)}\` with:`,
      "",
      fenced(JSON.stringify(d.params ?? {}, null, 2).slice(0, 2000), "json"),
      "",
    );
  if (d.ok === false && d.error) lines.push(`Error: ${mdEscape(String(d.error))}`, "");
  if (d.notice)
    lines.push(
      `Result: ${mdEscape(String(d.notice))}${d.location ? ` → ${link(String(d.location), String(d.location))}` : ""}`,
      "",
    );
  if (s.type === "finish") lines.push(quote(String(d.message ?? "")), "");
  if (s.type === "ask_owner") lines.push("Asked:", "", quote(String(d.question ?? "")), "");
  if (s.type === "answer") lines.push("Owner answered:", "", quote(String(d.answer ?? "")), "");
  if (s.type === "approval")
    lines.push(
      `Review of #${String(d.pending)} (\`${String(d.action)}\`): **${String(d.status)}**${d.message ? ` — ${mdEscape(String(d.message))}` : ""}`,
      "",
    );
  if (s.type === "error" && typeof d.reply === "string")
    lines.push("The model replied:", "", fenced(d.reply.slice(0, 600)), "");
  // A reply with several tool calls: only the first ran, and the next prompt said so.
  if (Array.isArray(d.unrun) && d.unrun.length)
    lines.push(
      `Not run (the reply called ${d.unrun.length + 1} tools; only the first runs, and the model was told): ${d.unrun.map((n) => `\`${String(n)}\``).join(", ")}`,
      "",
    );
  return lines;
}

/** What the model said, what the step did and what came of it, in markdown. */
export function stepText(s: StepRow): string {
  const d = detailOf(s);
  return [...stepWords(s, d), ...stepOutcome(s, d)].join("\n").trim();
}

/** The start of the page the step saw (fenced), its length, and a link to its whole page and prompt. */
function stepPage(s: StepRow, detailPath: string) {
  const d = detailOf(s);
  const page = typeof d.page === "string" ? d.page : null;
  return {
    length: page?.length ?? 0,
    start:
      page === null
        ? null
        : fenced(page.length > PAGE_START ? `${page.slice(0, PAGE_START)}\n…` : page, "markdown"),
    more:
      page !== null || d.prompt ? link(`The whole page and prompt of step ${s.number}`, detailPath) : null,
  };
}

export function stepMarkdown(s: StepRow, detailPath: string): string {
  const { length, start, more } = stepPage(s, detailPath);
  const seen = start && `Page seen (start, ${length} characters):\n\n${start}`;
  return [`### ${stepHead(s)}`, stepText(s), seen, more].filter(Boolean).join("\n\n");
}

/** A step as a fold: its headline always shows, the rest when open, the page it saw in a fold of its own. */
export function stepHtml(s: StepRow, detailPath: string, open: boolean): string {
  const { length, start, more } = stepPage(s, detailPath);
  const seen = start
    ? `<details class="seen"><summary>The page it saw (${length} characters)</summary>${markdownToHtml(start)}</details>`
    : "";
  return `<details class="step" id="step-${s.number}" data-step="${s.number}"${open ? " open" : ""}><summary>${inlineHtml(stepHead(s))}</summary>${markdownToHtml(stepText(s))}${seen}${more ? `<p>${inlineHtml(more)}</p>` : ""}</details>`;
}

/** The steps section. `#run-steps` is where live steps are added. */
export function stepsBlock(steps: StepRow[], handle: string, runId: string): Block {
  const head = `## Steps (${steps.length})`;
  const detail = (s: StepRow) => stepPath(handle, runId, s.number);
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

function duration(r: ProgressRow): string {
  if (!r.startedAt) return "not started";
  const end = r.completedAt ?? new Date();
  return `${((end.getTime() - r.startedAt.getTime()) / 1000).toFixed(1)} s${r.completedAt ? "" : " so far"}`;
}

/** What of the input the provider's prompt cache served or took in (both are inside "in"). */
function cacheNote(r: ProgressRow): string {
  const parts = [
    r.cachedTokens ? `${r.cachedTokens} cached` : "",
    r.cacheWriteTokens ? `${r.cacheWriteTokens} written to cache` : "",
  ].filter(Boolean);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

/** Status, steps, tokens, cost and time: the line that moves while a run works. */
export function progressLine(r: ProgressRow): string {
  const state = runState(r);
  return [
    `Status: **${STATE_WORDS[state] ?? state}**${r.stopReason && !STATE_WORDS[state] && state !== "paused" ? ` (${r.stopReason})` : ""}`,
    `steps: ${r.stepsCount} of ${r.maxSteps}`,
    `tokens: ${r.inputTokens} in${cacheNote(r)} / ${r.outputTokens} out`,
    `cost: ${usd(r.costMicros)}`,
    `time: ${duration(r)}`,
  ].join(" · ");
}

export function progressHtml(r: ProgressRow): string {
  return `<p id="run-progress" data-state="${runState(r)}">${inlineHtml(progressLine(r))}</p>`;
}
