// Runs an agent's queued runs, one at a time per agent, oldest first. The job only
// says "this agent has work"; the claim in Postgres decides which run, and whether any.
import { hostname } from "node:os";
import type { Job } from "bullmq";
import type { PrismaClient } from "../db/prisma.ts";
import { newId } from "../lib/ids.ts";
import type { Heartbeat } from "../services/agents/heartbeat.ts";
import { type NavigatorDeps, runNavigator } from "../services/agents/navigator.ts";
import type { RunStart } from "../services/agents/run-start.ts";
import { claimNext, type Finish, finishRun } from "../services/agents/runs.ts";
import { LeaseLostError } from "../services/agents/steps.ts";
import type { JobPayloads } from "./queues.ts";

export function workerId(): string {
  return `${hostname()}-${process.pid}-${newId(6)}`;
}

export interface AgentRunDeps {
  prisma: PrismaClient;
  navigator: Omit<NavigatorDeps, "owner" | "prisma">;
  heartbeat: Heartbeat;
  owner: string;
  leaseSeconds: number;
  log?: (msg: string, err?: unknown) => void;
}

async function execute(d: AgentRunDeps, start: RunStart): Promise<void> {
  const { run } = start;
  const controller = d.heartbeat.track(run.id);
  let fin: Finish;
  try {
    fin = await runNavigator({ ...d.navigator, prisma: d.prisma, owner: d.owner }, start, controller.signal);
  } catch (err) {
    if (err instanceof LeaseLostError) fin = { status: "failed", stopReason: "lease_lost" };
    else {
      d.log?.(`run ${run.id} crashed`, err);
      fin = {
        status: "failed",
        stopReason: "internal_error",
        error: `Internal error: ${(err as Error).message}`,
      };
    }
  } finally {
    d.heartbeat.untrack(run.id);
  }
  // Another worker holds the run now; a shutdown leaves it for the next worker (its lease expires).
  if (fin.stopReason === "lease_lost" || fin.stopReason === "shutdown") return;
  await finishRun(d.prisma, run, d.owner, fin);
}

export function agentRunProcessor(d: AgentRunDeps) {
  return async (job: Job<JobPayloads["agent-runs"]>) => {
    let ran = 0;
    let agentId: string | null = null;
    // Keep going while this agent has queued work: the next run starts without another queue hop.
    for (;;) {
      const by = agentId ? { agentId } : { runId: job.data.runId };
      const claim = await claimNext(d.prisma, by, d.owner, d.leaseSeconds);
      agentId = claim.agentId;
      if (claim.retry) continue;
      if (!claim.start) return { ran };
      await execute(d, claim.start);
      ran += 1;
    }
  };
}
