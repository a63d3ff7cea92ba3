// An agent's runs: the form that starts one, the list of them, and the one line a run reads
// as wherever runs are listed (an agent's page, its subscriptions, its webhooks). A run's own
// page is run-page.ts.
import { RunStatus, type SubagentTaskRun } from "../../generated/prisma/client.ts";
import { plural } from "../../lib/plural.ts";
import { runTask } from "../actions/runs.ts";
import { experimentPath } from "../agents/core/experiments.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { changesFeed, digestOf } from "../live/feed.ts";
import { link, mdEscape } from "../registry/markdown.ts";
import { type AgentScope, type Ctx, definePage, type PageView, type Query } from "../registry/types.ts";
import { agentCrumbs, excerpt, type Paging, pager, paging, when } from "./format.ts";
import { runState } from "./run-steps.ts";

// A trigger of its own (not an event in a thread) links to the agent's list of them.
const TRIGGER_PAGES: Record<string, string> = {
  subscription: "subscriptions",
  schedule: "schedules",
  webhook: "webhooks",
};

/** What woke a run: its kind, linked to the subscription, schedule or webhook when there is one. */
export function triggerText(
  handle: string,
  run: Pick<SubagentTaskRun, "triggerKind" | "triggerRef">,
): string {
  // An experiment's dry run links to the experiment, where it sits beside the other side's.
  if (run.triggerKind === "experiment" && run.triggerRef)
    return link("experiment", experimentPath(handle, run.triggerRef));
  const page = TRIGGER_PAGES[run.triggerKind];
  return page && run.triggerRef
    ? link(run.triggerKind, `/subagents/${handle}/${page}#${run.triggerRef}`)
    : run.triggerKind;
}

export function runLine(handle: string, run: SubagentTaskRun): string {
  const why = run.stopReason && run.status !== "completed" ? ` (${run.stopReason})` : "";
  return `- ${link(`Run ${run.id}`, `/subagents/${handle}/runs/${run.id}`)} · **${run.status}**${why} · ${triggerText(handle, run)} · ${when(run.createdAt)} · ${plural(run.stepsCount, "step")} — ${mdEscape(excerpt(run.task, 90))}`;
}

const STATUSES = Object.values(RunStatus);

/** `?status=failed`: one status, or every run when absent or unknown. */
function statusFilter(query: Query): RunStatus | undefined {
  return STATUSES.find((status) => status === query.status);
}

export const runFormPage = definePage({
  pattern: "/subagents/:handle/run",
  actions: ["run_task"],
  // A studio's agent whose admins let members run it: any member of the studio gives it tasks here.
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle, { members: "run" }) }),
  // The form's own refusal, said where the form would be: a page with no form and no reason leaves a person guessing.
  render: async (ctx, scope) => runFormView(scope.agent, runTask.available?.(ctx, scope) ?? null),
});

function runFormView(agent: AgentScope, refused: string | null): PageView {
  return {
    title: `Run a task with ${agent.name}`,
    breadcrumb: [...agentCrumbs(agent), { label: "Run" }],
    blocks: [
      {
        md: `Describe what ${mdEscape(agent.name)} should do. It starts at \`/whoami\`, reads pages and uses actions like you would, and every step is recorded on the run's page.`,
      },
      ...(refused ? [{ md: `**You cannot start a run now:** ${refused}.` }] : []),
    ],
  };
}

async function agentRuns(ctx: Ctx, agentId: string, paged: Paging, status?: RunStatus) {
  const where = { agentId, ...(status && { status }) };
  const [runs, total] = await Promise.all([
    ctx.db.subagentTaskRun.findMany({
      where,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      skip: paged.skip,
      take: paged.take,
    }),
    ctx.db.subagentTaskRun.count({ where }),
  ]);
  return { runs, total };
}

/** Where a list of runs stands: what its rows show that changes while it is open. */
export function listDigest(
  runs: Pick<SubagentTaskRun, "id" | "status" | "stopRequestedAt" | "stepsCount">[],
  total: number,
) {
  return digestOf([total, runs.map((run) => [run.id, runState(run), run.stepsCount])]);
}

export const runsPage = definePage({
  pattern: "/subagents/:handle/runs",
  actions: [],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  render: async (ctx, scope, query) => runsView(await loadRuns(ctx, scope, query)),
  live: (ctx, scope, query) =>
    changesFeed([`agent:${scope.agent.id}`], async () => {
      const { runs, total } = await agentRuns(ctx, scope.agent.id, paging(query), statusFilter(query));
      return { digest: listDigest(runs, total), data: { total } };
    }),
});

/** A page of the agent's runs, of one status when the query asks for one. */
async function loadRuns(ctx: Ctx, scope: { agent: AgentScope }, query: Query) {
  const paged = paging(query);
  const status = statusFilter(query);
  return { agent: scope.agent, paged, status, ...(await agentRuns(ctx, scope.agent.id, paged, status)) };
}

type RunsData = Awaited<ReturnType<typeof loadRuns>>;

/** "Show: All · queued · running …", the shown one in bold and not a link. */
function statusLinks(path: string, shown: RunStatus | undefined): string {
  const filters = [
    shown ? link("All", path) : "**All**",
    ...STATUSES.map((status) =>
      status === shown ? `**${status}**` : link(status, `${path}?status=${status}`),
    ),
  ];
  return `Show: ${filters.join(" · ")}`;
}

function runsView({ agent, paged, status, runs, total }: RunsData): PageView {
  const path = `/subagents/${agent.handle}/runs`;
  const none = status ? `_No ${status} runs._` : "_No runs yet._";
  return {
    title: `Runs of ${agent.name}`,
    breadcrumb: [...agentCrumbs(agent), { label: "Runs" }],
    blocks: [
      { md: statusLinks(path, status) },
      { md: runs.map((run) => runLine(agent.handle, run)).join("\n") || none },
      { md: pager(path, paged, total, status ? { status } : {}) },
    ],
    live: { since: listDigest(runs, total) },
  };
}
