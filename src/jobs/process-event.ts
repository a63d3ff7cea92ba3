import type { Job } from "bullmq";
import type { PrismaClient } from "../db/prisma.ts";
import type { Event } from "../generated/prisma/client.ts";
import { wakeSubscribers } from "../services/agents/automations/subscriptions.ts";
import {
  notifyOwnerOfApproval,
  notifyOwnerOfRun,
  notifyOwnerOfSpend,
} from "../services/agents/core/notify.ts";
import { gradingFor } from "../services/agents/runtime/rubric-grader.ts";
import { dispatchTriggers } from "../services/agents/triggers/dispatcher.ts";
import { UNANSWERED } from "../services/agents/triggers/refusals.ts";
import { notifyWakerOfRun } from "../services/agents/triggers/unanswered.ts";
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
  event: Event,
  subject: Subject,
): Promise<string[]> {
  const queued = await dispatchTriggers(prisma, event, subject);
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
  queues: Pick<Queues, "agent-runs" | "approved-actions" | "outbound" | "grading">,
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

/**
 * The grading an event asks for (a run of a case with a rubric ended, a case with one saved),
 * queued under the event's id: a retried event job queues it once.
 */
async function queueGrading(prisma: PrismaClient, queues: Pick<Queues, "grading">, event: Event) {
  const job = await gradingFor(prisma, event);
  if (job) await queues.grading.add("grade", job, { jobId: `grade-${event.id}` });
  return job ? 1 : 0;
}

function inAppProcessor(
  prisma: PrismaClient,
  queues: Pick<Queues, "agent-runs" | "approved-actions" | "grading">,
) {
  return async (event: Event, subject: Subject | null) => {
    // The relay sends queued runs to agent-runs itself; an event published before it did still lands here.
    if (event.type === "run.queued") {
      const job = runJob(event.id, event.subjectId);
      await queues["agent-runs"].add(job.name, job.data, job.opts);
      return { enqueued: event.subjectId };
    }
    // Its notices were written with it (agents/refusals.ts).
    if (event.type === UNANSWERED) return { notified: 0 };
    // Its managers hear of a question or a failure; whoever woke it in a thread, of no answer there.
    if (event.type === "run.waiting" || event.type === "run.failed" || event.type === "run.timed_out")
      return {
        notified: (await notifyOwnerOfRun(prisma, event)) + (await notifyWakerOfRun(prisma, event)),
        graded: await queueGrading(prisma, queues, event),
      };
    if (event.type === "run.completed" || event.type === "run.cancelled")
      return {
        notified: await notifyWakerOfRun(prisma, event),
        graded: await queueGrading(prisma, queues, event),
      };
    if (event.type === ENDPOINT_DISABLED) return { notified: await notifyEndpointOff(prisma, event) };
    if (event.type === "usage.threshold" || event.type === "agent.paused" || event.type === "agent.resumed")
      return { notified: await notifyOwnerOfSpend(prisma, event) };
    if (event.type === "approval.requested") return { notified: await notifyOwnerOfApproval(prisma, event) };
    if (event.type === "approval.approved") {
      await queues["approved-actions"].add(
        "execute",
        { pendingId: event.subjectId },
        { jobId: `approved-${event.subjectId}` },
      );
      return { enqueued: event.subjectId };
    }
    // A mention's run is queued while its notifications are written, not after them: each is
    // its own transaction, and a retried job redoes both without doubling either.
    const [notified, runs] = await Promise.all([
      notifyForEvent(prisma, event, subject),
      subject ? startTriggered(prisma, queues, event, subject) : [],
    ]);
    // After the mentions, so an agent both mentioned and subscribed is woken once.
    const watched = await wakeSubscribers(prisma, event);
    return { notified, runs, watched, graded: await queueGrading(prisma, queues, event) };
  };
}
