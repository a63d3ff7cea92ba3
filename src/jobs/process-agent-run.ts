// Runs an agent's queued runs, one at a time per agent and lane, oldest first. The job only
// says "this agent's lane has work"; the claim in Postgres decides which run, and whether any.
import { hostname } from "node:os";
import type { Job } from "bullmq";
import type { PrismaClient } from "../db/prisma.ts";
import { newId } from "../lib/ids.ts";
import type { Logger } from "../lib/logger.ts";
import { isTransient, retryTransient } from "../lib/transient.ts";
import { runsEnded, runsStarted } from "../metrics/metrics.ts";
import type { RunStart } from "../services/agents/core/run-start.ts";
import {
  type ClaimSelector,
  claimNext,
  type Finish,
  finishRun,
  reloadRun,
  TERMINAL,
} from "../services/agents/core/runs.ts";
import { LeaseLostError } from "../services/agents/core/steps.ts";
import type { Heartbeat } from "../services/agents/runtime/heartbeat.ts";
import {
  type NavigatorDeps,
  type Resumable,
  runNavigator,
  stopped,
} from "../services/agents/runtime/navigator.ts";
import { type RunTrace, startRunTrace } from "../services/agents/runtime/tracing.ts";
import type { JobPayloads } from "./queues.ts";

export function workerId(): string {
  return `${hostname()}-${process.pid}-${newId(6)}`;
}

export interface AgentRunDeps {
  prisma: PrismaClient;
  navigator: Omit<NavigatorDeps, "owner" | "prisma" | "log">;
  heartbeat: Heartbeat;
  owner: string;
  leaseSeconds: number;
  /** RUN_MAX_WORKER_LOSSES */
  maxWorkerLosses?: number;
  log: Logger;
}

/** What every line a run logs carries: the run, its agent and its tenant, by id and by name. */
function runLogger(log: Logger, start: RunStart): Logger {
  const { run, agent, tenant } = start;
  return log.child({
    runId: run.id,
    agentId: agent.id,
    agent: agent.handle,
    tenantId: tenant.id,
    tenant: tenant.subdomain,
  });
}

const countEnd = (trigger: string, status: string, stopReason: string | undefined) =>
  runsEnded.inc({ trigger, status, stop_reason: stopReason ?? "none" });

async function execute(agentRunDeps: AgentRunDeps, start: RunStart, jobTraceparent?: string): Promise<void> {
  const { run } = start;
  const log = runLogger(agentRunDeps.log, start);
  if (run.stepsCount === 0) runsStarted.inc({ trigger: run.triggerKind });
  const controller = agentRunDeps.heartbeat.track(run.id);
  const trace = startRunTrace(agentRunDeps.prisma, start, jobTraceparent);
  let fin: Finish = { status: "failed", stopReason: "internal_error" };
  try {
    fin = await navigateResuming(agentRunDeps, start, controller.signal, log, trace);
  } catch (err) {
    if (err instanceof LeaseLostError) fin = { status: "failed", stopReason: "lease_lost" };
    else {
      log.error({ err }, "the run crashed");
      fin = {
        status: "failed",
        stopReason: "internal_error",
        error: `Internal error: ${(err as Error).message}`,
      };
    }
  }
  try {
    // Another worker holds the run now; a shutdown leaves it for the next worker (its lease expires).
    if (fin.stopReason === "lease_lost" || fin.stopReason === "shutdown") return;
    // Still under our lease (the heartbeat renews it while the database answers); past it, the
    // run is recovered by another claim, which resumes from its recorded steps.
    const ended = await retryTransient(() => finishRun(agentRunDeps.prisma, run, agentRunDeps.owner, fin), {
      until: Date.now() + agentRunDeps.leaseSeconds * 1000,
      onRetry: (err, _, wait) =>
        log.warn({ err }, `could not record the run's end, again in ${Math.round(wait)} ms`),
    });
    if (ended && TERMINAL.includes(fin.status)) countEnd(run.triggerKind, fin.status, fin.stopReason);
  } finally {
    agentRunDeps.heartbeat.untrack(run.id);
    trace.end(fin);
  }
}

/**
 * Runs the navigator; after a transient failure (the database or Redis briefly away, a pool
 * or transaction timeout in a burst) it waits with backoff and resumes from what Postgres
 * recorded, until the run's own deadline. A step is recorded in the transaction of the
 * action it ran, so a resumed run never repeats an action; an LLM call whose step was lost
 * is made again (and charged: it was made).
 */
async function navigateResuming(
  runDeps: AgentRunDeps,
  start: RunStart,
  signal: AbortSignal,
  log: Logger,
  trace: RunTrace,
): Promise<Finish> {
  const { run } = start;
  const navigatorDeps = {
    ...runDeps.navigator,
    prisma: runDeps.prisma,
    owner: runDeps.owner,
    log,
    trace,
    pause: runDeps.heartbeat.pauseSignal(run.id),
  };
  const resumable: Resumable = {};
  let next: RunStart | null = start;
  try {
    return await retryTransient(
      async () => {
        const current = next ?? (await reloadRun(runDeps.prisma, run.id, runDeps.owner));
        next = null;
        if (!current) throw new LeaseLostError();
        return runNavigator(navigatorDeps, current, signal, resumable);
      },
      {
        until: () => resumable.deadline ?? Date.now() + run.timeoutSeconds * 1000,
        signal,
        onRetry: (err, attempt, wait) =>
          log.warn({ err }, `transient failure (${attempt}), resuming in ${Math.round(wait)} ms`),
      },
    );
  } catch (err) {
    if (signal.aborted) return stopped(signal.reason);
    if (!isTransient(err)) throw err;
    return {
      status: "timed_out",
      stopReason: "unavailable",
      error: `Ran out of time (${run.timeoutSeconds} s) while the database or the queue was unavailable: ${(err as Error).message.trim().split("\n").pop()}`,
    };
  }
}

export function agentRunProcessor(deps: AgentRunDeps) {
  return async (job: Job<JobPayloads["agent-runs"]>) => {
    let ran = 0;
    let selector: ClaimSelector = { runId: job.data.runId };
    // Keep going while this agent's lane has queued work: the next run starts without another
    // queue hop. In the same lane: another lane's runs have jobs of their own, and an
    // experiment's slot must not take the agent's own work (or another slot's) in turn.
    for (;;) {
      const claim = await claimNext(
        deps.prisma,
        selector,
        deps.owner,
        deps.leaseSeconds,
        deps.maxWorkerLosses,
      );
      if (claim.agentId !== null) selector = { agentId: claim.agentId, lane: claim.lane ?? "" };
      if (claim.gaveUp) countEnd(claim.gaveUp.triggerKind, "failed", "worker_lost");
      if (claim.retry) continue;
      if (!claim.start) return { ran };
      // The job's traceparent is what woke this run again, when the job was this run's.
      const traceparent = claim.start.run.id === job.data.runId ? job.data.traceparent : undefined;
      await execute(deps, claim.start, traceparent);
      ran += 1;
    }
  };
}
