// A worker holds many runs that wait on a slow model, and several workers share the runs:
// a waiting run holds no database connection, a run is claimed once, an agent runs one run
// at a time, and every action lands once.
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import type { ChatRequest } from "../src/dev/fake-llm.ts";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { sleep } from "./helpers/agent-scripts.ts";
import { type Agent, makeAgent, runsOf, startAgents } from "./helpers/agents.ts";
import { fileDatabaseUrl, makeWorld, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { namedPrisma, noteEachScript, notesPerAgent, queueRunsFor } from "./helpers/faults.ts";
import { captureLog } from "./helpers/logs.ts";
import { endWorkers, spawnWorker } from "./helpers/workers.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The note-posting model (faults.ts) taking `ms` a call, counting the calls it holds at once. */
function slowModel(ms: number) {
  const note = noteEachScript(0);
  const seen = { out: 0, most: 0 };
  const script = async (req: ChatRequest) => {
    seen.most = Math.max(seen.most, ++seen.out);
    await sleep(ms);
    seen.out--;
    return note(req);
  };
  return { script, seen };
}

const agentsIn = (w: World, n: number, prefix: string) =>
  Promise.all(Array.from({ length: n }, (_, i) => makeAgent(w, w.alice, `${prefix}${i}`)));

async function allEnded(agents: Agent[], runsEach: number, timeoutMs: number) {
  return waitFor(async () => {
    const runs = (await Promise.all(agents.map((a) => runsOf(a.id)))).flat();
    return runs.length === agents.length * runsEach && runs.every((r) => r.completedAt) ? runs : null;
  }, timeoutMs);
}

describe("runs waiting on the model", { timeout: 60_000 }, () => {
  it("hold no database connection: 24 on a pool of 2 are all at the model at once, and all complete", async () => {
    // Were a connection held across a call, two runs at most could be waiting on the model.
    const prisma = namedPrisma("capacity-waiting", 2, { maxWait: 20_000, timeout: 5000 });
    const model = slowModel(1500);
    const log = captureLog();
    const env = await startAgents("waiting", { WORKER_CONCURRENCY: "24" }, model.script, log.logger, prisma);
    cleanups.push(async () => {
      await env.close();
      await prisma.$disconnect();
    });
    const w = await makeWorld();
    const agents = await agentsIn(w, 24, "bot");
    await queueRunsFor(w, agents);
    const runs = await allEnded(agents, 1, 40_000);
    expect(runs.map((r) => [r.status, r.error])).toEqual(agents.map(() => ["completed", null]));
    expect(model.seen.most).toBe(24);
    expect(await notesPerAgent(w, agents)).toEqual(agents.map(() => 1));
    expect(log.messages().filter((m) => /transient|failed|crashed/.test(m))).toEqual([]);
  });
});

describe("two worker processes", { timeout: 90_000 }, () => {
  const prefix = `${inject("queuePrefix")}-capacity`;
  let llm: FakeLlm;
  afterAll(async () => {
    await endWorkers(prefix);
    await llm?.close();
  });

  it("share the runs: each claimed once, one run per agent at a time, each action once", async () => {
    const model = slowModel(300);
    llm = await startFakeLlm({ script: model.script });
    const workers = [0, 1].map(() =>
      spawnWorker({
        databaseUrl: fileDatabaseUrl(),
        llmUrl: llm.url,
        prefix,
        // Six each for twelve agents: the first runs alone need both workers, so each holds
        // some whichever fetches faster (with room for all twelve, one could take them all).
        env: { WORKER_CONCURRENCY: "6" },
      }),
    );
    await Promise.all(workers.map((x) => x.ready));
    const w = await makeWorld();
    const agents = await agentsIn(w, 12, "duo");
    // Three runs per agent, queued at once: they wait their turn, whichever worker has them.
    for (let i = 0; i < 3; i++) await queueRunsFor(w, agents);
    // Which worker holds each running run, sampled while they run.
    const holders = new Map<string, Set<string>>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const running = await testPrisma().subagentTaskRun.findMany({
          where: { tenantId: w.tenant.id, status: "running" },
          select: { id: true, leaseOwner: true },
        });
        for (const r of running) holders.set(r.id, (holders.get(r.id) ?? new Set()).add(r.leaseOwner!));
        await sleep(50);
      }
    })();
    const runs = await allEnded(agents, 3, 60_000);
    sampling = false;
    await sampler;

    expect(runs.map((r) => [r.status, r.attempts])).toEqual(runs.map(() => ["completed", 1]));
    expect([...holders.values()].filter((s) => s.size > 1)).toEqual([]);
    const owners = new Set([...holders.values()].flatMap((s) => [...s]));
    expect(owners.size).toBe(2);
    // An agent's runs one after the other: none starts before the one before it ended.
    for (const a of agents) {
      const mine = runs.filter((r) => r.agentId === a.id).sort((x, y) => +x.startedAt! - +y.startedAt!);
      for (let i = 1; i < mine.length; i++)
        expect(mine[i]!.startedAt!.getTime()).toBeGreaterThanOrEqual(mine[i - 1]!.completedAt!.getTime());
    }
    expect(await notesPerAgent(w, agents)).toEqual(agents.map(() => 3));
  });
});
