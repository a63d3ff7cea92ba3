// /runs: every run of every agent the viewer manages, newest first, filtered by status,
// agent, trigger and day, searched by task text; live while it is open. A filter the page
// cannot read is a 400 naming it, never a silently ignored one.
import type { Prisma } from "../../generated/prisma/client.ts";
import { RunStatus } from "../../generated/prisma/enums.ts";
import { ValidationError } from "../../lib/errors.ts";
import { managedAgentsWhere } from "../access.ts";
import { changesFeed } from "../live/feed.ts";
import { usd } from "../money/pricing.ts";
import { escapeHtml } from "../registry/html.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import { type Ctx, definePage, type Query } from "../registry/types.ts";
import { excerpt, home, type Paging, pager, paging, when } from "./format.ts";
import { runPath, runState } from "./run-steps.ts";
import { listDigest, triggerText } from "./runs.ts";

const STATUSES = Object.values(RunStatus);
const TRIGGERS = ["mention", "reply", "thread", "subscription", "schedule", "webhook", "manual", "replay"];
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const MAX_SEARCH = 200;

type Agent = { id: string; handle: string; name: string };

interface Filters {
  status?: string;
  agent?: Agent;
  trigger?: string;
  from?: string;
  to?: string;
  q?: string;
}

/** A UTC day as its first instant, or null when it is not a real YYYY-MM-DD date. */
function day(text: string): Date | null {
  const shape = DAY.exec(text);
  if (!shape) return null;
  const date = new Date(`${text}T00:00:00Z`);
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text ? null : date;
}

function readFilters(query: Query, agents: Agent[]): Filters {
  const given = (name: string) => query[name]?.trim() || undefined;
  const issues: { field: string; message: string }[] = [];
  const filters: Filters = {
    status: given("status"),
    trigger: given("trigger"),
    from: given("from"),
    to: given("to"),
    q: given("q"),
  };
  if (filters.status && !STATUSES.includes(filters.status as RunStatus))
    issues.push({
      field: "status",
      message: `“${filters.status}” is not a run status: one of ${STATUSES.join(", ")}`,
    });
  const handle = given("agent")?.replace(/^@/, "");
  if (handle) {
    filters.agent = agents.find((a) => a.handle === handle);
    if (!filters.agent) issues.push({ field: "agent", message: `you manage no agent @${handle}` });
  }
  if (filters.trigger && !TRIGGERS.includes(filters.trigger))
    issues.push({
      field: "trigger",
      message: `“${filters.trigger}” is not a trigger: one of ${TRIGGERS.join(", ")}`,
    });
  for (const bound of ["from", "to"] as const)
    if (filters[bound] && !day(filters[bound]!))
      issues.push({ field: bound, message: "a date as YYYY-MM-DD" });
  if (filters.from && filters.to && day(filters.from) && day(filters.to) && filters.from > filters.to)
    issues.push({ field: "to", message: "is before from" });
  if (filters.q && filters.q.length > MAX_SEARCH)
    issues.push({ field: "q", message: `at most ${MAX_SEARCH} characters` });
  if (issues.length) throw new ValidationError(issues, "These filters cannot be used");
  return filters;
}

function whereOf(ctx: Ctx, filters: Filters, agents: Agent[]): Prisma.SubagentTaskRunWhereInput {
  const lastDay = filters.to ? day(filters.to)! : undefined;
  return {
    tenantId: ctx.tenant.id,
    agentId: filters.agent ? filters.agent.id : { in: agents.map((a) => a.id) },
    ...(filters.status && { status: filters.status as RunStatus }),
    ...(filters.trigger && { triggerKind: filters.trigger }),
    ...((filters.from || lastDay) && {
      createdAt: {
        ...(filters.from && { gte: day(filters.from)! }),
        ...(lastDay && { lt: new Date(lastDay.getTime() + 86_400_000) }),
      },
    }),
    ...(filters.q && { task: { contains: filters.q, mode: "insensitive" as const } }),
  };
}

/** The filters as query parameters, for the pager's links. */
function params(filters: Filters): Record<string, string> {
  const out: Record<string, string | undefined> = { ...filters, agent: filters.agent?.handle };
  return Object.fromEntries(Object.entries(out).filter((e): e is [string, string] => Boolean(e[1])));
}

async function inbox(ctx: Ctx, query: Query, paged: Paging) {
  const agents = await ctx.db.user.findMany({
    where: managedAgentsWhere(ctx),
    select: { id: true, handle: true, name: true },
    orderBy: { handle: "asc" },
  });
  const filters = readFilters(query, agents);
  const where = whereOf(ctx, filters, agents);
  const [runs, total] = await Promise.all([
    ctx.db.subagentTaskRun.findMany({
      where,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      skip: paged.skip,
      take: paged.take,
    }),
    ctx.db.subagentTaskRun.count({ where }),
  ]);
  return { agents, filters, runs, total };
}

type Inbox = Awaited<ReturnType<typeof inbox>>;

function table({ agents, runs }: Inbox): string {
  if (!runs.length) return "_No runs match._";
  const handle = new Map(agents.map((a) => [a.id, a.handle]));
  const rows = runs.map((run) => {
    const agentHandle = handle.get(run.agentId) ?? "?";
    return `| ${link(when(run.createdAt), runPath(agentHandle, run.id))} | @${agentHandle} | **${runState(run)}**${run.stopReason && run.status !== "completed" ? ` (${mdEscape(run.stopReason)})` : ""} | ${triggerText(agentHandle, run)} | ${run.stepsCount} | ${run.inputTokens + run.outputTokens} | ${usd(run.costMicros)} | ${mdEscape(excerpt(run.task, 80))} |`;
  });
  return [
    "| queued | agent | status | trigger | steps | tokens | cost | task |",
    "|---|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

function select(name: string, label: string, current: string | undefined, options: string[][]): string {
  const opts = [["", "any"], ...options].map(
    ([value, text]) =>
      `<option value="${escapeHtml(value!)}"${value === (current ?? "") ? " selected" : ""}>${escapeHtml(text!)}</option>`,
  );
  return `<label>${label} <select name="${name}">${opts.join("")}</select></label>`;
}

/** The filters as a form (a GET: the address holds them), and in markdown as the parameters to send. */
function filterBlock({ agents, filters }: Inbox) {
  const input = (name: keyof Filters, label: string, type: string) =>
    `<label>${label} <input type="${type}" name="${name}" value="${escapeHtml(String(filters[name] ?? ""))}"></label>`;
  const html = `<form method="get" action="/runs" class="filters">${select(
    "status",
    "Status",
    filters.status,
    STATUSES.map((s) => [s, s]),
  )}${select(
    "agent",
    "Agent",
    filters.agent?.handle,
    agents.map((a) => [a.handle, `@${a.handle}`]),
  )}${select(
    "trigger",
    "Trigger",
    filters.trigger,
    TRIGGERS.map((t) => [t, t]),
  )}${input("from", "From", "date")}${input("to", "To", "date")}${input("q", "Task contains", "search")}<button type="submit">Filter</button> <a href="/runs">Clear</a></form>`;
  const set = Object.entries(params(filters));
  const markdown = `Filter with ${code("?status=")} (${STATUSES.join(", ")}), ${code("?agent=")} (a handle), ${code("?trigger=")} (${TRIGGERS.join(", ")}), ${code("?from=")} and ${code("?to=")} (YYYY-MM-DD, UTC) and ${code("?q=")} (words of the task).${set.length ? ` Showing: ${set.map(([name, value]) => `${name} ${code(value)}`).join(", ")}.` : ""}`;
  return { md: markdown, html };
}

export const runsInboxPage = definePage({
  pattern: "/runs",
  actions: [],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const paged = paging(query);
    const box = await inbox(ctx, query, paged);
    return {
      title: "Runs",
      breadcrumb: [home, { label: "Runs" }],
      blocks: [
        {
          md: box.agents.length
            ? `Every run of the ${box.agents.length === 1 ? "agent" : `${box.agents.length} agents`} you manage, newest first.`
            : "You manage no agents yet: their runs will show here.",
        },
        filterBlock(box),
        { md: table(box) },
        { md: pager("/runs", paged, box.total, params(box.filters)) },
      ],
      live: { since: listDigest(box.runs, box.total) },
    };
  },
  async live(ctx, _scope, query) {
    // Filters are read now, so a stream asked for with bad ones is refused like the page.
    const paged = paging(query);
    const box = await inbox(ctx, query, paged);
    return changesFeed(
      box.agents.map((a) => `agent:${a.id}`),
      async () => {
        const { runs, total } = await inbox(ctx, query, paged);
        return { digest: listDigest(runs, total), data: { total } };
      },
    );
  },
});
