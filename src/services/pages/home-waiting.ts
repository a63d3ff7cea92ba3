// What waits for the reader, for the home page (studios.ts homePage): actions of their agents
// they can decide, questions their agents asked them, mentions they have not read, and the
// runs they started with how each stands. Each list is the first few, linked to the page
// that holds them all. Read with the rules the pages they link to use: managedBy for
// approvals and questions, readableRuns for a run's own page, the reader's studios for titles.
import { Prisma } from "../../generated/prisma/client.ts";
import { managedAmong, studiosSeenByViewers } from "../access.ts";
import { managedBy } from "../agents/core/ownership.ts";
import { endingWords, UNFINISHED, unansweredWords } from "../agents/core/run-endings.ts";
import { awaitingReview } from "../agents/policy/approvals.ts";
import { readableRuns } from "../agents/policy/labels.ts";
import { studioHandleOf } from "../page-titles.ts";
import { markdownToHtml } from "../registry/html.ts";
import { link, mdEscape } from "../registry/markdown.ts";
import type { Block, Ctx } from "../registry/types.ts";
import { excerpt, when } from "./format.ts";
import { notificationBlock, titlesOf } from "./notifications.ts";
import { doing, pageLink, pageTitles } from "./pending-format.ts";
import { runPath, runState } from "./run-steps.ts";

/** How many of each a home page shows; the rest are a link away. */
const FEW = 5;

async function approvals(ctx: Ctx) {
  const where = { tenantId: ctx.tenant.id, ...awaitingReview(), agent: managedBy(ctx.actor.id) };
  const [items, total] = await Promise.all([
    ctx.db.agentPendingAction.findMany({
      where,
      include: { agent: { select: { handle: true, name: true } } },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: FEW,
    }),
    ctx.db.agentPendingAction.count({ where }),
  ]);
  return { items, total };
}

async function questions(ctx: Ctx) {
  const runs = await ctx.db.subagentTaskRun.findMany({
    where: {
      tenantId: ctx.tenant.id,
      status: "waiting",
      stopReason: "asked_owner",
      question: { not: null },
      agent: managedBy(ctx.actor.id),
    },
    include: { agent: { select: { handle: true, name: true } } },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    take: FEW,
  });
  // A question can quote what the run read: only to those who may open the run (loadRun's rule).
  const readable = await readableRuns(
    ctx.db,
    ctx.tenant.id,
    ctx.actor.id,
    runs.map((run) => ({ runId: run.id, agentId: run.agentId, label: run.label })),
  );
  return runs.filter((run) => readable.has(run.id));
}

async function mentions(ctx: Ctx) {
  const seen = await studiosSeenByViewers(ctx);
  const where = {
    tenantId: ctx.tenant.id,
    userId: ctx.actor.id,
    dismissedAt: null,
    kind: "mention" as const,
    ...(seen && { event: { studioId: { in: seen } } }),
  };
  const [items, total] = await Promise.all([
    ctx.db.notification.findMany({
      where,
      include: { actor: { select: { handle: true, name: true } } },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: FEW,
    }),
    ctx.db.notification.count({ where }),
  ]);
  return { items, total };
}

interface StartedRun {
  id: string;
  agentId: string;
  handle: string;
  status: "queued" | "running" | "waiting" | "completed" | "failed" | "timed_out" | "cancelled";
  stopReason: string | null;
  stopRequestedAt: Date | null;
  createdAt: Date;
  label: unknown;
  threadPath: string | null;
  replied: boolean;
  awaitingApproval: boolean;
  blocked: boolean;
}

/** The reader's newest runs (a mention, a reply, the run form), with the thread each was woken in. */
async function startedRuns(ctx: Ctx): Promise<StartedRun[]> {
  return ctx.db.$queryRaw<StartedRun[]>(Prisma.sql`
    SELECT r.id, r.agent_id AS "agentId", a.handle, r.status::text AS status, r.stop_reason AS "stopReason",
      r.stop_requested_at AS "stopRequestedAt", r.created_at AS "createdAt", r.label,
      CASE WHEN n.id IS NOT NULL THEN '/studios/' || ns.handle || '/notes/' || n.id
        WHEN d.id IS NOT NULL THEN '/studios/' || ds.handle || '/decisions/' || d.id
        WHEN c.id IS NOT NULL THEN '/studios/' || cs.handle || '/commitments/' || c.id END AS "threadPath",
      EXISTS (SELECT 1 FROM comments rc WHERE rc.run_id = r.id AND rc.subject_id = r.thread_id) AS replied,
      EXISTS (SELECT 1 FROM agent_pending_actions rp WHERE rp.run_id = r.id AND rp.status = 'pending') AS "awaitingApproval",
      coalesce((SELECT (rs.detail->>'status') IN ('403', '404') FROM subagent_task_run_steps rs
        WHERE rs.run_id = r.id AND rs.type = 'navigate' ORDER BY rs.number DESC LIMIT 1), false) AS blocked
    FROM subagent_task_runs r JOIN users a ON a.id = r.agent_id
      LEFT JOIN notes n ON n.id = r.thread_id LEFT JOIN studios ns ON ns.id = n.studio_id
      LEFT JOIN decisions d ON d.id = r.thread_id LEFT JOIN studios ds ON ds.id = d.studio_id
      LEFT JOIN commitments c ON c.id = r.thread_id LEFT JOIN studios cs ON cs.id = c.studio_id
    WHERE r.tenant_id = ${ctx.tenant.id} AND r.initiated_by_id = ${ctx.actor.id}
    ORDER BY r.created_at DESC, r.id DESC LIMIT ${FEW}`);
}

/** Everything the home page lists as waiting, read at once. */
export async function loadWaiting(ctx: Ctx) {
  const [pending, asked, mentioned, started] = await Promise.all([
    ctx.actor.kind === "person" ? approvals(ctx) : { items: [], total: 0 },
    ctx.actor.kind === "person" ? questions(ctx) : [],
    mentions(ctx),
    startedRuns(ctx),
  ]);
  const [titles, mentionTitles, readable, managed] = await Promise.all([
    pageTitles(ctx, [...pending.items.map((p) => p.pagePath), ...started.flatMap((r) => r.threadPath ?? [])]),
    titlesOf(
      ctx,
      mentioned.items.map((n) => n.path),
    ),
    readableRuns(
      ctx.db,
      ctx.tenant.id,
      ctx.actor.id,
      started.map((run) => ({ runId: run.id, agentId: run.agentId, label: run.label })),
    ),
    managedAmong(
      ctx,
      started.map((run) => run.agentId),
    ),
  ]);
  return { pending, asked, mentioned, started, titles, mentionTitles, readable, managed };
}

export type Waiting = Awaited<ReturnType<typeof loadWaiting>>;

const AT_WORK: Record<string, string> = {
  queued: "waiting to start",
  running: "at work",
  stopping: "stopping",
  pausing: "pausing",
  waiting: "paused",
};

/** How a run the reader started stands, in words they may read whoever manages the agent. */
function runOutcome(run: StartedRun): string {
  if (run.threadPath) {
    const unanswered = unansweredWords(run);
    if (unanswered) return unanswered.told;
    if (run.status === "completed") return "it answered";
  }
  if (UNFINISHED.includes(run.status)) return endingWords(run);
  if (run.status === "completed") return "finished";
  if (run.status === "waiting" && run.stopReason === "asked_owner") return "waiting for its owner's answer";
  if (run.status === "waiting" && run.awaitingApproval) return "one of its actions waits for approval";
  return AT_WORK[runState(run)] ?? runState(run);
}

function runLine(run: StartedRun, waiting: Waiting): string {
  const where = run.threadPath
    ? ` in ${waiting.titles.has(run.threadPath) ? pageLink(waiting.titles, run.threadPath) : "a thread you no longer read"}`
    : "";
  // Its run page opens to its managers who may read all it read (loadAgent, then loadRun).
  const open =
    waiting.managed.has(run.agentId) && waiting.readable.has(run.id)
      ? ` · ${link("See its run", runPath(run.handle, run.id))}`
      : "";
  return `- @${run.handle}${where} · **${runState(run)}**: ${mdEscape(runOutcome(run))} · ${when(run.createdAt)}${open}`;
}

function section(title: string, total: number, lines: string[], more: string | null): string {
  const all = more && total > lines.length ? `\n\n${more}` : "";
  return `### ${title} (${total})\n\n${lines.join("\n")}${all}`;
}

/** The "Waiting for you" part of the home page, pure: each list only when it has something. */
export function waitingBlocks(waiting: Waiting): Block[] {
  const { pending, asked, mentioned, started, titles } = waiting;
  const parts: Block[] = [];
  if (pending.total)
    parts.push({
      md: section(
        "Approvals you can decide",
        pending.total,
        pending.items.map(
          (item) =>
            `- ${doing(item.actionName)} by ${mdEscape(item.agent.name)} (@${item.agent.handle}) on ${pageLink(titles, item.pagePath)} · asked ${when(item.createdAt)} · ${link("Review", `/subagents/${item.agent.handle}/pending/${item.id}`)}`,
        ),
        link("All approvals", "/approvals"),
      ),
    });
  if (asked.length)
    parts.push({
      md: section(
        "Questions for you",
        asked.length,
        asked.map(
          (run) =>
            `- ${mdEscape(run.agent.name)} (@${run.agent.handle}) asks: “${mdEscape(excerpt(run.question ?? "", 200))}” · ${link("Answer", runPath(run.agent.handle, run.id))}`,
        ),
        null,
      ),
    });
  if (mentioned.total) {
    const head = `### Unread mentions (${mentioned.total})`;
    const more =
      mentioned.total > mentioned.items.length ? `\n\n${link("All notifications", "/notifications")}` : "";
    const items = mentioned.items.map((item) => notificationBlock(waiting.mentionTitles, item));
    parts.push({
      md: `${head}\n\n${items.map((item) => item.md).join("\n")}${more}`,
      html: `${markdownToHtml(head)}${items.map((item) => item.html).join("")}${markdownToHtml(more)}`,
    });
  }
  if (started.length)
    parts.push({
      md: section(
        "Runs you started",
        started.length,
        started.map((run) => runLine(run, waiting)),
        null,
      ),
    });
  return [
    {
      md: `## Waiting for you\n\n${parts.length ? "Newest mentions and runs first; approvals and questions oldest first." : "_Nothing waits for you: no approval, no question, no unread mention, no run you started._"}`,
    },
    ...parts,
  ];
}

/** The studios a home page names, by the paths it links (each a source: a studio's name can be private). */
export function waitingStudioHandles(waiting: Waiting): string[] {
  const paths = [
    ...waiting.pending.items.map((p) => p.pagePath),
    ...waiting.started.flatMap((r) => r.threadPath ?? []),
    ...waiting.mentioned.items.map((n) => n.path),
  ];
  return [...new Set(paths.flatMap((path) => studioHandleOf(path) ?? []))];
}
