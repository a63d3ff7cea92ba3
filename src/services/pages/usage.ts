// Usage dashboards: an agent's, yours (all your agents), and — for workspace admins —
// the whole workspace's. Charts are SVG in browsers and tables in markdown. Each page loads
// its data here and renders it purely; the tables and charts they share are usage-views.ts.
import { ForbiddenError } from "../../lib/errors.ts";
import { loadStudio } from "../access.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { agentConfig, tenantSettings } from "../agents/core/settings.ts";
import { readableRuns } from "../agents/policy/labels.ts";
import { DAYS, loadUsage, projectMonth, type Usage, type UsageFilter } from "../money/dashboard.ts";
import { toMicros } from "../money/ledger.ts";
import { PRICE_LIST, PRICE_LIST_VERSION, type Price, usd, usdShares, writeRate } from "../money/pricing.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import {
  type AgentScope,
  type Block,
  type Ctx,
  definePage,
  type PageView,
  type Query,
  type Scope,
  type StudioScope,
} from "../registry/types.ts";
import { agentCrumbs, home, when } from "./format.ts";
import {
  charts,
  count,
  evaluationBlock,
  monthLine,
  monthTokens,
  sliceTable,
  topRunsTable,
} from "./usage-views.ts";

/** Whose usage /usage shows: a workspace admin sees the workspace unless they ask for `?scope=mine`. */
export function usageFilter(ctx: Ctx, query: Query): UsageFilter {
  return ctx.actor.tenantAdmin && query.scope !== "mine"
    ? { kind: "tenant", tenantId: ctx.tenant.id }
    : { kind: "owner", tenantId: ctx.tenant.id, ownerId: ctx.actor.id };
}

/** A filter's usage, and which of its costliest runs the reader may read the task of (agents/policy/labels.ts). */
async function loadReadableUsage(ctx: Ctx, filter: UsageFilter) {
  const usage = await loadUsage(ctx.db, filter);
  const readable = await readableRuns(ctx.db, ctx.tenant.id, ctx.actor.id, usage.topRuns);
  return { usage, readable };
}

type ReadableUsage = Awaited<ReturnType<typeof loadReadableUsage>>;

export const agentUsagePage = definePage({
  pattern: "/subagents/:handle/usage",
  actions: ["set_cost_limit", "resume_subagent"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle, { adminReads: true }) }),
  render: async (ctx, scope) => agentUsageView(await loadAgentUsage(ctx, scope)),
});

async function loadAgentUsage(ctx: Ctx, scope: { agent: AgentScope }) {
  const agent = scope.agent;
  const read = await loadReadableUsage(ctx, { kind: "agent", tenantId: ctx.tenant.id, agentId: agent.id });
  return { agent, config: agentConfig(agent), ...read };
}

type AgentUsageData = Awaited<ReturnType<typeof loadAgentUsage>>;

function pausedNotice(agent: AgentScope, pausedAt: Date): string {
  const next =
    agent.pausedKind === "cost_limit"
      ? "Raise its limit below to let it run again this month."
      : "Resume it to let it run again.";
  return `> **Paused** ${when(pausedAt)}: ${mdEscape(agent.pausedReason ?? "")}. ${next}`;
}

function alertsLine({ agent, config, usage }: AgentUsageData): string {
  const alerts = config.alert_thresholds_usd.length
    ? config.alert_thresholds_usd.map((threshold) => usd(toMicros(threshold))).join(", ")
    : "no amounts";
  const csv = link("Download CSV", `/subagents/${agent.handle}/usage.csv`);
  return `Alerts at ${alerts} (one notification each per month) · ${monthTokens(usage.month)} · ${csv} (every call, last ${DAYS} days)`;
}

function limitBlock({ config }: AgentUsageData): string {
  const unreachable = config.alert_thresholds_usd.some((threshold) => threshold >= config.cost_limit_usd)
    ? " Alerts at or above the limit never fire before it pauses."
    : "";
  return `## Limit and alerts\n\nAt the limit its run stops and it pauses until you raise the limit; each alert notifies you once a month.${unreachable}`;
}

function agentUsageView(data: AgentUsageData): PageView {
  const { agent, config, usage } = data;
  const limit = Number(toMicros(config.cost_limit_usd));
  const now = usage.now;
  const daysInMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0)).getUTCDate();
  return {
    title: `Usage: ${agent.name}`,
    breadcrumb: [...agentCrumbs(agent), { label: "Usage" }],
    blocks: [
      ...(agent.pausedAt ? [{ md: pausedNotice(agent, agent.pausedAt) }] : []),
      { md: monthLine(usage.month.costMicros, now, limit) },
      { md: alertsLine(data) },
      ...charts(usage, limit / daysInMonth),
      { md: sliceTable("By model", "model", usage.byModel) },
      { md: sliceTable("By key", "key", usage.byKey) },
      { md: evaluationBlock(usage) },
      { md: topRunsTable(usage, data.readable, true) },
      { md: limitBlock(data) },
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
    ],
  };
}

/** What a dashboard over many agents says about itself: who is in it, and where its CSV is. */
interface OverviewFrame {
  /** The workspace's dashboard names each agent's owner. */
  tenant: boolean;
  intro: string;
  csv: string | null;
}

function agentMonthRow(agent: Usage["agents"][number], now: Date, tenant: boolean, spent: string): string {
  const limit = Number(toMicros(agentConfig({ agentConfig: agent.agentConfig as object }).cost_limit_usd));
  const paused = agent.pausedKind === "cost_limit" ? "**paused at limit**" : "paused";
  const state = agent.pausedAt ? paused : "active";
  const owner = tenant ? ` ${agent.owner ? mdEscape(agent.owner) : "—"} |` : "";
  return `| ${link(`@${agent.handle}`, `/subagents/${agent.handle}/usage`)} |${owner} ${spent} | ${usd(limit)} | ${usd(projectMonth(agent.costMicros, now))} | ${count(agent.calls)} | ${state} |`;
}

/** The month's spend as the header shows it and as each agent's row does: one precision, parts that add up. */
function monthMoney(usage: Usage) {
  return usdShares(
    usage.agents.map((agent) => agent.costMicros),
    usage.month.costMicros,
  );
}

function agentsMonthTable(usage: Usage, tenant: boolean): string {
  if (!usage.agents.length) return "## Agents this month\n\n_No subagents yet._";
  const money = monthMoney(usage);
  return [
    "## Agents this month",
    "",
    `| agent |${tenant ? " owner |" : ""} spent | limit | projected | calls | status |`,
    `|---|${tenant ? "---|" : ""}---|---|---|---|---|`,
    ...usage.agents.map((agent, index) => agentMonthRow(agent, usage.now, tenant, money.parts[index]!)),
    "",
    "Amounts are rounded to the cent (to a hundredth of a cent when one is smaller), so that the spent column adds up to the month's total as shown; the CSV has every call to the millionth of a dollar.",
  ].join("\n");
}

/** A dashboard over many agents: the month, each agent's spend and limit, charts and slices. */
function overviewBlocks({ usage, readable }: ReadableUsage, frame: OverviewFrame): Block[] {
  const csv = frame.csv ? ` · ${link("Download CSV", frame.csv)} (every call, last ${DAYS} days)` : "";
  return [
    {
      md: `${monthLine(usage.month.costMicros, usage.now, undefined, monthMoney(usage).digits)}\n\n${frame.intro}`,
    },
    { md: `${monthTokens(usage.month)}${csv} · ${link("Price list", "/usage/pricing")}` },
    { md: agentsMonthTable(usage, frame.tenant) },
    ...charts(usage),
    { md: sliceTable("By model", "model", usage.byModel) },
    { md: sliceTable("By key", "key", usage.byKey) },
    { md: evaluationBlock(usage) },
    { md: topRunsTable(usage, readable) },
  ];
}

export const usagePage = definePage({
  pattern: "/usage",
  actions: [],
  resolve: async (): Promise<Scope> => ({}),
  render: async (ctx, _scope, query) => usageView(await loadOwnUsage(ctx, query)),
});

async function loadOwnUsage(ctx: Ctx, query: Query) {
  const filter = usageFilter(ctx, query);
  return {
    whole: filter.kind === "tenant",
    tenantName: ctx.tenant.name,
    tenantAdmin: ctx.actor.tenantAdmin,
    ...(await loadReadableUsage(ctx, filter)),
  };
}

function usageView(data: Awaited<ReturnType<typeof loadOwnUsage>>): PageView {
  let intro = "The agents you own. Your studios' agents are on each studio's usage page.";
  if (data.whole)
    intro = `Every agent in ${mdEscape(data.tenantName)}, as you are a workspace admin (${link("only mine", "/usage?scope=mine")}).`;
  else if (data.tenantAdmin) intro = `Only your agents (${link("the whole workspace", "/usage")}).`;
  // An admin's own CSV says so: without it the export is the workspace's.
  const csv = `/usage.csv${!data.whole && data.tenantAdmin ? "?scope=mine" : ""}`;
  return {
    title: data.whole ? "Workspace usage" : "Your agents' usage",
    breadcrumb: [home, { label: "Usage" }],
    blocks: overviewBlocks(data, { tenant: data.whole, intro, csv }),
  };
}

export const studioUsagePage = definePage({
  pattern: "/studios/:studio/usage",
  actions: [],
  async resolve(ctx, params) {
    const studio = await loadStudio(ctx, params.studio);
    if (studio.role !== "admin")
      throw new ForbiddenError(`Only the admins of ${studio.name} see its agents' usage`);
    return { studio };
  },
  render: async (ctx, scope) => studioUsageView(await loadStudioUsage(ctx, scope)),
});

async function loadStudioUsage(ctx: Ctx, scope: { studio: StudioScope }) {
  const filter = { kind: "studio" as const, tenantId: ctx.tenant.id, studioId: scope.studio.id };
  return { studio: scope.studio, ...(await loadReadableUsage(ctx, filter)) };
}

function studioUsageView(data: Awaited<ReturnType<typeof loadStudioUsage>>): PageView {
  const { studio } = data;
  const keys = link("Its model API keys", `/studios/${studio.handle}/settings/api-keys`);
  return {
    title: `Usage of ${studio.name}'s agents`,
    breadcrumb: [home, { label: studio.name, path: `/studios/${studio.handle}` }, { label: "Usage" }],
    blocks: overviewBlocks(data, {
      tenant: false,
      intro: `The agents ${mdEscape(studio.name)} owns, as you are one of its admins. ${keys}.`,
      csv: null,
    }),
  };
}

export const pricingPage = definePage({
  pattern: "/usage/pricing",
  actions: ["set_model_price", "remove_model_price"],
  resolve: async (): Promise<Scope> => ({}),
  async render(ctx) {
    // Read fresh, not the request's copy of the tenant: after set_model_price the page that
    // answers the same request must list the price just set.
    const tenant = await ctx.db.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id } });
    return pricingView(tenantSettings(tenant).pricing);
  },
});

const PRICE_HEAD = "| model | input | cached input | cache write | output |\n|---|---|---|---|---|";

function priceRows(prices: Record<string, Price>): string {
  const row = ([model, price]: [string, Price]) =>
    `| ${code(model)} | $${price.input} | $${price.cached_input} | $${writeRate(price)} | $${price.output} |`;
  return `${PRICE_HEAD}\n${Object.entries(prices).map(row).join("\n")}`;
}

function pricingView(own: Record<string, Price>): PageView {
  const ownPrices = Object.keys(own).length ? priceRows(own) : "_None: the built-in list applies._";
  return {
    title: "Model prices",
    breadcrumb: [home, { label: "Usage", path: "/usage" }, { label: "Prices" }],
    blocks: [
      {
        md: `Cost = tokens × price per million tokens. Cached input tokens are billed at the cached rate, input written to a provider's prompt cache (Anthropic, OpenAI from GPT-5.6 on) at the cache-write rate, 1.25 × input unless a price says otherwise. A model id with a date suffix (\`gpt-4o-2024-08-06\`) takes its model's price; a model in neither list costs $0 and is flagged on the dashboards.`,
      },
      { md: `## This workspace's prices\n\nThey take precedence over the built-in list.\n\n${ownPrices}` },
      {
        md: `## Built-in list (version ${PRICE_LIST_VERSION})\n\nUSD per million tokens.\n\n${priceRows(PRICE_LIST)}`,
      },
    ],
  };
}
