// A model's reply on the run page as it streams: the request asks for a stream (with the
// usage in its last chunk, so the ledger is exact), the text reaches a real SSE client over
// HTTP before its step is recorded, a stream opened mid-step starts with the text so far,
// and the step, once recorded, holds the whole text.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runIdOf, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool } from "./helpers/agents.ts";
import { buildTestApp, makeWorld, md, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { as, openLive, portOf, type SseEvent } from "./helpers/live.ts";

let app: FastifyInstance;
let port: number;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp({ LIVE_HEARTBEAT_MS: "150" });
  port = await portOf(app);
  env = await startAgents("live-text");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const WORDS = "Reading the studio page now, to find the date of the offsite and who is coming along.";
const usage = { prompt_tokens: 321, completion_tokens: 17, cached_tokens: 64 };

async function runTask(w: World) {
  const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
    task: "Find the date",
  });
  expect(res.statusCode).toBe(201);
  const path = String(res.headers.location);
  return { path, id: runIdOf(path) };
}

const texts = (events: SseEvent[], step: number) =>
  events.filter((e) => e.event === "text" && e.data.step === step).map((e) => e.data.text as string);

describe("streamed replies", () => {
  it("reach a real SSE client before the step is recorded; the step then holds the whole text and the ledger the stream's usage", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    env.llm.setScript([
      { ...tool("navigate", { path: "/studios/general" }), content: WORDS, chunkDelayMs: 120, usage },
      tool("finish", { message: "done" }),
    ]);
    const run = await runTask(w);
    const stream = await openLive({ port, path: run.path, ...as(w, w.alice) });
    expect(stream.status).toBe(200);
    // Text of step 2 while the call is still out: no row for step 2 yet.
    await stream.until((es) => texts(es, 2).some((t) => t.startsWith("Reading the studio")), 10_000);
    expect((await stepsOf(run.id)).map((s) => s.number)).not.toContain(2);
    const events = await stream.until(
      (es) => es.some((e) => e.event === "step" && e.data.number === 2),
      10_000,
    );
    stream.close();
    const shown = texts(events, 2);
    // It grew as it came (several events, each the reply so far), and ended whole.
    expect(shown.length).toBeGreaterThan(1);
    for (const [i, t] of shown.entries()) if (i) expect(t.startsWith(shown[i - 1]!)).toBe(true);
    expect(events.findIndex((e) => e.event === "text")).toBeLessThan(
      events.findIndex((e) => e.event === "step" && e.data.number === 2),
    );
    const step = (await stepsOf(run.id)).find((s) => s.number === 2)!;
    expect(step.modelText).toBe(WORDS);
    // The usage came in the stream's last chunk: the ledger holds exactly it.
    const ledger = await testPrisma().llmUsage.findFirst({ where: { runId: run.id, stepNumber: 2 } });
    expect(ledger).toMatchObject({ inputTokens: 321, outputTokens: 17, cachedTokens: 64 });
    // What was asked: a stream with its usage, and one tool call at a time.
    const sent = env.llm.requests.find((r) =>
      r.body.messages.some((m) => m.content?.includes("Find the date")),
    )!;
    expect(sent.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
      parallel_tool_calls: false,
      tool_choice: "auto",
    });
    await waitFor(
      async () =>
        (await testPrisma().subagentTaskRun.findUniqueOrThrow({ where: { id: run.id } })).status ===
          "completed" || null,
    );
    expect(scout.id).toBeTruthy();
  });

  it("a stream opened mid-step starts with the text so far", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    env.llm.setScript([
      {
        ...tool("navigate", { path: "/studios/general" }),
        chunks: ["Half of it, ", "then ", "the rest."],
        // Seconds apart, so "at once" below has room on a busy machine.
        chunkDelayMs: 3000,
      },
      tool("finish", { message: "done" }),
    ]);
    const run = await runTask(w);
    const first = await openLive({ port, path: run.path, ...as(w, w.alice) });
    await first.until((es) => texts(es, 2).includes("Half of it, "), 10_000);
    // Opened now, between two chunks: its first events say what was written so far.
    const opened = Date.now();
    const late = await openLive({ port, path: run.path, ...as(w, w.alice) });
    const got = await late.until((es) => texts(es, 2).length > 0, 5_000);
    expect(texts(got, 2)[0]).toMatch(/^Half of it, /);
    expect(Date.now() - opened).toBeLessThan(2500); // before the next chunk, 3 s on
    first.close();
    late.close();
  });

  it("a JSON-mode request carries no tools and no parallel_tool_calls, and still streams", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    env.llm.setScript((req) =>
      req.tools
        ? { status: 400, content: "this model does not support tools" }
        : { content: JSON.stringify({ type: "finish", message: "done in JSON" }) },
    );
    const run = await runTask(w);
    const done = await waitFor(async () => {
      const r = await testPrisma().subagentTaskRun.findUniqueOrThrow({ where: { id: run.id } });
      return r.status === "completed" ? r : null;
    });
    expect(done.finalMessage).toBe("done in JSON");
    const json = env.llm.requests.filter((r) => !r.body.tools).at(-1)!.body;
    expect(json.stream).toBe(true);
    expect(json.parallel_tool_calls).toBeUndefined();
  });
});
