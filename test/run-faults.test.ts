// Runs under passing faults: a burst on a small pool with short transaction limits, the
// worker's database connections terminated mid-run, Redis flushed and restarted. Every run
// completes, and every action lands exactly once.
import { afterEach, describe, expect, it } from "vitest";
import type { PrismaClient } from "../src/db/prisma.ts";
import { sleep } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, runsOf, startAgents } from "./helpers/agents.ts";
import { makeWorld, type World, waitFor } from "./helpers/app.ts";
import {
  namedPrisma,
  namedUrl,
  noteEachScript,
  notesPerAgent,
  privateRedis,
  queueRunsFor,
  terminateBackends,
} from "./helpers/faults.ts";
import { captureLog } from "./helpers/logs.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function agentsIn(w: World, n: number) {
  return Promise.all(Array.from({ length: n }, (_, i) => makeAgent(w, w.alice, `bot${i}`)));
}

/** Waits for every run of `agents` to end; returns them. */
async function allEnded(agents: { id: string }[], timeoutMs = 50_000) {
  return waitFor(async () => {
    const runs = (await Promise.all(agents.map((a) => runsOf(a.id)))).flat();
    return runs.length === agents.length && runs.every((r) => r.completedAt) ? runs : null;
  }, timeoutMs);
}

async function start(name: string, prisma: PrismaClient, overrides: Record<string, string>, delayMs: number) {
  const log = captureLog();
  const env: AgentEnv = await startAgents(name, overrides, noteEachScript(delayMs), log.logger, prisma);
  cleanups.push(async () => {
    await env.close();
    await prisma.$disconnect();
  });
  return { env, log };
}

// A machine busy with other work slows the retries down: each test may take a minute.
describe("runs under passing faults", { timeout: 70_000 }, () => {
  it("a burst of runs on a small pool with short transaction limits all complete, each action once", async () => {
    // 16 runs at once share 2 connections, and a transaction may wait 50 ms for one:
    // many of their actions cannot start in time, and are tried again.
    const prisma = namedPrisma("faults-burst", 2, { maxWait: 50, timeout: 2000 });
    const { log } = await start("burst", prisma, { WORKER_CONCURRENCY: "16" }, 5);
    const w = await makeWorld();
    const agents = await agentsIn(w, 16);
    await queueRunsFor(w, agents);
    const runs = await allEnded(agents);
    expect(runs.map((r) => [r.status, r.stopReason, r.error])).toEqual(
      agents.map(() => ["completed", "finished", null]),
    );
    expect(await notesPerAgent(w, agents)).toEqual(agents.map(() => 1));
    // The faults did happen: the worker resumed runs after them.
    expect(log.messages().some((m) => /transient failure/.test(m))).toBe(true);
  });

  it("an action's transaction never waits for a second connection: runs on a pool of one never stall", async () => {
    // Were any statement of the action's pipeline sent beside its transaction, it would wait
    // for the one connection the transaction holds, until the transaction expired.
    const prisma = namedPrisma("faults-one", 1, { maxWait: 20_000, timeout: 1500 });
    const { log } = await start("one", prisma, { WORKER_CONCURRENCY: "4" }, 5);
    const w = await makeWorld();
    const agents = await agentsIn(w, 4);
    await queueRunsFor(w, agents);
    const runs = await allEnded(agents);
    expect(runs.map((r) => r.status)).toEqual(agents.map(() => "completed"));
    expect(log.messages().filter((m) => /transient|failed/.test(m))).toEqual([]);
  });

  it("terminating the worker's database connections mid-run loses no run and fails none", async () => {
    const name = "faults-terminate";
    const prisma = namedPrisma(name, 4);
    const { log } = await start("terminate", prisma, { DATABASE_URL: namedUrl(name) }, 150);
    const w = await makeWorld();
    const agents = await agentsIn(w, 8);
    await queueRunsFor(w, agents);
    let terminated = 0;
    for (let i = 0; i < 4; i++) {
      await sleep(200);
      terminated += await terminateBackends(name);
    }
    expect(terminated).toBeGreaterThan(0);
    const runs = await allEnded(agents);
    expect(runs.map((r) => r.status)).toEqual(agents.map(() => "completed"));
    expect(await notesPerAgent(w, agents)).toEqual(agents.map(() => 1));
    expect(log.messages().filter((m) => /crashed/.test(m))).toEqual([]);
  });

  it("Redis flushed, then killed and started again, loses no run and fails none", async () => {
    const redis = await privateRedis();
    cleanups.push(() => redis.kill());
    const prisma = namedPrisma("faults-redis", 4);
    // One run at a time: the others' jobs wait in Redis, where the flush takes them.
    await start("redis", prisma, { REDIS_URL: redis.url, WORKER_CONCURRENCY: "1" }, 100);
    const w = await makeWorld();
    const agents = await agentsIn(w, 6);
    await queueRunsFor(w, agents.slice(0, 4));
    await sleep(400);
    // Everything Redis held is gone: the waiting runs' jobs, the sweeper's schedule.
    await redis.flush();
    await sleep(300);
    redis.kill();
    // Queued while Redis is away: the relay publishes them when it is back.
    await queueRunsFor(w, agents.slice(4));
    await sleep(1000);
    await redis.start();
    const runs = await allEnded(agents);
    expect(runs.map((r) => r.status)).toEqual(agents.map(() => "completed"));
    expect(await notesPerAgent(w, agents)).toEqual(agents.map(() => 1));
  });
});
