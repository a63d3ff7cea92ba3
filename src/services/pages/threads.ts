// A thread (a note's, a decision's or a commitment's comments) as it lives: who is working
// on it right now (an agent its comments or mentions woke) and its comments. The page shows
// both; its live feed says `changed` when either changes, and the browser reads the page
// again. Where the thread stands is a digest of its comments and working runs, computed by
// one statement that the page and the feed share.
import { hotQuery } from "../../db/prisma.ts";
import { Prisma, type RunStatus, type SubjectType } from "../../generated/prisma/client.ts";
import { managedAmong } from "../access.ts";
import { endingWords, UNFINISHED, unansweredWords } from "../agents/core/run-endings.ts";
import { changesFeed, digestOf, type LiveFeed, sharedReads } from "../live/feed.ts";
import { inlineHtml } from "../registry/html.ts";
import { link } from "../registry/markdown.ts";
import type { Block, Ctx, Query } from "../registry/types.ts";
import { commentsBlock } from "./comments.ts";
import { type RunState, runPath, runState } from "./run-steps.ts";
import { reviewBlocks } from "./thread-reviews.ts";

interface Working {
  run: string;
  agentId: string;
  handle: string;
  state: RunState | "ended";
  /**
   * A run that failed, timed out or was stopped, or one that ended (or waits for an approval)
   * without answering: said in words its readers may read (run-endings.ts), after "@scout"
   * (it starts with its own space or "'s").
   */
  ended?: string;
}

interface ThreadState {
  digest: string;
  comments: number;
  working: Working[];
  /** Actions the runs woken here asked approval for and that did not happen (yet): waiting, refused, expired. */
  unposted: number;
}

async function threadState(ctx: Ctx, type: SubjectType, id: string): Promise<ThreadState> {
  const [row] = await hotQuery<{
    comments: number;
    last: string | null;
    working: {
      run: string;
      agentId: string;
      handle: string;
      status: RunStatus;
      stopReason: string | null;
      stopping: boolean;
      replied: boolean;
      awaitingApproval: boolean;
      blocked: boolean;
    }[];
    unposted: { id: string; status: string; run: string }[];
  }>(
    ctx.db,
    Prisma.sql`
    SELECT (SELECT count(*)::int FROM comments c
        WHERE c.tenant_id = ${ctx.tenant.id} AND c.subject_type = ${type}::"SubjectType" AND c.subject_id = ${id}) AS comments,
      (SELECT c.id FROM comments c
        WHERE c.tenant_id = ${ctx.tenant.id} AND c.subject_type = ${type}::"SubjectType" AND c.subject_id = ${id}
        ORDER BY c.created_at DESC, c.id DESC LIMIT 1) AS last,
      COALESCE((SELECT json_agg(json_build_object('run', r.id, 'agentId', r.agent_id, 'handle', u.handle,
          'status', r.status, 'stopReason', r.stop_reason, 'stopping', r.stop_requested_at IS NOT NULL,
          'replied', EXISTS (SELECT 1 FROM comments rc WHERE rc.run_id = r.id AND rc.subject_id = ${id}),
          'awaitingApproval', EXISTS (SELECT 1 FROM agent_pending_actions rp WHERE rp.run_id = r.id AND rp.status = 'pending'),
          'blocked', coalesce((SELECT (rs.detail->>'status') IN ('403', '404') FROM subagent_task_run_steps rs
            WHERE rs.run_id = r.id AND rs.type = 'navigate' ORDER BY rs.number DESC LIMIT 1), false))
          ORDER BY r.created_at, r.id)
        FROM subagent_task_runs r JOIN users u ON u.id = r.agent_id
        WHERE r.thread_id = ${id} AND r.tenant_id = ${ctx.tenant.id}
          AND (r.status IN ('queued', 'running', 'waiting')
            -- Where its "working on this" line was, a run that did not finish, or finished
            -- without a word here, says so, until the agent's next run in the thread.
            OR ((r.status IN ('failed', 'timed_out', 'cancelled') OR (r.status = 'completed'
                AND NOT EXISTS (SELECT 1 FROM comments rc WHERE rc.run_id = r.id AND rc.subject_id = ${id})))
              AND NOT EXISTS (
              SELECT 1 FROM subagent_task_runs later WHERE later.thread_id = r.thread_id
                AND later.agent_id = r.agent_id AND later.tenant_id = r.tenant_id
                AND (later.created_at, later.id) > (r.created_at, r.id))))), '[]') AS working,
      COALESCE((SELECT json_agg(json_build_object('id', p.id, 'status', p.status, 'run', r.id) ORDER BY p.id)
        FROM subagent_task_runs r JOIN agent_pending_actions p ON p.run_id = r.id
        WHERE r.thread_id = ${id} AND r.tenant_id = ${ctx.tenant.id}
          AND p.status IN ('pending', 'rejected', 'expired', 'failed')), '[]') AS unposted`,
  );
  const unposted = row?.unposted ?? [];
  // A reply waiting for approval here has its own notice (thread-reviews.ts), which says so:
  // its run's line would say it twice.
  const reviewed = new Set(unposted.filter((p) => p.status === "pending").map((p) => p.run));
  const waiting = (row?.working ?? []).filter(
    (worker) => !(worker.awaitingApproval && reviewed.has(worker.run)),
  );
  const working = waiting.map((worker): Working => {
    const unanswered = unansweredWords(worker)?.thread;
    const ended = UNFINISHED.includes(worker.status) || worker.status === "completed";
    return {
      run: worker.run,
      agentId: worker.agentId,
      handle: worker.handle,
      state: ended
        ? "ended"
        : runState({ status: worker.status, stopRequestedAt: worker.stopping ? new Date() : null }),
      ...(unanswered
        ? { ended: unanswered }
        : UNFINISHED.includes(worker.status) && { ended: ` ${endingWords(worker)}` }),
    };
  });
  const comments = row?.comments ?? 0;
  return {
    digest: digestOf([comments, row?.last ?? null, working.map((w) => [w.run, w.state, w.ended]), unposted]),
    comments,
    working,
    unposted: unposted.length,
  };
}

const DOING: Record<string, string> = {
  queued: "is about to work on this",
  running: "is working on this",
  stopping: "is stopping",
  waiting: "is waiting for its owner",
  pausing: "is pausing",
};

/** "@scout is working on this", linked to the run for whoever may open it. */
async function workingBlock(ctx: Ctx, working: Working[]): Promise<Block | null> {
  if (!working.length) return null;
  const managed = await managedAmong(
    ctx,
    working.map((w) => w.agentId),
  );
  const lines = working.map((worker) => {
    const doing = `@${worker.handle}${worker.ended ?? ` ${DOING[worker.state] ?? worker.state}`}`;
    return managed.has(worker.agentId)
      ? `${doing} — ${link("see its run", runPath(worker.handle, worker.run))}`
      : doing;
  });
  return {
    md: lines.map((l) => `- ${l}`).join("\n"),
    html: `<ul id="working" class="working" aria-live="polite">${lines.map((l) => `<li>${inlineHtml(l)}</li>`).join("")}</ul>`,
  };
}

/** The thread's blocks (who is working on it, then its comments) and where it stands, for the page's `live`. */
export async function threadBlocks(
  ctx: Ctx,
  type: SubjectType,
  id: string,
  path: string,
  query: Query,
): Promise<{ blocks: Block[]; since: string }> {
  const [state, comments] = await Promise.all([
    threadState(ctx, type, id),
    commentsBlock(ctx, type, id, path, query),
  ]);
  const [working, reviews] = await Promise.all([
    workingBlock(ctx, state.working),
    state.unposted ? reviewBlocks(ctx, id) : [],
  ]);
  return { blocks: [...(working ? [working] : []), ...reviews, ...comments], since: state.digest };
}

// Where a thread stands is the same for everyone who may see it: the streams of one process
// watching it (a note many people have open) share a read.
const shared = sharedReads<ThreadState>();

/** A thread's live feed: `changed`, with how many comments it has and who is working on it. */
export function threadFeed(ctx: Ctx, type: SubjectType, id: string): LiveFeed {
  return changesFeed([`thread:${id}`], async () => {
    const state = await shared(`${ctx.tenant.id}:${id}`, () => threadState(ctx, type, id));
    return {
      digest: state.digest,
      data: {
        comments: state.comments,
        working: state.working.map((w) => ({ agent: w.handle, state: w.state })),
      },
    };
  });
}
