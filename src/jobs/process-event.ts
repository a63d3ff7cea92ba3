import type { Job } from "bullmq";
import type { PrismaClient } from "../db/prisma.ts";
import type { Event } from "../generated/prisma/client.ts";
import { wakeSubscribers } from "../services/agents/automations/subscriptions.ts";
import {
  notifyOwnerOfApproval,
  notifyOwnerOfRun,
  notifyOwnerOfSpend,
} from "../services/agents/core/notify.ts";
import { dispatchTriggers } from "../services/agents/triggers/dispatcher.ts";
import { UNANSWERED } from "../services/agents/triggers/refusals.ts";
import { notifyForEvent } from "../services/notifications.ts";
import { readEvent, type Subject } from "../services/subjects.ts";
import { type JobPayloads, type Queues, runJob } from "./queues.ts";

/**
 * Queues the runs an event wakes, and sends their jobs as soon as the runs are committed: a
 * relay round sooner (commit, NOTIFY, the relay's batch: 3–4 ms). The relay sends the same
 * jobs again, a no-op; if Redis refuses them now, the relay's are the ones that count.
 */
async function startTriggered(
  prisma: PrismaClient,
  queues: Pick<Queues, "agent-runs">,
  e: Event,
  subject: Subject,
): Promise<string[]> {
  const queued = await dispatchTriggers(prisma, e, subject);
  if (queued.length)
    await queues["agent-runs"].addBulk(queued.map((r) => runJob(r.eventId, r.id))).catch(() => undefined);
  return queued.map((r) => r.id);
}

/** One consumer for the outbox: notifications, agent triggers, and runs to start. */
export function eventProcessor(
  prisma: PrismaClient,
  queues: Pick<Queues, "agent-runs" | "approved-actions">,
) {
  return async (job: Job<JobPayloads["events"]>) => {
    // The event with what it is about, in one read: a mention's run waits on it.
    const read = await readEvent(prisma, job.data.eventId);
    if (!read) return { skipped: "no such event" };
    const { event: e, subject } = read;
    // The relay sends queued runs to agent-runs itself; an event published before it did still lands here.
    if (e.type === "run.queued") {
      const job = runJob(e.id, e.subjectId);
      await queues["agent-runs"].add(job.name, job.data, job.opts);
      return { enqueued: e.subjectId };
    }
    // Its notices were written with it (agents/refusals.ts).
    if (e.type === UNANSWERED) return { notified: 0 };
    if (e.type === "run.waiting") return { notified: await notifyOwnerOfRun(prisma, e) };
    if (e.type === "usage.threshold" || e.type === "agent.paused" || e.type === "agent.resumed")
      return { notified: await notifyOwnerOfSpend(prisma, e) };
    if (e.type === "approval.requested") return { notified: await notifyOwnerOfApproval(prisma, e) };
    if (e.type === "approval.approved") {
      await queues["approved-actions"].add(
        "execute",
        { pendingId: e.subjectId },
        { jobId: `approved-${e.subjectId}` },
      );
      return { enqueued: e.subjectId };
    }
    // A mention's run is queued while its notifications are written, not after them: each is
    // its own transaction, and a retried job redoes both without doubling either.
    const [notified, runs] = await Promise.all([
      notifyForEvent(prisma, e, subject),
      subject ? startTriggered(prisma, queues, e, subject) : [],
    ]);
    // After the mentions, so an agent both mentioned and subscribed is woken once.
    const watched = await wakeSubscribers(prisma, e);
    return { notified, runs, watched };
  };
}
