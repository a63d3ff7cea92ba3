// The one job contract: queue names, the payload of each job, and default options.
// Jobs carry ids, never data; job ids are deterministic (derived from the event or
// run), so a re-delivery is a no-op. Postgres decides what actually happens.
import { type ConnectionOptions, Queue, type QueueOptions } from "bullmq";
import { type OutageLog, redisOutages, watchRedis } from "../db/redis-outages.ts";
import { silentLogger } from "../lib/logger.ts";

export const QUEUE_NAMES = [
  "events",
  "agent-runs",
  "approved-actions",
  "outbound",
  "grading",
  "maintenance",
] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

// `traceparent` (W3C, not a secret) is the span that wrote the job's event, when tracing is
// on: the job's work continues that trace (lib/telemetry.ts).
export interface JobPayloads {
  events: { eventId: string; traceparent?: string };
  "agent-runs": { runId: string; traceparent?: string };
  "approved-actions": { pendingId: string };
  /** A mail or an outgoing webhook's delivery (services/reach/). */
  outbound: { emailId: string } | { deliveryId: string };
  /** A run graded against a test case's rubrics (agents/runtime/rubric-grader.ts). */
  grading: { runId: string; caseId: string };
  maintenance: Record<string, never>;
}

// Jobs fail for good only on a permanent error (runtime.ts turns those into UnrecoverableError);
// a transient one is tried again for about 17 minutes (1 s doubling, jittered), then the
// sweepers re-send what Postgres says is still to do.
export const defaultJobOptions: QueueOptions["defaultJobOptions"] = {
  attempts: 10,
  backoff: { type: "exponential", delay: 1000, jitter: 0.5 },
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

export type Queues = { [K in QueueName]: Queue<JobPayloads[K]> };

/**
 * The job that starts a queued run, named by its `run.queued` event: whoever publishes it
 * (the relay, or the worker that queued the run, as soon as it committed) publishes the
 * same job, and a second add of it is a no-op.
 */
export const runJob = (eventId: string, runId: string, traceparent?: string | null) => ({
  name: "run" as const,
  data: traceparent ? { runId, traceparent } : { runId },
  opts: { jobId: `run-${eventId}` },
});

/**
 * The jobs that send mails and deliveries. A sweep's re-send names its time bucket: the
 * first job may sit in the failed set, and a second add under its id would be a no-op.
 */
export function outboundJobs(
  ids: { emails: string[]; deliveries: string[] },
  delivery: { attempts: number; backoffMs: number },
  bucket?: number,
) {
  const tail = bucket === undefined ? "" : `-${bucket}`;
  return [
    ...ids.emails.map((emailId) => ({
      name: "mail",
      data: { emailId },
      opts: { jobId: `mail-${emailId}${tail}` },
    })),
    ...ids.deliveries.map((deliveryId) => ({
      name: "delivery",
      data: { deliveryId },
      opts: {
        jobId: `delivery-${deliveryId}${tail}`,
        attempts: delivery.attempts,
        backoff: { type: "exponential" as const, delay: delivery.backoffMs },
      },
    })),
  ];
}

/**
 * The queues, sharing one outage in the log: Redis away is one line for all six (not a
 * stack per queue and reconnect attempt), and its return one more.
 */
export function createQueues(
  connection: ConnectionOptions,
  prefix: string,
  log: OutageLog = silentLogger,
): Queues {
  const outages = redisOutages(log, {
    down: "queues: Redis is unavailable; jobs wait until it answers",
    back: "queues: Redis answers again",
  });
  const make = <K extends QueueName>(name: K) => {
    const queue = new Queue<JobPayloads[K]>(name, { connection, prefix, defaultJobOptions });
    watchRedis(queue, outages, (error) =>
      log.warn({ error: error.message }, `queue ${name}: ${error.message}`),
    );
    return queue as Queues[K];
  };
  return {
    events: make("events"),
    "agent-runs": make("agent-runs"),
    "approved-actions": make("approved-actions"),
    outbound: make("outbound"),
    grading: make("grading"),
    maintenance: make("maintenance"),
  };
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map((queue) => queue.close()));
}
