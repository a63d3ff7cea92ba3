import { type AgentPendingAction, RunStatus, type SubagentTaskRun } from "../../generated/prisma/client.ts";
import { NotFoundError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { loadRun } from "../access.ts";
import { loadAgent, mayManage, maySee, withOwnerStudio } from "../agents/core/ownership.ts";
import { awaitingReview } from "../agents/policy/approvals.ts";
import { retryKey } from "../agents/triggers/retry.ts";
import { changesFeed, digestOf } from "../live/feed.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type AgentScope, type Block, type Ctx, definePage, type Query } from "../registry/types.ts";
import { reviewForms } from "./approvals.ts";
import { agentCrumbs, excerpt, type Paging, pager, paging, when } from "./format.ts";
import { doing, pageLink, pageTitles, writeOf } from "./pending-format.ts";
import { positionOf, runFeed } from "./run-live.ts";
import { memoryBlocks, pausedBlocks } from "./run-memory-pause.ts";
import { replayFacts, replaySteps } from "./run-replay.ts";
import { ENDED, progressHtml, progressLine, runState, stepsBlock } from "./run-steps.ts";

// A trigger of its own (not an event in a thread) links to the agent's list of them.
const TRIGGER_PAGES: Record<string, string> = {
  subscription: "subscriptions",
  schedule: "schedules",
  webhook: "webhooks",
};

/** What woke a run: its kind, linked to the subscription, schedule or webhook when there is one. */
export function triggerText(handle: string, r: Pick<SubagentTaskRun, "triggerKind" | "triggerRef">): string {
  const page = TRIGGER_PAGES[r.triggerKind];
  return page && r.triggerRef
    ? link(r.triggerKind, `/subagents/${handle}/${page}#${r.triggerRef}`)
    : r.triggerKind;
}

export function runLine(handle: string, r: SubagentTaskRun): string {
  return `- ${link(`Run ${r.id}`, `/subagents/${handle}/runs/${r.id}`)} · **${r.status}**${r.stopReason && r.status !== "completed" ? ` (${r.stopReason})` : ""} · ${triggerText(handle, r)} · ${when(r.createdAt)} · ${plural(r.stepsCount, "step")} — ${mdEscape(excerpt(r.task, 90))}`;
}

/** What a run's `error` explains, in words: a stop its owner asked for is not an error. */
function errorHeading(r: Pick<SubagentTaskRun, "status" | "stopReason">): string {
  if (r.status === "skipped") return "Why it did not run";
  if (r.status === "cancelled" || r.status === "timed_out" || r.stopReason === "stopped_by_owner")
    return "Why it stopped";
  return "What went wrong";
}

const STATUSES = Object.values(RunStatus);

type Asked = Pick<
  AgentPendingAction,
  "id" | "actionName" | "pagePath" | "status" | "reviewNote" | "error" | "resultPath" | "expiresAt"
> & { reviewedBy: { name: string } | null };

/**
 * Under the agent's own last words, what became of what it asked approval for: a run whose
 * reply was rejected still said "Replied in the thread.", and only this says otherwise.
 */
function whatHappened(pending: Asked[], titles: Map<string, string>): string {
  const notDone = pending.filter((p) => p.status !== "executed" && p.status !== "approved");
  if (!notDone.length) return "";
  const lines = notDone.map((p) => {
    const where = titles.get(p.pagePath) ?? p.pagePath;
    const what = `its ${writeOf(p.actionName)} (\`${p.actionName}\`, #${p.id}) on ${mdEscape(where)}`;
    if (p.status === "rejected")
      return `${what} was **not done**: rejected by ${mdEscape(p.reviewedBy?.name ?? "its owner")}${p.reviewNote ? ` (${mdEscape(p.reviewNote)})` : ""}`;
    if (p.status === "pending" && p.expiresAt > new Date()) return `${what} is **waiting for approval**`;
    if (p.status === "failed") return `${what} was **not done**: ${mdEscape(p.error ?? "it failed")}`;
    return `${what} was **not done**: it expired unapproved`;
  });
  return `\n\n_Those are the agent's words. What happened:_ ${lines.join("; ")}.`;
}

/** The actions it asked approval for, each on its page by title; Approve and Reject beside those still open. */
function askedBlocks(
  handle: string,
  r: SubagentTaskRun,
  pending: Asked[],
  titles: Map<string, string>,
  reviewable: string[],
): Block[] {
  const line = (p: Asked) =>
    `- ${link(`#${p.id}`, `/subagents/${handle}/pending/${p.id}`)} ${doing(p.actionName)} on ${pageLink(titles, p.pagePath)} — **${p.status}**${p.reviewedBy ? ` by ${mdEscape(p.reviewedBy.name)}` : ""}${p.reviewNote ? `: ${mdEscape(p.reviewNote)}` : p.error ? `: ${mdEscape(p.error)}` : ""}${p.resultPath ? ` → ${pageLink(titles, p.resultPath)}` : ""}`;
  const waits = r.status === "waiting" && r.stopReason === "awaiting_approval";
  const blocks: Block[] = [
    {
      md: `## Actions it asked you to approve (${pending.length})${waits ? "\n\nThe run waits for your review." : ""}`,
    },
  ];
  for (const p of pending) {
    blocks.push({ md: line(p) });
    if (reviewable.includes(p.id))
      blocks.push(
        ...reviewForms(p.id, undefined, { approve: `Approve #${p.id}`, reject: `Reject #${p.id}` }),
      );
  }
  return blocks;
}

/** `?status=failed`: one status, or every run when absent or unknown. */
function statusFilter(query: Query): RunStatus | undefined {
  return STATUSES.find((s) => s === query.status);
}

export const runFormPage = definePage({
  pattern: "/subagents/:handle/run",
  actions: ["run_task"],
  // A studio's agent whose admins let members run it: any member of the studio gives it tasks here.
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle, { members: "run" }) }),
  async render(_ctx, scope) {
    const a = scope.agent;
    return {
      title: `Run a task with ${a.name}`,
      breadcrumb: [...agentCrumbs(a), { label: "Run" }],
      blocks: [
        {
          md: `Describe what ${mdEscape(a.name)} should do. It starts at \`/whoami\`, reads pages and uses actions like you would, and every step is recorded on the run's page.`,
        },
      ],
    };
  },
});

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
  return digestOf([total, runs.map((r) => [r.id, runState(r), r.stepsCount])]);
}

export const runsPage = definePage({
  pattern: "/subagents/:handle/runs",
  actions: [],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope, query) {
    const a = scope.agent;
    const paged = paging(query);
    const status = statusFilter(query);
    const { runs, total } = await agentRuns(ctx, a.id, paged, status);
    const path = `/subagents/${a.handle}/runs`;
    const filters = [
      link(status ? "All" : "**All**", path),
      ...STATUSES.map((s) => (s === status ? `**${s}**` : link(s, `${path}?status=${s}`))),
    ];
    return {
      title: `Runs of ${a.name}`,
      breadcrumb: [...agentCrumbs(a), { label: "Runs" }],
      blocks: [
        { md: `Show: ${filters.join(" · ")}` },
        {
          md: runs.length
            ? runs.map((r) => runLine(a.handle, r)).join("\n")
            : status
              ? `_No ${status} runs._`
              : "_No runs yet._",
        },
        { md: pager(path, paged, total, status ? { status } : {}) },
      ],
      live: { since: listDigest(runs, total) },
    };
  },
  live: (ctx, scope, query) =>
    changesFeed([`agent:${scope.agent.id}`], async () => {
      const { runs, total } = await agentRuns(ctx, scope.agent.id, paging(query), statusFilter(query));
      return { digest: listDigest(runs, total), data: { total } };
    }),
});

/** What a run's page resolves: the run, its agent, and what the reader may review there. */
type RunScope = { agent: AgentScope; taskRun: SubagentTaskRun; reviewable: string[] };

/**
 * The run a person's own mention, reply or comment started and that was refused (skipped): its
 * page says why, and holds only their words and the reason (no steps), so they may read it
 * even when they cannot see the agent's other runs. Null when this is not such a run.
 */
async function refusedRunOf(ctx: Ctx, handle: string, id: string): Promise<RunScope | null> {
  const taskRun = await ctx.db.subagentTaskRun.findFirst({
    where: {
      id,
      tenantId: ctx.tenant.id,
      initiatedById: ctx.actor.id,
      status: "skipped",
      triggerKind: { in: ["mention", "reply", "thread"] },
      agent: { handle, kind: "subagent" },
    },
    include: { agent: { include: withOwnerStudio(ctx.actor) } },
  });
  if (!taskRun || !(await maySee(ctx, taskRun.agent))) return null;
  const { agent, ...run } = taskRun;
  // Nothing there is theirs to review.
  return { agent, taskRun: run, reviewable: [] };
}

export const runPage = definePage({
  pattern: "/subagents/:handle/runs/:run",
  actions: [
    "answer_question",
    "pause_run",
    "resume_run",
    "stop_run",
    "retry_run",
    "approve_action",
    "reject_action",
  ],
  async resolve(ctx, params) {
    // Its managers see every run; a member who gave a studio's agent a task sees that run;
    // whoever's trigger was refused sees that refusal.
    let agent: AgentScope;
    try {
      agent = await loadAgent(ctx, params.handle, { members: "run" });
    } catch (err) {
      const refused = await refusedRunOf(ctx, params.handle, params.run);
      if (refused) return refused;
      throw err;
    }
    const taskRun = await loadRun(ctx, agent.id, params.run);
    const manages = mayManage(ctx.actor, agent);
    if (!manages && taskRun.initiatedById !== ctx.actor.id) throw new NotFoundError(`No run ${params.run}`);
    // What its managers may approve or reject right here.
    const reviewable = manages
      ? (
          await ctx.db.agentPendingAction.findMany({
            where: { runId: taskRun.id, ...awaitingReview() },
            select: { id: true },
          })
        ).map((x) => x.id)
      : [];
    return { agent, taskRun, reviewable };
  },
  async render(ctx, scope) {
    const a = scope.agent;
    const r = scope.taskRun;
    const [steps, resources, initiator, pending, viewers, retried, replays] = await Promise.all([
      ctx.db.subagentTaskRunStep.findMany({ where: { runId: r.id }, orderBy: { number: "asc" } }),
      ctx.db.subagentTaskRunResource.findMany({ where: { runId: r.id }, orderBy: { createdAt: "asc" } }),
      r.initiatedById ? ctx.db.user.findUnique({ where: { id: r.initiatedById } }) : null,
      ctx.db.agentPendingAction.findMany({
        where: { runId: r.id },
        orderBy: { createdAt: "asc" },
        include: { reviewedBy: { select: { name: true } } },
      }),
      r.viewerIds.length
        ? ctx.db.user.findMany({ where: { id: { in: r.viewerIds } }, select: { handle: true } })
        : [],
      r.status === "skipped"
        ? ctx.db.subagentTaskRun.findUnique({
            where: { agentId_triggerEventId: { agentId: a.id, triggerEventId: retryKey(r) } },
            select: { id: true },
          })
        : null,
      replayFacts(ctx, a.handle, r),
    ]);
    const facts = [
      `trigger: ${triggerText(a.handle, r)}${initiator ? ` by [@${initiator.handle}](/u/${initiator.handle})` : ""}`,
      `model: ${r.model ? `\`${mdEscape(r.model)}\`` : "default"}`,
      `queued ${when(r.createdAt)}`,
      // Woken by someone who does not manage it: it read only what they can.
      ...(viewers.length ? [`acting within ${viewers.map((v) => `@${v.handle}`).join(" and ")}'s view`] : []),
      ...replays,
    ];
    const blocks: Block[] = [
      { md: progressLine(r), html: progressHtml(r) },
      { md: facts.join(" · ") },
      { md: `## Task\n\n${quote(r.task)}` },
    ];
    const titles = await pageTitles(
      ctx,
      pending.flatMap((x) => [x.pagePath, x.resultPath ?? ""]),
    );
    if (r.finalMessage)
      blocks.push({ md: `## Final message\n\n${quote(r.finalMessage)}${whatHappened(pending, titles)}` });
    if (r.status === "queued" && r.notBefore && r.notBefore > new Date())
      blocks.push({
        md: `## Waiting for its trigger rate\n\n${mdEscape(a.name)} starts at most the workspace's trigger rate of runs a minute from mentions, replies, comments and subscriptions; this one starts after ${when(r.notBefore)}, in the order its triggers came.`,
      });
    if (r.error)
      blocks.push({
        md: `## ${errorHeading(r)}\n\n${mdEscape(r.error)}${retried ? `\n\nRetried as ${link(`run ${retried.id}`, `/subagents/${a.handle}/runs/${retried.id}`)}.` : ""}`,
      });
    blocks.push(...(await pausedBlocks(ctx, r)));
    if (r.status === "waiting" && r.stopReason === "asked_owner" && r.question)
      blocks.push({ md: `## Waiting for your answer\n\n${quote(r.question)}` });
    if (pending.length) blocks.push(...askedBlocks(a.handle, r, pending, titles, scope.reviewable ?? []));
    blocks.push({
      md: `## Resources it created or changed (${resources.length})\n\n${resources.length ? resources.map((x) => `- ${x.resourceType} \`${x.resourceId}\` — ${x.action} at step ${x.stepNumber} — ${link(x.path, x.path)}`).join("\n") : "_None._"}`,
    });
    if (mayManage(ctx.actor, a)) blocks.push(...(await memoryBlocks(ctx, a.handle, r)));
    blocks.push(...((await replaySteps(ctx, a.handle, r, steps)) ?? [stepsBlock(steps, a.handle, r.id)]));
    const state = runState(r);
    return {
      title: `Run ${r.id} of ${a.name}`,
      breadcrumb: [
        ...agentCrumbs(a),
        { label: "Runs", path: `/subagents/${a.handle}/runs` },
        { label: r.id },
      ],
      blocks,
      live: ENDED.has(state) ? undefined : { since: positionOf(steps.at(-1)?.number ?? 0, state) },
    };
  },
  live: (ctx, scope) => runFeed(ctx.db, scope.agent, scope.taskRun),
});
