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
import { ENDPOINT_DISABLED, ENDPOINT_TEST, notifyEndpointOff } from "../services/reach/endpoints.ts";
import { queueTestDelivery, reachOut } from "../services/reach/fanout.ts";
import { mayBeNews } from "../services/reach/news.ts";
import { readEvent, type Subject } from "../services/subjects.ts";
import { inJobSpan } from "./job-span.ts";
import { type Outbound, queueOutbound } from "./process-outbound.ts";
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

/**
 * One consumer for the outbox: notifications, agent triggers, runs to start, and the mails
 * and outgoing webhooks an event makes (when the worker reaches people: `outbound`).
 */
export function eventProcessor(
  prisma: PrismaClient,
  queues: Pick<Queues, "agent-runs" | "approved-actions" | "outbound">,
  outbound?: Outbound,
) {
  const inApp = inAppProcessor(prisma, queues);
  // A span of its own in the trace of the request that wrote the event (job-span.ts).
  return (job: Job<JobPayloads["events"]>) =>
    inJobSpan(job, "events", () => processEvent(prisma, queues, inApp, job.data.eventId, outbound));
}

async function processEvent(
  prisma: PrismaClient,
  queues: Pick<Queues, "outbound">,
  inApp: ReturnType<typeof inAppProcessor>,
  eventId: string,
  outbound?: Outbound,
) {
  // The event with what it is about, in one read: a mention's run waits on it.
  const read = await readEvent(prisma, eventId);
  if (!read) return { skipped: "no such event" };
  if (read.event.type === ENDPOINT_TEST) {
    const reached = outbound ? await queueTestDelivery(prisma, read.event, outbound.reach) : null;
    if (outbound && reached) await queueOutbound(queues, outbound, reached);
    return { delivered: reached?.deliveries.length ?? 0 };
  }
  const done = await inApp(read.event, read.subject);
  if (!outbound || !mayBeNews(read.event.type)) return done;
  // After the app's own notices: a retried job redoes those as no-ops, and mails nobody twice.
  const reached = await reachOut(prisma, read.event, outbound.reach);
  await queueOutbound(queues, outbound, reached);
  return { ...done, mailed: reached.emails.length, delivered: reached.deliveries.length };
}

function inAppProcessor(prisma: PrismaClient, queues: Pick<Queues, "agent-runs" | "approved-actions">) {
  return async (e: Event, subject: Subject | null) => {
    // The relay sends queued runs to agent-runs itself; an event published before it did still lands here.
    if (e.type === "run.queued") {
      const job = runJob(e.id, e.subjectId);
      await queues["agent-runs"].add(job.name, job.data, job.opts);
      return { enqueued: e.subjectId };
    }
    // Its notices were written with it (agents/refusals.ts).
    if (e.type === UNANSWERED) return { notified: 0 };
    if (e.type === "run.waiting" || e.type === "run.failed" || e.type === "run.timed_out")
      return { notified: await notifyOwnerOfRun(prisma, e) };
    if (e.type === ENDPOINT_DISABLED) return { notified: await notifyEndpointOff(prisma, e) };
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
