// One tool call at a time, said plainly: requests ask for one (`parallel_tool_calls: false`);
// a reply that still carries several runs the first, and the next prompt tells the model the
// others were not run (from the step's record, so a rebuilt or resumed prompt says it too).
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm } from "../src/dev/fake-llm.ts";
import { createLlmClient, encodePrompt } from "../src/services/agents/runtime/llm.ts";
import { runIdOf, stepsOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool } from "./helpers/agents.ts";
import { buildTestApp, makeWorld, md, testPrisma, waitFor } from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("one-call");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

describe("a reply with several tool calls", () => {
  it("runs the first and tells the model in its next prompt that the others were not run", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    const title = `Two calls ${Date.now()}`;
    env.llm.setScript([
      tool("navigate", { path: "/studios/general" }),
      {
        tools: [
          { name: "execute_action", args: { action: "create_note", params: { title, text: "one" } } },
          { name: "navigate", args: { path: "/whoami" } },
          { name: "finish", args: { message: "posted and finished" } },
        ],
      },
      tool("finish", { message: "done" }),
    ]);
    const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: `Post ${title}`,
    });
    const runId = runIdOf(String(res.headers.location));
    const run = await waitFor(async () => {
      const r = await testPrisma().subagentTaskRun.findUniqueOrThrow({ where: { id: runId } });
      return ["completed", "failed"].includes(r.status) ? r : null;
    });
    expect(run.status).toBe("completed");
    expect(run.finalMessage).toBe("done"); // the third call's finish was not run
    expect(await testPrisma().note.count({ where: { tenantId: w.tenant.id, title } })).toBe(1);
    const steps = await stepsOf(runId);
    expect(steps.map((s) => s.type)).toEqual(["navigate", "navigate", "execute", "finish"]);
    expect(steps[2]!.detail).toMatchObject({
      ok: true,
      action: "create_note",
      unrun: ["navigate", "finish"],
    });

    const prompts = env.llm.requests
      .filter((r) => userPrompt(r.body).includes(`Post ${title}`))
      .map((r) => userPrompt(r.body));
    expect(prompts).toHaveLength(3);
    expect(prompts[1]).not.toContain("Only your first tool call was run");
    expect(prompts[2]).toContain("# Only your first tool call was run");
    expect(prompts[2]).toContain(
      "Your last reply called 3 tools at once. Only the first was run (step 3); these were NOT run: `navigate`, `finish`.",
    );
    // The step after it is rebuilt, notice and all, as it was sent.
    const rebuilt = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}/steps/4`);
    expect(rebuilt.body).toContain("Exactly what the model was sent");
    expect(rebuilt.body).toContain("Only your first tool call was run");
    const page = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}`);
    expect(page.body).toContain(
      "Not run (the reply called 3 tools; only the first runs, and the model was told): `navigate`, `finish`",
    );
    expect(scout.id).toBeTruthy();
  });

  it("an endpoint that refuses parallel_tool_calls is asked again without it, and from then on", async () => {
    const llm = await startFakeLlm({
      script: (req) =>
        "parallel_tool_calls" in req
          ? { status: 400, content: "Unrecognized request argument supplied: parallel_tool_calls" }
          : tool("finish", { message: "ok" }),
    });
    const call = createLlmClient({ timeoutMs: 5000, maxRetries: 0 });
    const prompt = encodePrompt({ model: "m", messages: [{ role: "user", content: "hi" }], jsonMode: false });
    const endpoint = { baseURL: llm.url, apiKey: "k" };
    for (let i = 0; i < 2; i++) {
      const r = await call(endpoint, { prompt, signal: new AbortController().signal });
      const [first] = r.message.tool_calls ?? [];
      expect(first?.type === "function" && first.function.name).toBe("finish");
    }
    // One refusal, then the retry, then the second call without it at once.
    expect(llm.requests.map((r) => "parallel_tool_calls" in r.body)).toEqual([true, false, false]);
    await llm.close();
  });
});
