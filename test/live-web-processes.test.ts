// Live pages across processes: two web servers (src/server.ts, processes of their own) and
// a worker in this process, sharing only Postgres and Redis. Each web process hears every
// commit on its own LISTEN connection, so a stream of the same run on either delivers every
// step, whichever process recorded it.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { runIdOf, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool } from "./helpers/agents.ts";
import { act, fileDatabaseUrl, makeWorld } from "./helpers/app.ts";
import { as, openLive, statusOf, stepNumbers } from "./helpers/live.ts";
import { endWorkers, spawnWeb, type WebProcess } from "./helpers/workers.ts";

const prefix = `${inject("queuePrefix")}-live-procs`;
let env: AgentEnv;
let webs: WebProcess[];

beforeAll(async () => {
  env = await startAgents("live-procs-worker");
  webs = await Promise.all([0, 1].map(() => spawnWeb({ databaseUrl: fileDatabaseUrl(), prefix })));
  await Promise.all(webs.map((w) => w.ready));
}, 60_000);
afterAll(async () => {
  await env?.close();
  await endWorkers(prefix);
});

describe("two web processes", () => {
  it("both deliver every step of a run that a worker in a third process records", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    let calls = 0;
    env.llm.setScript(() => {
      calls += 1;
      return calls > 5
        ? { ...tool("finish", { message: "done" }), delayMs: 150 }
        : { ...tool("navigate", { path: calls % 2 ? "/studios/general" : "/whoami" }), delayMs: 150 };
    });
    const outcome = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Look around" });
    const path = outcome.location;
    const streams = await Promise.all(
      webs.map((web) => openLive({ port: web.port, path, ...as(w, w.alice) })),
    );
    expect(streams.map((s) => s.status)).toEqual([200, 200]);
    await Promise.all(streams.map((s) => s.ended));
    const steps = (await stepsOf(runIdOf(path))).map((s) => s.number);
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7]);
    for (const s of streams) {
      expect(stepNumbers(s.events)).toEqual(steps);
      expect(statusOf(s.events)).toBe("completed");
    }
  });
});
