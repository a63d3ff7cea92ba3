// Starts everything a worker process runs — the outbox relay, the event, agent-run and
// maintenance workers (the last also tidies spent login-throttle rows, deletes audit rows past
// their retention and fires due agent schedules), and the lease heartbeat. worker.ts, the
// tests and the benchmark all start it the same way.

import { type Job, UnrecoverableError, Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Config } from "../config.ts";
import type { PrismaClient } from "../db/prisma.ts";
import { createRedis } from "../db/redis.ts";
import { redisOutages, watchRedis } from "../db/redis-outages.ts";
import { type Logger, silentLogger } from "../lib/logger.ts";
import { isTransient } from "../lib/transient.ts";
import { addWorkerGauges } from "../metrics/metrics.ts";
import { configureToolCalls } from "../services/actions/tool-calls.ts";
import { fireDueSchedules } from "../services/agents/automations/schedule-firing.ts";
import { flushDueSubscriptions } from "../services/agents/automations/subscriptions.ts";
import { maskText } from "../services/agents/core/secret-masking.ts";
import { executeApproved, expireOverdue, resumeSettled } from "../services/agents/policy/approvals.ts";
import { startHeartbeat } from "../services/agents/runtime/heartbeat.ts";
import { createLlmClient, type LlmClient } from "../services/agents/runtime/llm.ts";
import { measured } from "../services/agents/runtime/llm-metrics.ts";
import { type GraderDeps, gradeRun } from "../services/agents/runtime/rubric-grader.ts";
import { pruneApiCalls } from "../services/audit.ts";
import { registry } from "../services/catalog/catalog.ts";
import { textPublisher } from "../services/live/text.ts";
import { type ThrottleSettings, tidyLoginThrottles } from "../services/login-throttle.ts";
import { configureKeyring } from "../services/money/keyring.ts";
import type { Endpoint } from "../services/money/keys.ts";
import { liftLastMonthsPauses } from "../services/money/ledger.ts";
import type { MailTransport } from "../services/reach/mail.ts";
import { setMailConfigured } from "../services/reach/preferences.ts";
import { pruneOutbound } from "../services/reach/sweep.ts";
import { pruneReveals } from "../services/reveals.ts";
import { tidySessions } from "../services/sessions.ts";
import { agentRunProcessor, workerId } from "./process-agent-run.ts";
import { eventProcessor } from "./process-event.ts";
import {
  type Outbound,
  type OutboundConfig,
  outboundFrom,
  outboundProcessor,
  sweepOutbound,
} from "./process-outbound.ts";
import { closeQueues, createQueues, type JobPayloads, type Queues } from "./queues.ts";
import { startRelayThread } from "./relay-thread.ts";
import { sweep, sweepApproved } from "./sweeper.ts";

export type RuntimeConfig = Pick<
  Config,
  | "DATABASE_URL"
  | "REDIS_URL"
  | "QUEUE_PREFIX"
  | "LLM_BASE_URL"
  | "LLM_API_KEY"
  | "LLM_DEFAULT_MODEL"
  | "LLM_TIMEOUT_MS"
  | "TOOL_CALL_TIMEOUT_MS"
  | "LLM_MAX_RETRIES"
  | "LLM_MAX_CONNECTIONS"
  | "PROMPT_TOKEN_BUDGET"
  | "WORKER_CONCURRENCY"
  | "RUN_LEASE_SECONDS"
  | "RUN_HEARTBEAT_MS"
  | "RUN_MAX_WORKER_LOSSES"
  | "SWEEP_INTERVAL_MS"
  | "NODE_ENV"
  | "APP_ENCRYPTION_KEYS"
  | "BYOK_ALLOW_PRIVATE_URLS"
  | "AUDIT_RETENTION_DAYS"
  | keyof OutboundConfig
  | keyof ThrottleSettings
  | "SESSION_IDLE_HOURS"
  | "SESSION_ABSOLUTE_HOURS"
>;

export interface RuntimeOptions {
  config: RuntimeConfig;
  prisma: PrismaClient;
  connection: Redis;
  /** Tests and the benchmark may inject a client; otherwise the openai SDK client. */
  llm?: LlmClient;
  /** The worker's log (lib/logger.ts); each run logs through a child of it. Silent when absent. */
  log?: Logger;
  /** Tests may inject a mail transport; otherwise SMTP_URL's, or no mail. */
  mail?: MailTransport;
}

/**
 * A job that failed for a passing reason rolled back and is tried again with backoff
 * (queues.ts); one that failed for any other would fail the same way again, so it stops.
 */
function retryingTransient<J extends Job, R>(callback: (job: J) => Promise<R>) {
  return async (job: J): Promise<R> => {
    try {
      return await callback(job);
    } catch (err) {
      if (isTransient(err) || err instanceof UnrecoverableError) throw err;
      throw new UnrecoverableError((err as Error).message);
    }
  };
}

interface WorkerDeps {
  config: RuntimeConfig;
  prisma: PrismaClient;
  connection: Redis;
  queues: Queues;
  log: Logger;
  outbound: Outbound;
  grader: GraderDeps;
}

/** Grader calls at once per worker: beside its runs, never crowding them out. */
const GRADING_CONCURRENCY = 4;

/**
 * A rubric's grading (rubric-grader.ts): every failure is worth another try (the model out of
 * reach, the database away); on its last, a model still away is a failed grade, said so.
 */
function gradingProcessor(grader: GraderDeps) {
  return async (job: Job<JobPayloads["grading"]>) => {
    const attempts = job.opts.attempts ?? 1;
    return { graded: await gradeRun(grader, { ...job.data, lastTry: job.attemptsMade + 1 >= attempts }) };
  };
}

/** The queues' consumers: events, agent runs (`runs`), approved actions, outbound, grading and maintenance. */
function startWorkers(deps: WorkerDeps, runs: ReturnType<typeof agentRunProcessor>): Worker[] {
  const { config, prisma, connection, queues, outbound } = deps;
  const base = { connection, prefix: config.QUEUE_PREFIX };
  const workers = [
    new Worker("events", retryingTransient(eventProcessor(prisma, queues, outbound)), {
      ...base,
      concurrency: 16,
    }),
    new Worker("agent-runs", runs, {
      ...base,
      concurrency: config.WORKER_CONCURRENCY,
      // A run can take minutes: the BullMQ lock is renewed meanwhile; our own lease is what recovery relies on.
      lockDuration: 60_000,
    }),
    new Worker(
      "approved-actions",
      retryingTransient(async (job) => ({
        outcome: await executeApproved(registry, prisma, (job.data as { pendingId: string }).pendingId),
      })),
      { ...base, concurrency: 8 },
    ),
    // Every failure here is worth another try (a receiver's 500, SMTP away): not wrapped.
    new Worker("outbound", outboundProcessor(prisma, outbound), { ...base, concurrency: 8 }),
    new Worker("grading", gradingProcessor(deps.grader), { ...base, concurrency: GRADING_CONCURRENCY }),
    new Worker("maintenance", maintenanceProcessor(deps), { ...base, concurrency: 1 }),
  ];
  watchWorkers(workers, deps.log);
  return workers;
}

/** One sweep: what fell through the cracks is sent again, and what is spent is tidied away. */
function maintenanceProcessor({ config, prisma, queues, outbound }: WorkerDeps) {
  return async () => ({
    swept: await sweep(prisma, queues, config.SWEEP_INTERVAL_MS),
    approved: await sweepApproved(prisma, queues),
    subscriptions: await flushDueSubscriptions(prisma),
    expired: await expireOverdue(prisma),
    resumed: await resumeSettled(prisma),
    newMonth: await liftLastMonthsPauses(prisma),
    loginThrottlesTidied: await tidyLoginThrottles(prisma, config),
    sessionsTidied: await tidySessions(prisma, {
      idleHours: config.SESSION_IDLE_HOURS,
      absoluteHours: config.SESSION_ABSOLUTE_HOURS,
    }),
    apiCallsPruned: await pruneApiCalls(prisma, config.AUDIT_RETENTION_DAYS),
    revealsPruned: await pruneReveals(prisma),
    outboundPruned: await pruneOutbound(prisma),
    outbound: await sweepOutbound(prisma, queues, outbound),
    // Last: a passing fault here fails the job, and the housekeeping above is done by then.
    schedules: await fireDueSchedules(prisma),
  });
}

/**
 * Redis away: one line for all the workers, and one when it is back. Redis flushed under a
 * job (its lock or key gone): a line each, never thrown.
 */
function watchWorkers(workers: Worker[], log: Logger) {
  const outages = redisOutages(log, {
    down: "workers: Redis is unavailable; jobs wait until it answers",
    back: "workers: Redis answers again",
  });
  for (const worker of workers) {
    worker.on("failed", (job, err) => log.warn({ err }, `job ${worker.name}/${job?.id} failed`));
    watchRedis(worker, outages, (error) => log.warn(`worker ${worker.name}: ${error.message}`));
  }
}

export async function startRuntime(runtimeOptions: RuntimeOptions) {
  const { config, prisma, connection } = runtimeOptions;
  const log = runtimeOptions.log ?? silentLogger;
  configureKeyring(config);
  configureToolCalls(config);
  const queues = createQueues(connection, config.QUEUE_PREFIX, log);
  const owner = workerId();
  const heartbeat = startHeartbeat(prisma, owner, config.RUN_LEASE_SECONDS, config.RUN_HEARTBEAT_MS);
  const outbound = outboundFrom(config, runtimeOptions.mail);
  setMailConfigured(outbound.reach.mail);
  const liveText = connectLiveText(config);
  const navigator = navigatorOptions(runtimeOptions, liveText.text);
  const runs = agentRunProcessor({
    prisma,
    navigator,
    heartbeat,
    owner,
    leaseSeconds: config.RUN_LEASE_SECONDS,
    maxWorkerLosses: config.RUN_MAX_WORKER_LOSSES,
    log,
  });
  const grader = { prisma, llm: navigator.llm, shared: navigator.endpoint };
  const workers = startWorkers({ config, prisma, connection, queues, log, outbound, grader }, runs);
  const rescheduler = await scheduleSweeper(queues, config, log);
  const removeGauges = addQueueGauges(prisma, queues);
  const relay = startRelay(config, log);
  await relay.ready;
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  return {
    queues,
    relay,
    owner,
    heartbeat,
    async close() {
      removeGauges();
      clearInterval(rescheduler);
      heartbeat.stop();
      await relay.stop();
      await Promise.all(workers.map((worker) => worker.close()));
      await closeQueues(queues);
      outbound.transport?.close?.();
      liveText.redis.disconnect();
    },
  };
}

/** The model: an injected client, or the openai SDK's; measured either way. */
function navigatorOptions({ config, llm }: RuntimeOptions, text: ReturnType<typeof textPublisher>) {
  const endpoint: Endpoint | null = config.LLM_BASE_URL
    ? { baseURL: config.LLM_BASE_URL, apiKey: config.LLM_API_KEY }
    : null;
  const client =
    llm ??
    createLlmClient({
      timeoutMs: config.LLM_TIMEOUT_MS,
      maxRetries: config.LLM_MAX_RETRIES,
      maxConnections: config.LLM_MAX_CONNECTIONS,
    });
  return {
    llm: measured(client),
    endpoint,
    defaultModel: config.LLM_DEFAULT_MODEL,
    promptBudget: config.PROMPT_TOKEN_BUDGET,
    text,
  };
}

/**
 * Replies as they stream, for run pages: a connection of its own that fails fast (the text
 * is best-effort, and must never hold a run up), connected in the background.
 */
function connectLiveText(config: RuntimeConfig) {
  const redis = createRedis(config.REDIS_URL, "producer");
  redis.on("error", () => undefined);
  redis.connect().catch(() => undefined);
  return { redis, text: textPublisher(redis, maskText) };
}

/**
 * Re-asserted every ten sweeps (a cheap upsert): if Redis lost its data, the sweeper's
 * schedule comes back by itself, and with it the runs whose jobs were lost.
 */
async function scheduleSweeper(queues: Queues, config: RuntimeConfig, log: Logger) {
  const schedule = () =>
    queues.maintenance
      .upsertJobScheduler("sweeper", { every: config.SWEEP_INTERVAL_MS }, { name: "sweep", data: {} })
      .catch((err) => log.warn({ err }, "could not schedule the sweeper"));
  await schedule();
  const rescheduler = setInterval(schedule, Math.min(60_000, 10 * config.SWEEP_INTERVAL_MS));
  rescheduler.unref();
  return rescheduler;
}

/** Waiting, active and delayed jobs per queue, and pending approvals, for /metrics. */
function addQueueGauges(prisma: PrismaClient, queues: Queues) {
  return addWorkerGauges({
    async jobCounts() {
      const each = await Promise.all(
        Object.values(queues).map(async (queue) =>
          Object.entries(await queue.getJobCounts("waiting", "active", "delayed")).map(([state, count]) => ({
            queue: queue.name,
            state,
            count,
          })),
        ),
      );
      return each.flat();
    },
    pendingApprovals: () => prisma.agentPendingAction.count({ where: { status: "pending" } }),
  });
}

function startRelay(config: RuntimeConfig, log: Logger) {
  return startRelayThread({
    databaseUrl: config.DATABASE_URL,
    redisUrl: config.REDIS_URL,
    queuePrefix: config.QUEUE_PREFIX,
    // The relay's lines come from its thread as text, with the error when there was one.
    log: (message, err) => (err ? log.warn({ err }, message) : log.info(message)),
  });
}
