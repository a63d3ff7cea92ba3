// A run's page, /subagents/:handle/runs/:run: who may open it (resolve), what it shows (one
// loader), and the markdown it renders from that, purely. Its steps render through
// run-steps.ts, as the live stream and the step's own page render them.
import type { AgentPendingAction, SubagentTaskRun } from "../../generated/prisma/client.ts";
import { NotFoundError } from "../../lib/errors.ts";
import { loadRun } from "../access.ts";
import { loadAgent, mayManage, maySee, withOwnerStudio } from "../agents/core/ownership.ts";
import { runVersion, TERMINAL } from "../agents/core/runs.ts";
import { awaitingReview } from "../agents/policy/approvals.ts";
import { retryKey } from "../agents/triggers/retry.ts";
import { parseLabel } from "../registry/audiences.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type AgentScope, type Block, type Ctx, definePage, type PageView } from "../registry/types.ts";
import { versionPath } from "./agent-versions.ts";
import { reviewForms } from "./approvals.ts";
import { agentCrumbs, when } from "./format.ts";
import { doing, pageLink, pageTitles, writeOf } from "./pending-format.ts";
import { dryBlocks } from "./run-dry.ts";
import { positionOf, runFeed } from "./run-live.ts";
import { memoryBlocks, pausedBlocks } from "./run-memory-pause.ts";
import { replayFacts, replaySteps } from "./run-replay.ts";
import { ENDED, progressHtml, progressLine, runState, stepsBlock } from "./run-steps.ts";
import { triggerText } from "./runs.ts";
import { saveCaseForm } from "./test-case-form.ts";

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

/** Its managers see every run; a member who gave a studio's agent a task sees that run; whoever's trigger was refused sees that refusal. */
async function resolveRun(ctx: Ctx, params: { handle: string; run: string }): Promise<RunScope> {
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
      ).map((pending) => pending.id)
    : [];
  return { agent, taskRun, reviewable };
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
    "save_test_case",
  ],
  resolve: resolveRun,
  render: async (ctx, scope) => runView(await loadRunPage(ctx, scope)),
  live: (ctx, scope) => runFeed(ctx.db, scope.agent, scope.taskRun),
});

/** Everything a run's page shows: its steps, what it changed, who woke it, what it asked approval for. */
async function loadRunPage(ctx: Ctx, scope: RunScope) {
  const { agent, taskRun: run } = scope;
  const [steps, resources, initiator, pending, viewers, retried, replays] = await Promise.all([
    ctx.db.subagentTaskRunStep.findMany({ where: { runId: run.id }, orderBy: { number: "asc" } }),
    ctx.db.subagentTaskRunResource.findMany({ where: { runId: run.id }, orderBy: { createdAt: "asc" } }),
    run.initiatedById ? ctx.db.user.findUnique({ where: { id: run.initiatedById } }) : null,
    ctx.db.agentPendingAction.findMany({
      where: { runId: run.id },
      orderBy: { createdAt: "asc" },
      include: { reviewedBy: { select: { name: true } } },
    }),
    run.viewerIds.length
      ? ctx.db.user.findMany({ where: { id: { in: run.viewerIds } }, select: { handle: true } })
      : [],
    run.status === "skipped"
      ? ctx.db.subagentTaskRun.findUnique({
          where: { agentId_triggerEventId: { agentId: agent.id, triggerEventId: retryKey(run) } },
          select: { id: true },
        })
      : null,
    replayFacts(ctx, agent.handle, run),
  ]);
  // The parts that read what the first reads found; none waits on another.
  const [titles, paused, memory, replayed] = await Promise.all([
    pageTitles(
      ctx,
      pending.flatMap((asked) => [asked.pagePath, asked.resultPath ?? ""]),
    ),
    pausedBlocks(ctx, run),
    mayManage(ctx.actor, agent) ? memoryBlocks(ctx, agent.handle, run) : [],
    replaySteps(ctx, agent.handle, run, steps),
  ]);
  return {
    agent,
    run,
    reviewable: scope.reviewable,
    steps,
    resources,
    initiator,
    pending,
    viewers,
    retried,
    replays,
    titles,
    paused,
    memory,
    replayed,
    // Its versions are its managers' to read (pages/agent-versions.ts).
    version: mayManage(ctx.actor, agent) ? runVersion(run) : null,
    // Saving it as a test case is its managers', once it has ended (actions/test-cases.ts).
    savable: mayManage(ctx.actor, agent) && TERMINAL.includes(run.status),
    now: new Date(),
  };
}

type RunData = Awaited<ReturnType<typeof loadRunPage>>;
type Asked = Pick<
  AgentPendingAction,
  "id" | "actionName" | "pagePath" | "status" | "reviewNote" | "error" | "resultPath" | "expiresAt"
> & { reviewedBy: { name: string } | null };

/** What a run's `error` explains, in words: a stop its owner asked for is not an error. */
function errorHeading(run: Pick<SubagentTaskRun, "status" | "stopReason">): string {
  if (run.status === "skipped") return "Why it did not run";
  if (run.status === "cancelled" || run.status === "timed_out" || run.stopReason === "stopped_by_owner")
    return "Why it stopped";
  return "What went wrong";
}

/** What became of one action it asked approval for and that was not done, in words. */
function notDoneWords(asked: Asked, titles: Map<string, string>, now: Date): string {
  const where = titles.get(asked.pagePath) ?? asked.pagePath;
  const what = `its ${writeOf(asked.actionName)} (\`${asked.actionName}\`, #${asked.id}) on ${mdEscape(where)}`;
  if (asked.status === "rejected") {
    const note = asked.reviewNote ? ` (${mdEscape(asked.reviewNote)})` : "";
    return `${what} was **not done**: rejected by ${mdEscape(asked.reviewedBy?.name ?? "its owner")}${note}`;
  }
  if (asked.status === "pending" && asked.expiresAt > now) return `${what} is **waiting for approval**`;
  if (asked.status === "failed") return `${what} was **not done**: ${mdEscape(asked.error ?? "it failed")}`;
  return `${what} was **not done**: it expired unapproved`;
}

/**
 * Under the agent's own last words, what became of what it asked approval for: a run whose
 * reply was rejected still said "Replied in the thread.", and only this says otherwise.
 */
function whatHappened({ pending, titles, now }: RunData): string {
  const notDone = pending.filter((asked) => asked.status !== "executed" && asked.status !== "approved");
  if (!notDone.length) return "";
  const lines = notDone.map((asked) => notDoneWords(asked, titles, now));
  return `\n\n_Those are the agent's words. What happened:_ ${lines.join("; ")}.`;
}

/** One action it asked approval for, on its page by title, with who reviewed it and where the result is. */
function askedLine(handle: string, asked: Asked, titles: Map<string, string>): string {
  const reviewer = asked.reviewedBy ? ` by ${mdEscape(asked.reviewedBy.name)}` : "";
  const why = asked.reviewNote || asked.error;
  const note = why ? `: ${mdEscape(why)}` : "";
  const result = asked.resultPath ? ` → ${pageLink(titles, asked.resultPath)}` : "";
  return `- ${link(`#${asked.id}`, `/subagents/${handle}/pending/${asked.id}`)} ${doing(asked.actionName)} on ${pageLink(titles, asked.pagePath)} — **${asked.status}**${reviewer}${note}${result}`;
}

/** The actions it asked approval for; Approve and Reject beside those still open. */
function askedBlocks({ agent, run, pending, titles, reviewable }: RunData): Block[] {
  const waits = run.status === "waiting" && run.stopReason === "awaiting_approval";
  const blocks: Block[] = [
    {
      md: `## Actions it asked you to approve (${pending.length})${waits ? "\n\nThe run waits for your review." : ""}`,
    },
  ];
  for (const asked of pending) {
    blocks.push({ md: askedLine(agent.handle, asked, titles) });
    if (reviewable.includes(asked.id))
      blocks.push(
        ...reviewForms(asked.id, undefined, {
          approve: `Approve #${asked.id}`,
          reject: `Reject #${asked.id}`,
        }),
      );
  }
  return blocks;
}

function factsLine({ agent, run, initiator, viewers, replays, version }: RunData): string {
  const by = initiator ? ` by [@${initiator.handle}](/u/${initiator.handle})` : "";
  return [
    `trigger: ${triggerText(agent.handle, run)}${by}`,
    `model: ${run.model ? `\`${mdEscape(run.model)}\`` : "default"}`,
    `queued ${when(run.createdAt)}`,
    ...(version ? [link(`Ran under version ${version}`, versionPath(agent.handle, version))] : []),
    // Woken by someone who does not manage it: it read only what they can.
    ...(viewers.length
      ? [`acting within ${viewers.map((viewer) => `@${viewer.handle}`).join(" and ")}'s view`]
      : []),
    ...replays,
  ].join(" · ");
}

/** Why it ended as it did, and the run that retried it. */
function errorBlock({ agent, run, retried }: RunData, error: string): string {
  const retriedAs = retried
    ? `\n\nRetried as ${link(`run ${retried.id}`, `/subagents/${agent.handle}/runs/${retried.id}`)}.`
    : "";
  return `## ${errorHeading(run)}\n\n${mdEscape(error)}${retriedAs}`;
}

function resourcesBlock({ resources }: RunData): string {
  const lines = resources.map(
    (resource) =>
      `- ${resource.resourceType} \`${resource.resourceId}\` — ${resource.action} at step ${resource.stepNumber} — ${link(resource.path, resource.path)}`,
  );
  return `## Resources it created or changed (${resources.length})\n\n${lines.join("\n") || "_None._"}`;
}

/** The sections a run has only in some states: its final words, a wait, an error, a pause, a question. */
function stateBlocks(data: RunData): Block[] {
  const { agent, run } = data;
  const blocks: Block[] = [];
  if (run.finalMessage)
    blocks.push({ md: `## Final message\n\n${quote(run.finalMessage)}${whatHappened(data)}` });
  if (run.status === "queued" && run.notBefore && run.notBefore > data.now)
    blocks.push({
      md: `## Waiting for its trigger rate\n\n${mdEscape(agent.name)} starts at most the workspace's trigger rate of runs a minute from mentions, replies, comments and subscriptions; this one starts after ${when(run.notBefore)}, in the order its triggers came.`,
    });
  if (run.error) blocks.push({ md: errorBlock(data, run.error) });
  blocks.push(...data.paused);
  if (run.status === "waiting" && run.stopReason === "asked_owner" && run.question)
    blocks.push({ md: `## Waiting for your answer\n\n${quote(run.question)}` });
  return blocks;
}

function runView(data: RunData): PageView {
  const { agent, run, steps } = data;
  const state = runState(run);
  return {
    title: `Run ${run.id} of ${agent.name}`,
    breadcrumb: [
      ...agentCrumbs(agent),
      { label: "Runs", path: `/subagents/${agent.handle}/runs` },
      { label: run.id },
    ],
    blocks: [
      { md: progressLine(run), html: progressHtml(run) },
      { md: factsLine(data) },
      ...(run.dry ? dryBlocks(steps).slice(0, 1) : []),
      { md: `## Task\n\n${quote(run.task)}` },
      ...stateBlocks(data),
      ...(data.pending.length ? askedBlocks(data) : []),
      ...(run.dry ? dryBlocks(steps).slice(1) : [{ md: resourcesBlock(data) }]),
      ...data.memory,
      ...(data.replayed ?? [stepsBlock(steps, agent.handle, run.id)]),
      ...(data.savable ? [saveCaseForm(run, steps)] : []),
    ],
    live: ENDED.has(state) ? undefined : { since: positionOf(steps.at(-1)?.number ?? 0, state) },
    // Its final message, memory and steps quote what the run read: a reader's label narrows by the run's.
    sources: parseLabel(run.label),
  };
}
