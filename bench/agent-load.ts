// What the agent-run benchmark's load phase measures besides its rate (bench/agent-runs.ts):
// the CPU each part of the system spent (worker processes, this database's Postgres
// backends, a Redis of the benchmark's own), which worker held each run, and whether this
// process (the fake LLM's host) kept up.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { PrismaClient } from "../src/db/prisma.ts";
import { freePort, machineCpuSeconds, processCpuSeconds } from "./lib.ts";

/**
 * A redis-server of the benchmark's own on a free port, so its CPU is the workers' alone
 * (the shared Redis serves other sessions too); null when none is installed.
 */
export async function ownRedis(): Promise<{ url: string; pid: number; stop(): Promise<void> } | null> {
  const bin = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].find((p) => existsSync(p));
  if (!bin) return null;
  const port = await freePort();
  const child: ChildProcess = spawn(bin, ["--port", String(port), "--save", "", "--appendonly", "no"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => d.toString().includes("Ready to accept") && resolve());
    child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}`)));
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The pids of the Postgres backends connected to the database behind `db` (the workers' pools among them). */
async function backendPids(db: PrismaClient): Promise<number[]> {
  const rows = await db.$queryRaw<{ pid: number }[]>`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
  return rows.map((r) => r.pid);
}

const cpuOf = (pid: number) => {
  try {
    return processCpuSeconds(pid);
  } catch {
    return 0; // gone
  }
};

export interface CpuSample {
  machine: number;
  workers: number[];
  postgres: Map<number, number>;
  redis: number;
  bench: number;
}

/** CPU seconds so far, by part. A backend that appears between two samples counts from zero. */
export async function cpuSample(
  db: PrismaClient,
  workerPids: number[],
  redisPid?: number,
): Promise<CpuSample> {
  const self = process.cpuUsage();
  const pids = await backendPids(db);
  return {
    machine: machineCpuSeconds(),
    workers: workerPids.map(cpuOf),
    postgres: new Map(pids.map((p) => [p, cpuOf(p)])),
    redis: redisPid ? cpuOf(redisPid) : Number.NaN,
    bench: (self.user + self.system) / 1e6,
  };
}

export function cpuUsed(a: CpuSample, b: CpuSample) {
  let postgres = 0;
  for (const [pid, s] of b.postgres) postgres += s - (a.postgres.get(pid) ?? 0);
  const workers = b.workers.reduce((t, s, i) => t + s - a.workers[i]!, 0);
  return {
    machine: b.machine - a.machine,
    workers,
    postgres,
    redis: b.redis - a.redis,
    bench: b.bench - a.bench,
  };
}

/**
 * Which worker holds each running run, sampled every `everyMs` while the phase runs: the
 * per-worker split, and a check that no run was held by two workers (a claim made twice).
 */
export function ownerSampler(db: PrismaClient, tenantId: string, since: Date, everyMs = 250) {
  const owners = new Map<string, Set<string>>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const rows = await db.$queryRaw<{ id: string; owner: string }[]>`
        SELECT id, lease_owner AS owner FROM subagent_task_runs
        WHERE tenant_id = ${tenantId} AND created_at >= ${since} AND status = 'running' AND lease_owner IS NOT NULL`;
      for (const r of rows) {
        const s = owners.get(r.id) ?? new Set<string>();
        owners.set(r.id, s.add(r.owner));
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      // A worker's id is `host-pid-random` (process-agent-run.ts workerId).
      const perPid = new Map<number, number>();
      let twice = 0;
      for (const s of owners.values()) {
        if (s.size > 1) twice++;
        for (const o of s) {
          const pid = Number(o.split("-").at(-2));
          perPid.set(pid, (perPid.get(pid) ?? 0) + 1);
        }
      }
      return { seen: owners.size, twice, perPid };
    },
  };
}

/** This process's event-loop delay while the fake LLM answers: whether the host of the model kept up. */
export function loopDelay() {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  return () => {
    h.disable();
    return { p99: h.percentile(99) / 1e6, max: h.max / 1e6 };
  };
}
