// What the usage dashboards show, as pure views: plain data in (a loaded `Usage`, an agent's
// settings), markdown and chart blocks out. The pages that load the data are in usage.ts.

import { plural } from "../../lib/plural.ts";
import { responsiveChart } from "../money/chart.ts";
import { DAYS, projectMonth, type Slice, type Usage } from "../money/dashboard.ts";
import { usd, usdShares, usdTiny } from "../money/pricing.ts";
import { markdownToHtml } from "../registry/html.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import type { Block } from "../registry/types.ts";
import { excerpt, when } from "./format.ts";

export const count = (value: number) => value.toLocaleString("en-US");

/** A share of the input tokens as a whole percentage. */
const percentOf = (part: number, whole: number) => Math.round((100 * part) / whole);

/** Cached input tokens and their share of the input: what the provider's prompt cache served. */
const cachedOf = (totals: { input: number; cached: number }) =>
  totals.cached && totals.input
    ? `${count(totals.cached)} (${percentOf(totals.cached, totals.input)} %)`
    : count(totals.cached);

/** The month's tokens in a line, with the share of input its providers served from cache. */
export function monthTokens(month: { calls: number; input: number; cached: number; output: number }): string {
  const cached =
    month.cached && month.input
      ? ` (${percentOf(month.cached, month.input)} % of input served from the provider's cache)`
      : "";
  return `${count(month.calls)} model calls and ${count(month.input + month.output)} tokens this month${cached}`;
}

/** Dollars on a chart axis or tooltip: sub-cent days keep two significant digits instead of reading $0.000. */
function chartUsd(dollars: number): string {
  if (dollars === 0) return "$0";
  if (dollars >= 100) return `$${dollars.toFixed(0)}`;
  if (dollars >= 1) return `$${dollars.toFixed(2)}`;
  if (dollars >= 0.01) return `$${dollars.toFixed(3)}`;
  return `$${dollars.toLocaleString("en-US", { maximumSignificantDigits: 2 })}`;
}

/** A dollar tick on the spend axis, with as many decimals as its step needs. */
function usdTick(dollars: number, step: number): string {
  if (dollars === 0) return "$0";
  return `$${dollars.toFixed(step >= 1 ? 0 : step >= 0.01 ? 2 : 4)}`;
}

/** A token count in a tooltip: 1.25M, 12.5k or 830. */
function tokenCount(tokens: number): string {
  if (tokens >= 1e6) return `${(tokens / 1e6).toFixed(2)}M`;
  if (tokens >= 1e3) return `${(tokens / 1e3).toFixed(1)}k`;
  return tokens.toFixed(0);
}

/** One unit for the whole token axis: 0, 250k … 1,000k rather than a mix of k and M. */
function tokenTick(tokens: number, step: number): string {
  if (step * 4 >= 2e6) return `${(tokens / 1e6).toFixed(step >= 1e6 ? 0 : 1)}M`;
  if (step >= 1e3)
    return `${(tokens / 1e3).toLocaleString("en-US", { maximumFractionDigits: step >= 1e4 ? 0 : 1 })}k`;
  return tokens.toFixed(0);
}

const monthName = (date: Date) =>
  date.toLocaleDateString("en-US", { month: "long", year: "numeric", timeZone: "UTC" });

function dayTable(usage: Usage): string {
  const total = usage.last30;
  const cost = usdShares(
    usage.days.map((day) => day.costMicros),
    total.costMicros,
  );
  return [
    "| day | calls | input tokens | cached | output tokens | cost |",
    "|---|---|---|---|---|---|",
    ...usage.days.map(
      (day, index) =>
        `| ${day.day} | ${count(day.calls)} | ${count(day.input)} | ${count(day.cached)} | ${count(day.output)} | ${cost.parts[index]} |`,
    ),
    `| **${DAYS} days** | **${count(total.calls)}** | **${count(total.input)}** | **${cachedOf(total)}** | **${count(total.output)}** | **${cost.total}** |`,
  ].join("\n");
}

/** The last days as a table in markdown and as two charts in browsers, with the spend per day against a daily budget. */
export function charts(usage: Usage, dailyLimitMicros?: number): Block[] {
  const labels = usage.days.map((day) => day.day);
  const spend = responsiveChart({
    title: `Spend per day, last ${DAYS} days`,
    labels,
    series: [{ name: "cost", color: "#3b5bdb" }],
    values: usage.days.map((day) => [day.costMicros / 1e6]),
    empty: `Nothing spent in the last ${DAYS} days yet.`,
    format: chartUsd,
    axis: usdTick,
    marker: dailyLimitMicros
      ? { value: dailyLimitMicros / 1e6, label: `daily budget (${usd(Math.round(dailyLimitMicros))}/day)` }
      : undefined,
  });
  const tokens = responsiveChart({
    title: `Tokens per day, last ${DAYS} days`,
    labels,
    series: [
      { name: "uncached input", color: "#748ffc" },
      { name: "cached input", color: "#bac8ff" },
      { name: "output", color: "#f59f00" },
    ],
    values: usage.days.map((day) => [day.input - day.cached, day.cached, day.output]),
    whole: true,
    empty: `No tokens used in the last ${DAYS} days yet.`,
    format: tokenCount,
    axis: tokenTick,
  });
  return [
    {
      md: `## Last ${DAYS} days\n\n${dayTable(usage)}`,
      html: `<h2>Last ${DAYS} days</h2><h3 class="chart-title">Spend per day</h3>${spend}<h3 class="chart-title">Tokens per day</h3>${tokens}<details class="chart-data"><summary>The numbers</summary>${markdownToHtml(dayTable(usage))}</details>`,
    },
  ];
}

function sliceLabel(slice: Slice, what: string): string {
  if (slice.unpriced) return `⚠ ${code(slice.label)} (no price: counted as $0)`;
  return what === "model" ? code(slice.label) : mdEscape(slice.label);
}

/** Usage by model or by key. */
export function sliceTable(title: string, what: string, rows: Slice[]): string {
  if (!rows.length) return `## ${title}\n\n_No calls in the last ${DAYS} days._`;
  const cost = usdShares(rows.map((slice) => slice.costMicros));
  const body = rows.map(
    (slice, index) =>
      `| ${sliceLabel(slice, what)} | ${count(slice.calls)} | ${count(slice.input)} | ${cachedOf(slice)} | ${count(slice.output)} | ${cost.parts[index]} |`,
  );
  const note = rows.some((slice) => slice.unpriced)
    ? `\n\n⚠ Some models have no price: their calls are recorded at $0. A workspace admin can price them on ${link("the price list", "/usage/pricing")}.`
    : "";
  return `## ${title}\n\n| ${what} | calls | input | cached | output | cost |\n|---|---|---|---|---|---|\n${body.join("\n")}${note}`;
}

/** What trying the agent cost: dry runs are charged like any run, and counted apart here. */
export function evaluationBlock(usage: Usage): string {
  const { runs, tokens, costMicros, grades, gradingMicros } = usage.evaluation;
  if (!runs && !grades) return `## Evaluation\n\n_No dry runs in the last ${DAYS} days._`;
  const whole = usage.last30.costMicros;
  const share =
    whole > 0 ? ` (${Math.round((100 * costMicros) / whole)} % of the ${DAYS} days' ${usd(whole)})` : "";
  const what = grades
    ? `Dry runs started and rubric grades made in the last ${DAYS} days`
    : `Dry runs started in the last ${DAYS} days`;
  const counted = grades
    ? `${plural(runs, "run")} and ${plural(grades, "grade")} (${usdTiny(gradingMicros)} of it grading)`
    : plural(runs, "run");
  return `## Evaluation\n\n${what}: **${counted}, ${count(tokens)} tokens, ${usd(costMicros)}**${share}. They are in the totals above: trying an agent is charged like its work.`;
}

type TopRun = Usage["topRuns"][number];

const triggerWords = (run: TopRun) =>
  `_${mdEscape(run.triggerKind)}${run.triggerId ? ` \`${run.triggerId}\`` : ""}_`;

function topRunRow(run: TopRun, readable: Set<string>, oneAgent: boolean): string {
  const started = link(when(run.createdAt), `/subagents/${run.agentHandle}/runs/${run.runId}`);
  const agent = oneAgent ? "" : ` @${run.agentHandle} |`;
  const task = readable.has(run.runId) ? mdEscape(excerpt(run.task, 60)) : triggerWords(run);
  return `| ${started} |${agent} ${task} | ${run.status} | ${count(run.steps)} | ${count(run.tokens)} | ${usd(run.costMicros)} |`;
}

/**
 * The costliest runs; one agent's page leaves out the agent column. A run whose label the
 * reader is outside (a workspace admin reading an agent they do not manage) shows what woke
 * it, not its task: a task quotes what woke it ("…mentioned you in the note “…”").
 */
export function topRunsTable(usage: Usage, readable: Set<string>, oneAgent = false): string {
  if (!usage.topRuns.length) return `## Top runs by cost\n\n_No runs in the last ${DAYS} days._`;
  return [
    "## Top runs by cost",
    "",
    `| run |${oneAgent ? "" : " agent |"} task | status | steps | tokens | cost |`,
    `|---|${oneAgent ? "" : "---|"}---|---|---|---|---|`,
    ...usage.topRuns.map((run) => topRunRow(run, readable, oneAgent)),
  ].join("\n");
}

/** Where the limit stands after spend at the limit has already paused the agent, or where the month is heading. */
function paceWords(spent: number, projected: number, limitMicros?: number, digits = 2): string {
  // Spend at the limit has already paused the agent (the ledger pauses it with the call that
  // gets there): say so, rather than that it will pause some day.
  if (limitMicros !== undefined && spent >= limitMicros)
    return "**limit reached**: it pauses and runs no more until its limit is raised";
  const over = limitMicros !== undefined && projected > limitMicros;
  return `on pace for **${usd(projected, digits)}** by month end${over ? " — **over the limit**: it will pause when it gets there" : ""}`;
}

/** The month so far, against a limit when there is one, and where it is heading. */
export function monthLine(spent: number, now: Date, limitMicros?: number, digits: 2 | 4 = 2): string {
  let soFar = `**${monthName(now)} so far: ${usd(spent, digits)}**`;
  if (limitMicros !== undefined) {
    const percent = limitMicros > 0 ? Math.round((spent / limitMicros) * 100) : 100;
    soFar += ` of its ${usd(limitMicros, digits)} limit (${percent}%)`;
  }
  return [soFar, paceWords(spent, projectMonth(spent, now), limitMicros, digits)].join(" · ");
}
