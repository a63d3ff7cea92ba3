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
function day(s: string): Date | null {
  const m = DAY.exec(s);
  if (!m) return null;
  const d = new Date(`${s}T00:00:00Z`);
  return Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== s ? null : d;
}

function readFilters(query: Query, agents: Agent[]): Filters {
  const v = (k: string) => query[k]?.trim() || undefined;
  const issues: { field: string; message: string }[] = [];
  const f: Filters = { status: v("status"), trigger: v("trigger"), from: v("from"), to: v("to"), q: v("q") };
  if (f.status && !STATUSES.includes(f.status as RunStatus))
    issues.push({
      field: "status",
      message: `“${f.status}” is not a run status: one of ${STATUSES.join(", ")}`,
    });
  const handle = v("agent")?.replace(/^@/, "");
  if (handle) {
    f.agent = agents.find((a) => a.handle === handle);
    if (!f.agent) issues.push({ field: "agent", message: `you manage no agent @${handle}` });
  }
  if (f.trigger && !TRIGGERS.includes(f.trigger))
    issues.push({
      field: "trigger",
      message: `“${f.trigger}” is not a trigger: one of ${TRIGGERS.join(", ")}`,
    });
  for (const k of ["from", "to"] as const)
    if (f[k] && !day(f[k]!)) issues.push({ field: k, message: "a date as YYYY-MM-DD" });
  if (f.from && f.to && day(f.from) && day(f.to) && f.from > f.to)
    issues.push({ field: "to", message: "is before from" });
  if (f.q && f.q.length > MAX_SEARCH)
    issues.push({ field: "q", message: `at most ${MAX_SEARCH} characters` });
  if (issues.length) throw new ValidationError(issues, "These filters cannot be used");
  return f;
}

function whereOf(ctx: Ctx, f: Filters, agents: Agent[]): Prisma.SubagentTaskRunWhereInput {
  const to = f.to ? day(f.to)! : undefined;
  return {
    tenantId: ctx.tenant.id,
    agentId: f.agent ? f.agent.id : { in: agents.map((a) => a.id) },
    ...(f.status && { status: f.status as RunStatus }),
    ...(f.trigger && { triggerKind: f.trigger }),
    ...((f.from || to) && {
      createdAt: {
        ...(f.from && { gte: day(f.from)! }),
        ...(to && { lt: new Date(to.getTime() + 86_400_000) }),
      },
    }),
    ...(f.q && { task: { contains: f.q, mode: "insensitive" as const } }),
  };
}

/** The filters as query parameters, for the pager's links. */
function params(f: Filters): Record<string, string> {
  const out: Record<string, string | undefined> = { ...f, agent: f.agent?.handle };
  return Object.fromEntries(Object.entries(out).filter((e): e is [string, string] => Boolean(e[1])));
}

async function inbox(ctx: Ctx, query: Query, paged: Paging) {
  const agents = await ctx.db.user.findMany({
    where: managedAgentsWhere(ctx),
    select: { id: true, handle: true, name: true },
    orderBy: { handle: "asc" },
  });
  const f = readFilters(query, agents);
  const where = whereOf(ctx, f, agents);
  const [runs, total] = await Promise.all([
    ctx.db.subagentTaskRun.findMany({
      where,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      skip: paged.skip,
      take: paged.take,
    }),
    ctx.db.subagentTaskRun.count({ where }),
  ]);
  return { agents, f, runs, total };
}

type Inbox = Awaited<ReturnType<typeof inbox>>;

function table({ agents, runs }: Inbox): string {
  if (!runs.length) return "_No runs match._";
  const handle = new Map(agents.map((a) => [a.id, a.handle]));
  const rows = runs.map((r) => {
    const h = handle.get(r.agentId) ?? "?";
    return `| ${link(when(r.createdAt), runPath(h, r.id))} | @${h} | **${runState(r)}**${r.stopReason && r.status !== "completed" ? ` (${mdEscape(r.stopReason)})` : ""} | ${triggerText(h, r)} | ${r.stepsCount} | ${r.inputTokens + r.outputTokens} | ${usd(r.costMicros)} | ${mdEscape(excerpt(r.task, 80))} |`;
  });
  return [
    "| queued | agent | status | trigger | steps | tokens | cost | task |",
    "|---|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

function select(name: string, label: string, current: string | undefined, options: string[][]): string {
  const opts = [["", "any"], ...options].map(
    ([v, l]) =>
      `<option value="${escapeHtml(v!)}"${v === (current ?? "") ? " selected" : ""}>${escapeHtml(l!)}</option>`,
  );
  return `<label>${label} <select name="${name}">${opts.join("")}</select></label>`;
}

/** The filters as a form (a GET: the address holds them), and in markdown as the parameters to send. */
function filterBlock({ agents, f }: Inbox) {
  const input = (name: keyof Filters, label: string, type: string) =>
    `<label>${label} <input type="${type}" name="${name}" value="${escapeHtml(String(f[name] ?? ""))}"></label>`;
  const html = `<form method="get" action="/runs" class="filters">${select(
    "status",
    "Status",
    f.status,
    STATUSES.map((s) => [s, s]),
  )}${select(
    "agent",
    "Agent",
    f.agent?.handle,
    agents.map((a) => [a.handle, `@${a.handle}`]),
  )}${select(
    "trigger",
    "Trigger",
    f.trigger,
    TRIGGERS.map((t) => [t, t]),
  )}${input("from", "From", "date")}${input("to", "To", "date")}${input("q", "Task contains", "search")}<button type="submit">Filter</button> <a href="/runs">Clear</a></form>`;
  const set = Object.entries(params(f));
  const md = `Filter with ${code("?status=")} (${STATUSES.join(", ")}), ${code("?agent=")} (a handle), ${code("?trigger=")} (${TRIGGERS.join(", ")}), ${code("?from=")} and ${code("?to=")} (YYYY-MM-DD, UTC) and ${code("?q=")} (words of the task).${set.length ? ` Showing: ${set.map(([k, v]) => `${k} ${code(v)}`).join(", ")}.` : ""}`;
  return { md, html };
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
        { md: pager("/runs", paged, box.total, params(box.f)) },
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
