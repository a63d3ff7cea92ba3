// Lanes on a real worker: while the agent's own run waits on its model, the runs of an
// experiment's lanes start and end beside it, each lane one run after another, and the
// agent's next own run waits for the first.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/dev/fake-llm.ts";
import { queueRun } from "../src/services/agents/core/runs.ts";
import { userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool } from "./helpers/agents.ts";
import { makeWorld, testPrisma, waitFor } from "./helpers/app.ts";

let env: AgentEnv;
beforeAll(async () => {
  env = await startAgents("lanes");
});
afterAll(async () => {
  await env.close();
});

const db = testPrisma();
const usage = { prompt_tokens: 50, completion_tokens: 5 };

describe("lanes on a worker", () => {
  it("an experiment's lanes run beside the agent's own run, each lane one at a time", async () => {
    const w = await makeWorld("lanes");
    const scout = await makeAgent(w, w.alice, "scout");
    let held!: () => void;
    const holding = new Promise<void>((r) => {
      held = r;
    });
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    // The agent's first own run waits on its model until the test lets it go.
    env.llm.setScript(async (req: ChatRequest) => {
      if (userPrompt(req).includes("own work 1")) {
        held();
        await released;
      }
      return { ...tool("finish", { message: "done" }), usage };
    });
    const queue = async (task: string, lane = "") =>
      (await queueRun(db, {
        ...{ tenantId: w.tenant.id, agentId: scout.id, initiatedById: w.alice.id, triggerKind: "manual" },
        ...{ chainDepth: 0, task, model: null, maxSteps: 5, timeoutSeconds: 60, lane },
      }))!.id;
    const own1 = await queue("own work 1");
    const own2 = await queue("own work 2");
    await holding;
    const slot0 = [await queue("case a", "experiment:x:0"), await queue("case b", "experiment:x:0")];
    const slot1 = await queue("case c", "experiment:x:1");
    const runs = () => db.subagentTaskRun.findMany({ where: { agentId: scout.id } });
    const byId = async () => new Map((await runs()).map((r) => [r.id, r]));
    // The experiment's runs end while the agent's own run still waits on its model.
    const ended = await waitFor(async () => {
      const all = await byId();
      return [...slot0, slot1].every((id) => all.get(id)?.status === "completed") && all;
    });
    expect(ended.get(own1)?.status).toBe("running");
    expect(ended.get(own2)?.status).toBe("queued");
    // One lane, one run at a time: its second started once its first had ended.
    expect(ended.get(slot0[1]!)!.startedAt!.getTime()).toBeGreaterThanOrEqual(
      ended.get(slot0[0]!)!.completedAt!.getTime(),
    );
    release();
    const done = await waitFor(async () => {
      const all = await byId();
      return [own1, own2].every((id) => all.get(id)?.status === "completed") && all;
    });
    expect(done.get(own2)!.startedAt!.getTime()).toBeGreaterThanOrEqual(
      done.get(own1)!.completedAt!.getTime(),
    );
  });
});
