// Usage dashboards: an agent's, yours (all your agents), and — for workspace admins —
// the whole workspace's. Charts are SVG in browsers and tables in markdown.
import { ForbiddenError } from "../../lib/errors.ts";
import { loadStudio } from "../access.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { agentConfig, tenantSettings } from "../agents/core/settings.ts";
import { responsiveChart } from "../money/chart.ts";
import {
  DAYS,
  loadUsage,
  projectMonth,
  type Slice,
  type Usage,
  type UsageFilter,
} from "../money/dashboard.ts";
import { toMicros } from "../money/ledger.ts";
import { PRICE_LIST, PRICE_LIST_VERSION, type Price, usd, writeRate } from "../money/pricing.ts";
import { markdownToHtml } from "../registry/html.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage, type Query, type Scope } from "../registry/types.ts";
import { agentCrumbs, excerpt, home, when } from "./format.ts";

const n = (v: number) => v.toLocaleString("en-US");
/** Cached input tokens and their share of the input: what the provider's prompt cache served. */
const cachedOf = (t: { input: number; cached: number }) =>
  t.cached && t.input ? `${n(t.cached)} (${Math.round((100 * t.cached) / t.input)} %)` : n(t.cached);
/** The month's tokens in a line, with the share of input its providers served from cache. */
const monthTokens = (m: { calls: number; input: number; cached: number; output: number }) =>
  `${n(m.calls)} model calls and ${n(m.input + m.output)} tokens this month${m.cached && m.input ? ` (${Math.round((100 * m.cached) / m.input)} % of input served from the provider's cache)` : ""}`;
/** Dollars on a chart axis or tooltip: sub-cent days keep two significant digits instead of reading $0.000. */
const chartUsd = (v: number) =>
  v === 0
    ? "$0"
    : v >= 100
      ? `$${v.toFixed(0)}`
      : v >= 1
        ? `$${v.toFixed(2)}`
        : v >= 0.01
          ? `$${v.toFixed(3)}`
          : `$${v.toLocaleString("en-US", { maximumSignificantDigits: 2 })}`;
const monthName = (d: Date) =>
  d.toLocaleDateString("en-US", { month: "long", year: "numeric", timeZone: "UTC" });

/** Whose usage /usage shows: a workspace admin sees the workspace unless they ask for `?scope=mine`. */
export function usageFilter(ctx: Ctx, query: Query): UsageFilter {
  return ctx.actor.tenantAdmin && query.scope !== "mine"
    ? { kind: "tenant", tenantId: ctx.tenant.id }
    : { kind: "owner", tenantId: ctx.tenant.id, ownerId: ctx.actor.id };
}

function dayTable(u: Usage): string {
  return [
    "| day | calls | input tokens | cached | output tokens | cost |",
    "|---|---|---|---|---|---|",
    ...u.days.map(
      (d) =>
        `| ${d.day} | ${n(d.calls)} | ${n(d.input)} | ${n(d.cached)} | ${n(d.output)} | ${usd(d.costMicros)} |`,
    ),
    `| **${DAYS} days** | **${n(u.last30.calls)}** | **${n(u.last30.input)}** | **${cachedOf(u.last30)}** | **${n(u.last30.output)}** | **${usd(u.last30.costMicros)}** |`,
  ].join("\n");
}

function charts(u: Usage, dailyLimitMicros?: number): Block[] {
  const labels = u.days.map((d) => d.day);
  const spend = responsiveChart({
    title: `Spend per day, last ${DAYS} days`,
    labels,
    series: [{ name: "cost", color: "#3b5bdb" }],
    values: u.days.map((d) => [d.costMicros / 1e6]),
    empty: `Nothing spent in the last ${DAYS} days yet.`,
    format: chartUsd,
    axis: (v, step) => (v === 0 ? "$0" : `$${v.toFixed(step >= 1 ? 0 : step >= 0.01 ? 2 : 4)}`),
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
    values: u.days.map((d) => [d.input - d.cached, d.cached, d.output]),
    whole: true,
    empty: `No tokens used in the last ${DAYS} days yet.`,
    format: (v) =>
      v >= 1e6 ? `${(v / 1e6).toFixed(2)}M` : v >= 1e3 ? `${(v / 1e3).toFixed(1)}k` : v.toFixed(0),
    // One unit for the whole axis: 0, 250k … 1,000k rather than a mix of k and M.
    axis: (v, step) =>
      step * 4 >= 2e6
        ? `${(v / 1e6).toFixed(step >= 1e6 ? 0 : 1)}M`
        : step >= 1e3
          ? `${(v / 1e3).toLocaleString("en-US", { maximumFractionDigits: step >= 1e4 ? 0 : 1 })}k`
          : v.toFixed(0),
  });
  return [
    {
      md: `## Last ${DAYS} days\n\n${dayTable(u)}`,
      html: `<h2>Last ${DAYS} days</h2><h3 class="chart-title">Spend per day</h3>${spend}<h3 class="chart-title">Tokens per day</h3>${tokens}<details class="chart-data"><summary>The numbers</summary>${markdownToHtml(dayTable(u))}</details>`,
    },
  ];
}

function sliceTable(title: string, what: string, rows: Slice[]): string {
  if (!rows.length) return `## ${title}\n\n_No calls in the last ${DAYS} days._`;
  const body = rows.map(
    (r) =>
      `| ${r.unpriced ? `⚠ ${code(r.label)} (no price: counted as $0)` : what === "model" ? code(r.label) : mdEscape(r.label)} | ${n(r.calls)} | ${n(r.input)} | ${cachedOf(r)} | ${n(r.output)} | ${usd(r.costMicros)} |`,
  );
  const note = rows.some((r) => r.unpriced)
    ? `\n\n⚠ Some models have no price: their calls are recorded at $0. A workspace admin can price them on ${link("the price list", "/usage/pricing")}.`
    : "";
  return `## ${title}\n\n| ${what} | calls | input | cached | output | cost |\n|---|---|---|---|---|---|\n${body.join("\n")}${note}`;
}

/** The costliest runs; one agent's page leaves out the agent column. */
function topRunsTable(u: Usage, oneAgent = false): string {
  if (!u.topRuns.length) return `## Top runs by cost\n\n_No runs in the last ${DAYS} days._`;
  return [
    "## Top runs by cost",
    "",
    `| run |${oneAgent ? "" : " agent |"} task | status | steps | tokens | cost |`,
    `|---|${oneAgent ? "" : "---|"}---|---|---|---|---|`,
    ...u.topRuns.map(
      (r) =>
        `| ${link(when(r.createdAt), `/subagents/${r.agentHandle}/runs/${r.runId}`)} |${oneAgent ? "" : ` @${r.agentHandle} |`} ${mdEscape(excerpt(r.task, 60))} | ${r.status} | ${n(r.steps)} | ${n(r.tokens)} | ${usd(r.costMicros)} |`,
    ),
  ].join("\n");
}

function monthLine(spent: number, now: Date, limitMicros?: number): string {
  const projected = projectMonth(spent, now);
  const parts = [`**${monthName(now)} so far: ${usd(spent)}**`];
  if (limitMicros !== undefined) {
    const pct = limitMicros > 0 ? Math.round((spent / limitMicros) * 100) : 100;
    parts[0] += ` of its ${usd(limitMicros)} limit (${pct}%)`;
  }
  // Spend at the limit has already paused the agent (the ledger pauses it with the call that
  // gets there): say so, rather than that it will pause some day.
  const reached = limitMicros !== undefined && spent >= limitMicros;
  const over = limitMicros !== undefined && !reached && projected > limitMicros;
  parts.push(
    reached
      ? "**limit reached**: it pauses and runs no more until its limit is raised"
      : `on pace for **${usd(projected)}** by month end${over ? " — **over the limit**: it will pause when it gets there" : ""}`,
  );
  return parts.join(" · ");
}

export const agentUsagePage = definePage({
  pattern: "/subagents/:handle/usage",
  actions: ["set_cost_limit", "resume_subagent"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle, { adminReads: true }) }),
  async render(ctx, scope) {
    const a = scope.agent;
    const config = agentConfig(a);
    const u = await loadUsage(ctx.db, { kind: "agent", tenantId: ctx.tenant.id, agentId: a.id });
    const limit = Number(toMicros(config.cost_limit_usd));
    const daysInMonth = new Date(Date.UTC(u.now.getUTCFullYear(), u.now.getUTCMonth() + 1, 0)).getUTCDate();
    const base = `/subagents/${a.handle}`;
    const blocks: Block[] = [];
    if (a.pausedAt)
      blocks.push({
        md: `> **Paused** ${when(a.pausedAt)}: ${mdEscape(a.pausedReason ?? "")}. ${a.pausedKind === "cost_limit" ? "Raise its limit below to let it run again this month." : "Resume it to let it run again."}`,
      });
    blocks.push(
      { md: monthLine(u.month.costMicros, u.now, limit) },
      {
        md: `Alerts at ${config.alert_thresholds_usd.length ? config.alert_thresholds_usd.map((t) => usd(toMicros(t))).join(", ") : "no amounts"} (one notification each per month) · ${monthTokens(u.month)} · ${link("Download CSV", `${base}/usage.csv`)} (every call, last ${DAYS} days)`,
      },
      ...charts(u, limit / daysInMonth),
      { md: sliceTable("By model", "model", u.byModel) },
      { md: sliceTable("By key", "key", u.byKey) },
      { md: topRunsTable(u, true) },
      {
        md: `## Limit and alerts\n\nAt the limit its run stops and it pauses until you raise the limit; each alert notifies you once a month.${config.alert_thresholds_usd.some((t) => t >= config.cost_limit_usd) ? " Alerts at or above the limit never fire before it pauses." : ""}`,
      },
      {
        form: {
          action: "set_cost_limit",
          fixed: {},
          label: "Save limit",
          style: "block",
          values: {
            monthly_limit_usd: config.cost_limit_usd,
            alert_thresholds_usd: config.alert_thresholds_usd.join(", "),
          },
        },
      },
    );
    return {
      title: `Usage: ${a.name}`,
      breadcrumb: [...agentCrumbs(a), { label: "Usage" }],
      blocks,
    };
  },
});

/** A dashboard over many agents: the month, each agent's spend and limit, charts and slices. */
async function overview(ctx: Ctx, f: UsageFilter, intro: string, csv: string | null): Promise<Block[]> {
  const u = await loadUsage(ctx.db, f);
  const tenant = f.kind === "tenant";
  const agents = u.agents.map((a) => {
    const limit = Number(toMicros(agentConfig({ agentConfig: a.agentConfig as object }).cost_limit_usd));
    const state = a.pausedAt ? (a.pausedKind === "cost_limit" ? "**paused at limit**" : "paused") : "active";
    return `| ${link(`@${a.handle}`, `/subagents/${a.handle}/usage`)} |${tenant ? ` ${a.owner ? mdEscape(a.owner) : "—"} |` : ""} ${usd(a.costMicros)} | ${usd(limit)} | ${usd(projectMonth(a.costMicros, u.now))} | ${n(a.calls)} | ${state} |`;
  });
  return [
    { md: `${monthLine(u.month.costMicros, u.now)}\n\n${intro}` },
    {
      md: `${monthTokens(u.month)}${csv ? ` · ${link("Download CSV", csv)} (every call, last ${DAYS} days)` : ""} · ${link("Price list", "/usage/pricing")}`,
    },
    {
      md: `## Agents this month\n\n${
        agents.length
          ? [
              `| agent |${tenant ? " owner |" : ""} spent | limit | projected | calls | status |`,
              `|---|${tenant ? "---|" : ""}---|---|---|---|---|`,
              ...agents,
            ].join("\n")
          : "_No subagents yet._"
      }`,
    },
    ...charts(u),
    { md: sliceTable("By model", "model", u.byModel) },
    { md: sliceTable("By key", "key", u.byKey) },
    { md: topRunsTable(u) },
  ];
}

export const usagePage = definePage({
  pattern: "/usage",
  actions: [],
  resolve: async (): Promise<Scope> => ({}),
  async render(ctx, _scope, query) {
    const f = usageFilter(ctx, query);
    const tenant = f.kind === "tenant";
    const intro = tenant
      ? `Every agent in ${mdEscape(ctx.tenant.name)}, as you are a workspace admin (${link("only mine", "/usage?scope=mine")}).`
      : ctx.actor.tenantAdmin
        ? `Only your agents (${link("the whole workspace", "/usage")}).`
        : "The agents you own. Your studios' agents are on each studio's usage page.";
    return {
      title: tenant ? "Workspace usage" : "Your agents' usage",
      breadcrumb: [home, { label: "Usage" }],
      blocks: await overview(
        ctx,
        f,
        intro,
        `/usage.csv${f.kind === "owner" && ctx.actor.tenantAdmin ? "?scope=mine" : ""}`,
      ),
    };
  },
});

export const studioUsagePage = definePage({
  pattern: "/studios/:studio/usage",
  actions: [],
  async resolve(ctx, params) {
    const studio = await loadStudio(ctx, params.studio);
    if (studio.role !== "admin")
      throw new ForbiddenError(`Only the admins of ${studio.name} see its agents' usage`);
    return { studio };
  },
  async render(ctx, scope) {
    const s = scope.studio;
    return {
      title: `Usage of ${s.name}'s agents`,
      breadcrumb: [home, { label: s.name, path: `/studios/${s.handle}` }, { label: "Usage" }],
      blocks: await overview(
        ctx,
        { kind: "studio", tenantId: ctx.tenant.id, studioId: s.id },
        `The agents ${mdEscape(s.name)} owns, as you are one of its admins. ${link("Its model API keys", `/studios/${s.handle}/settings/api-keys`)}.`,
        null,
      ),
    };
  },
});

export const pricingPage = definePage({
  pattern: "/usage/pricing",
  actions: ["set_model_price", "remove_model_price"],
  resolve: async (): Promise<Scope> => ({}),
  async render(ctx) {
    // Read fresh, not the request's copy of the tenant: after set_model_price the page that
    // answers the same request must list the price just set.
    const tenant = await ctx.db.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id } });
    const own = tenantSettings(tenant).pricing;
    const row = (m: string, p: Price) =>
      `| ${code(m)} | $${p.input} | $${p.cached_input} | $${writeRate(p)} | $${p.output} |`;
    const head = "| model | input | cached input | cache write | output |\n|---|---|---|---|---|";
    return {
      title: "Model prices",
      breadcrumb: [home, { label: "Usage", path: "/usage" }, { label: "Prices" }],
      blocks: [
        {
          md: `Cost = tokens × price per million tokens. Cached input tokens are billed at the cached rate, input written to a provider's prompt cache (Anthropic, OpenAI from GPT-5.6 on) at the cache-write rate, 1.25 × input unless a price says otherwise. A model id with a date suffix (\`gpt-4o-2024-08-06\`) takes its model's price; a model in neither list costs $0 and is flagged on the dashboards.`,
        },
        {
          md: `## This workspace's prices\n\nThey take precedence over the built-in list.\n\n${
            Object.keys(own).length
              ? `${head}\n${Object.entries(own)
                  .map(([m, p]) => row(m, p))
                  .join("\n")}`
              : "_None: the built-in list applies._"
          }`,
        },
        {
          md: `## Built-in list (version ${PRICE_LIST_VERSION})\n\nUSD per million tokens.\n\n${head}\n${Object.entries(
            PRICE_LIST,
          )
            .map(([m, p]) => row(m, p))
            .join("\n")}`,
        },
      ],
    };
  },
});
