// The real entry points as processes of their own: workers (src/worker.ts), for tests that
// kill one mid-run (SIGKILL: no shutdown hook runs, the run's lease simply stops being
// renewed), and web servers (src/server.ts), for tests that need several.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Queue } from "bullmq";
import { inject } from "vitest";
import { createRedis } from "../../src/db/redis.ts";
import { QUEUE_NAMES } from "../../src/jobs/queues.ts";
import { waitFor } from "./app.ts";
import { freePort } from "./ports.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const children = new Set<ChildProcess>();

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves once the worker says it is running; rejects if it exits first. */
  ready: Promise<unknown>;
  /** How it ended: the signal's name, or `exit <code>`. */
  exited: Promise<string>;
  output(): string;
}

/**
 * An entry point of ours (src/worker.ts, src/server.ts) as a process of its own, in a process
 * group of its own: from source under tsx, or `compiled` from dist/ (`npm run build`).
 */
function spawnEntry(entry: string, env: Record<string, string>, compiled = false) {
  const [command, args] = compiled
    ? [process.execPath, [entry.replace(/^src\//, "dist/").replace(/\.ts$/, ".js")]]
    : [path.join(root, "node_modules/.bin/tsx"), [entry]];
  const child = spawn(command, args, {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: "test", LOG_LEVEL: "silent", ...env },
  });
  children.add(child);
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<string>((resolve) =>
    child.once("exit", (code, signal) => resolve(signal ?? `exit ${code}`)),
  );
  // A tsx process compiles its sources as it starts: on a loaded machine that alone took over 30 s.
  const until = (ready: () => Promise<boolean>) =>
    Promise.race([
      waitFor(ready, 90_000),
      exited.then((how) => {
        throw new Error(`${entry} exited (${how}) before it was ready:\n${output}`);
      }),
    ]);
  return { child, exited, output: () => output, until };
}

/** A worker on `databaseUrl` and the fake LLM at `llmUrl`, taking jobs under `prefix`. */
export function spawnWorker(opts: {
  databaseUrl: string;
  llmUrl: string;
  prefix: string;
  env?: Record<string, string>;
  compiled?: boolean;
}): WorkerProcess {
  const p = spawnEntry(
    "src/worker.ts",
    {
      DATABASE_URL: opts.databaseUrl,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: opts.prefix,
      LLM_BASE_URL: opts.llmUrl,
      LLM_API_KEY: "test-key",
      LLM_DEFAULT_MODEL: "fake-model",
      RUN_LEASE_SECONDS: "2",
      RUN_HEARTBEAT_MS: "200",
      SWEEP_INTERVAL_MS: "500",
      WORKER_CONCURRENCY: "4",
      // It says it is running at info (and logs nothing per step at that level).
      LOG_LEVEL: "info",
      ...opts.env,
    },
    opts.compiled,
  );
  const ready = p.until(async () => p.output().includes('"msg":"running'));
  return { child: p.child, ready, exited: p.exited, output: p.output };
}

export interface WebProcess extends WorkerProcess {
  port: number;
}

/** The web server (src/server.ts) on a free loopback port; ready once it answers /healthz. */
export async function spawnWeb(opts: {
  databaseUrl: string;
  prefix: string;
  env?: Record<string, string>;
  compiled?: boolean;
}): Promise<WebProcess> {
  const port = await freePort();
  const p = spawnEntry(
    "src/server.ts",
    {
      DATABASE_URL: opts.databaseUrl,
      REDIS_URL: inject("redisUrl"),
      QUEUE_PREFIX: opts.prefix,
      HOST: "127.0.0.1",
      PORT: String(port),
      ...opts.env,
    },
    opts.compiled,
  );
  const ready = p.until(async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
    } catch {
      return false;
    }
  });
  return { child: p.child, ready, exited: p.exited, output: p.output, port };
}

/**
 * `tsx` runs the worker in a child of its own: signal the whole group, or the worker
 * outlives it. Only while tsx lives (it exits after its child), so the group is ours.
 */
export function killGroup(c: ChildProcess, signal: NodeJS.Signals) {
  if (c.exitCode !== null || c.signalCode !== null) return;
  try {
    process.kill(-c.pid!, signal);
  } catch {
    // already gone
  }
}

/** Whatever happened, no worker outlives its test file: SIGKILL each process group. */
export function killAllWorkers() {
  for (const c of children) killGroup(c, "SIGKILL");
}

/** After a file's worker processes: none outlives it, and the queues under `prefix` are gone. */
export async function endWorkers(prefix: string) {
  killAllWorkers();
  const redis = createRedis(inject("redisUrl"), "worker");
  for (const name of QUEUE_NAMES) {
    const q = new Queue(name, { connection: redis, prefix });
    await q.obliterate({ force: true });
    await q.close();
  }
  redis.disconnect();
}
