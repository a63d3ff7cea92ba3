// A person who woke an agent in a thread (a mention, a reply, a comment beside it) and got no
// answer there hears so: the run ended without a comment in the thread, or its reply waits
// for its owner's approval. In the run-endings words only (never its final message, which
// may hold what only its managers may read), linked to the thread, which says the same.
// Quiet by design: while an earlier "did not answer" of the same agent about the same thread
// is unread, no new one is added; the run's own event carries it, so a re-delivered event
// notifies nobody twice.
import { hotQuery, type PrismaClient } from "../../../db/prisma.ts";
import { type Event, Prisma } from "../../../generated/prisma/client.ts";
import { insertNotifications } from "../../notifications.ts";
import { readEvent } from "../../subjects.ts";
import { endingWords, UNFINISHED, unansweredWords } from "../core/run-endings.ts";
import { REFUSAL } from "./refusals.ts";

const THREAD_TRIGGERS = ["mention", "reply", "thread"];

const WHAT: Record<string, string> = { mention: "mention", reply: "reply", thread: "comment" };

/** The run's end (or its wait for an approval) as its waker may hear it, or nothing. */
export async function notifyWakerOfRun(db: PrismaClient, event: Event): Promise<number> {
  const [run] = await hotQuery<{
    agentId: string;
    tenantId: string;
    status: "completed" | "waiting" | "failed" | "timed_out" | "cancelled";
    stopReason: string | null;
    triggerKind: string;
    triggerEventId: string | null;
    wakerId: string | null;
    threadId: string | null;
    replied: boolean;
    awaitingApproval: boolean;
    blocked: boolean;
  }>(
    db,
    Prisma.sql`
    SELECT r.agent_id AS "agentId", r.tenant_id AS "tenantId", r.status, r.stop_reason AS "stopReason",
      r.trigger_kind AS "triggerKind", r.trigger_event_id AS "triggerEventId", r.thread_id AS "threadId",
      (SELECT w.id FROM users w WHERE w.id = r.initiated_by_id AND w.kind = 'person' AND w.archived_at IS NULL) AS "wakerId",
      EXISTS (SELECT 1 FROM comments rc WHERE rc.run_id = r.id AND rc.subject_id = r.thread_id) AS replied,
      EXISTS (SELECT 1 FROM agent_pending_actions rp WHERE rp.run_id = r.id AND rp.status = 'pending') AS "awaitingApproval",
      coalesce((SELECT (rs.detail->>'status') IN ('403', '404') FROM subagent_task_run_steps rs
        WHERE rs.run_id = r.id AND rs.type = 'navigate' ORDER BY rs.number DESC LIMIT 1), false) AS blocked
    FROM subagent_task_runs r WHERE r.id = ${event.subjectId}`,
  );
  if (!run?.wakerId || !run.threadId || !run.triggerEventId || !THREAD_TRIGGERS.includes(run.triggerKind))
    return 0;
  // A run that did not finish is told as its thread tells it: "could not finish: …", "stopped: …".
  const told = unansweredWords(run)?.told ?? (UNFINISHED.includes(run.status) ? endingWords(run) : null);
  if (!told) return 0;
  // The thread's page, from what woke the run: the person wrote there, so they may open it.
  const trigger = await readEvent(db, run.triggerEventId);
  const path = trigger?.subject?.path;
  if (!path) return 0;
  const unread = await db.notification.count({
    where: {
      tenantId: run.tenantId,
      userId: run.wakerId,
      actorId: run.agentId,
      path,
      dismissedAt: null,
      excerpt: { startsWith: REFUSAL },
    },
  });
  if (unread) return 0;
  return insertNotifications(db, [
    {
      tenantId: run.tenantId,
      userId: run.wakerId,
      actorId: run.agentId,
      eventId: event.id,
      kind: "agent",
      path,
      excerpt: `${REFUSAL} your ${WHAT[run.triggerKind]}: ${told}`,
    },
  ]);
}
