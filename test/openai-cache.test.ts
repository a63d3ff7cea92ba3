// Prompt caching on OpenAI's chat completions (llm-openai-cache.ts): from GPT-5.6 on, a
// cache write costs 1.25 × input and, left implicit, a request reads only what was written
// at its latest message, which our prompts change every step. The client marks the stable
// prefix with explicit breakpoints instead, sends a cache key, prices the writes, and asks
// again without the hints an endpoint refuses. Against the fake model over HTTP, whose
// simulated cache follows the documented rules (src/dev/prompt-cache.ts).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type ChatRequest, type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { PromptCache } from "../src/dev/prompt-cache.ts";
import { TOOLS } from "../src/services/agents/prompt/protocol.ts";
import { createLlmClient, encodePrompt } from "../src/services/agents/runtime/llm.ts";
import { cacheHintsFor, withoutCacheHints } from "../src/services/agents/runtime/llm-openai-cache.ts";
import { priceCall } from "../src/services/money/pricing.ts";
import { requestsFor, runIdOf, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, makeWorld, md, testPrisma } from "./helpers/app.ts";

const client = createLlmClient({ timeoutMs: 5_000, maxRetries: 0 });
const SYSTEM = `You are an agent of the workspace. ${"Follow the house rules. ".repeat(200)}`;
const memory = (n: number) =>
  Array.from({ length: n }, (_, i) => `${i + 1}. navigated to /p/${i + 1}\n`).join("");
/** A step's prompt as buildPrompt shapes it: one user message, its stable part (task and memory) first. */
function prompt(model: string, steps: number) {
  const stable = `# Task\n\nTidy up.\n\n# Your steps and notes so far\n\n${memory(steps)}`;
  const user = `${stable}\n# Current page: /p/${steps}\n\n<page>\nPage ${steps}\n</page>\n\nYou have ${9 - steps} steps left.`;
  return encodePrompt({
    model,
    messages: [
      { role: "system", content: SYSTEM },
      { role: "user", content: user },
    ],
    stableChars: stable.length,
    jsonMode: false,
    tools: TOOLS,
    cacheKey: "agent-1",
  });
}
const ask = (fake: FakeLlm, model: string, steps: number) =>
  client(
    { baseURL: fake.url, apiKey: "k" },
    { prompt: prompt(model, steps), signal: new AbortController().signal },
  );
const marks = (req: ChatRequest) =>
  req.messages.map((m) =>
    Array.isArray(m.content)
      ? (m.content as { prompt_cache_breakpoint?: unknown }[]).map((p) => (p.prompt_cache_breakpoint ? 1 : 0))
      : "text",
  );

describe("the request", () => {
  let fake: FakeLlm;
  beforeAll(async () => {
    fake = await startFakeLlm({ script: () => tool("finish", { message: "ok" }) });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.cache.clear());

  it("says what each model takes: breakpoints from GPT-5.6 on, a key for older OpenAI models, nothing for others", () => {
    const hints = (m: string) => cacheHintsFor(m) ?? "none";
    expect(["gpt-5.6-sol", "openai/gpt-5.6-luna", "GPT-5.7", "gpt-6", "gpt-6.1-mini"].map(hints)).toEqual(
      Array(5).fill("breakpoints"),
    );
    expect(["gpt-5.5", "gpt-5", "gpt-4o-mini", "gpt-4.1", "o3", "o4-mini"].map(hints)).toEqual(
      Array(6).fill("key"),
    );
    expect(["gpt-oss-120b", "llama-3.1-70b", "claude-sonnet-4-5", "fake-model"].map(hints)).toEqual(
      Array(4).fill("none"),
    );
  });

  it("on GPT-5.6 marks the system message and the stable part's last three blocks, in explicit mode, with the key", async () => {
    await ask(fake, "gpt-5.6-luna", 4);
    const { wire, body } = fake.requests.at(-1)!;
    // The system message; the task, memory line 1, lines 2–4 (marked), then the page, unmarked.
    expect(marks(wire)).toEqual([[1], [0, 0, 1, 1, 1, 0]]);
    expect(wire).toMatchObject({ prompt_cache_key: "agent-1", prompt_cache_options: { mode: "explicit" } });
    // Joined, the parts are the prompt exactly: the fingerprint and the run page see one text.
    expect(body.messages[1]!.content).toContain(`${memory(4)}\n# Current page: /p/4`);
    expect(body.messages).toEqual(JSON.parse(prompt("no-hints", 4).body.toString()).messages);
  });

  it("on older OpenAI models sends the key only, and on other models nothing", async () => {
    await ask(fake, "gpt-4.1", 2);
    await ask(fake, "llama-3.1-70b", 2);
    const [older, other] = fake.requests.slice(-2).map((r) => r.wire);
    expect(marks(older!)).toEqual(["text", "text"]);
    expect(older).toMatchObject({ prompt_cache_key: "agent-1" });
    expect(older).not.toHaveProperty("prompt_cache_options");
    expect(JSON.stringify(other)).not.toContain("prompt_cache");
  });

  it("step after step reads what the step before wrote and writes only its new line; left implicit, it would read nothing", async () => {
    const usage = [];
    for (let steps = 1; steps <= 4; steps++) usage.push((await ask(fake, "gpt-5.6-luna", steps)).usage);
    expect(usage.map((u) => [u.cached > 0, (u.cacheWrite ?? 0) > 0])).toEqual([
      [false, true],
      [true, true],
      [true, true],
      [true, true],
    ]);
    for (let k = 1; k < usage.length; k++) {
      expect(usage[k]!.cached).toBe(usage[k - 1]!.cached + usage[k - 1]!.cacheWrite!);
      expect(usage[k]!.cacheWrite).toBeLessThan(10); // one memory line, ~6 tokens
    }
    // The same requests without the hints: the implicit breakpoint sits after the page, so
    // every step writes its whole prompt at 1.25 × and reads none of it back.
    const implicit = new PromptCache();
    const plain = fake.requests
      .slice(-4)
      .map((r) => JSON.parse(withoutCacheHints(Buffer.from(JSON.stringify(r.wire))).toString()));
    const reads = plain.map((w) => implicit.useChat("k", w));
    expect(reads.map((u) => u.cache_read_input_tokens)).toEqual([0, 0, 0, 0]);
    expect(reads.map((u) => [u.input_tokens, u.cache_creation_input_tokens > 1000])).toEqual(
      Array(4).fill([0, true]),
    );
  });
});

describe("an endpoint that refuses the hints", () => {
  it("is asked again without them, and from then on; refusing parallel_tool_calls too, without both", async () => {
    const fake = await startFakeLlm({
      script: (req) => {
        const wire = JSON.stringify(fake.requests.at(-1)!.wire);
        if (wire.includes("prompt_cache_options"))
          return { status: 400, content: "Unrecognized request argument supplied: prompt_cache_options" };
        if ("parallel_tool_calls" in req)
          return { status: 400, content: "Unrecognized request argument supplied: parallel_tool_calls" };
        return tool("finish", { message: "ok" });
      },
    });
    for (const steps of [1, 2]) {
      const r = await ask(fake, "gpt-5.6-sol", steps);
      expect(r.message.tool_calls?.[0]).toMatchObject({ function: { name: "finish" } });
    }
    const sent = fake.requests.map((r) => JSON.stringify(r.wire));
    expect(sent.map((w) => [w.includes("prompt_cache"), w.includes("parallel_tool_calls")])).toEqual([
      [true, true],
      [false, true],
      [false, false],
      [false, false],
    ]);
    // Without the hints, the same text: the parts stay parts.
    expect(JSON.parse(sent[3]!).messages[1].content.length).toBeGreaterThan(1);
    await fake.close();
  });
});

describe("a run on GPT-5.6", () => {
  let env: AgentEnv;
  let app: Awaited<ReturnType<typeof buildTestApp>>;
  beforeAll(async () => {
    env = await startAgents("gpt56", { LLM_DEFAULT_MODEL: "gpt-5.6-luna" });
    app = await buildTestApp();
  });
  afterAll(async () => {
    await env.close();
    await app.close();
  });

  it("reads its prefix back from the second call on, and the ledger prices reads, writes and the rest at their rates", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { capabilities: ["add_comment"] });
    const walk = ["/studios/general", "/studios/general/notes", "/studios/general", "/whoami"];
    env.llm.setScript((_req, n) =>
      walk[n]
        ? tool("navigate", { path: walk[n], note: `Step ${n + 1}.` })
        : tool("finish", { message: "done" }),
    );
    const res = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Look around." });
    const run = await waitForRun(scout.id, undefined, 20_000);
    expect([run.status, run.model]).toEqual(["completed", "gpt-5.6-luna"]);
    expect(runIdOf(res.location)).toBe(run.id);

    const sent = requestsFor(env, w);
    expect(sent).toHaveLength(walk.length + 1);
    for (const r of sent) expect(r.wire).toMatchObject({ prompt_cache_key: scout.id });
    const rows = await testPrisma().llmUsage.findMany({
      where: { runId: run.id },
      orderBy: { stepNumber: "asc" },
    });
    expect(rows).toHaveLength(sent.length);
    // The tools and system prompt (over 1,024 tokens) are written by the first call and read
    // by every later one, with the memory as the step before left it.
    expect(rows.map((r) => [r.cachedTokens > 0, r.cacheWriteTokens > 0])).toEqual([
      [false, true],
      ...Array(sent.length - 1).fill([true, true]),
    ]);
    // Each call reads at least what the one before did, but after reading a page again: its
    // text moves from the older read, still whole in the log, to the newest (it is in a
    // prompt once), and the prefix from there on is new.
    for (let k = 1; k < rows.length; k++) {
      const reread = ["/whoami", ...walk.slice(0, k - 1)].includes(walk[k - 1]!);
      if (!reread) expect(rows[k]!.cachedTokens).toBeGreaterThanOrEqual(rows[k - 1]!.cachedTokens);
    }
    expect(rows[2]!.cachedTokens).toBeGreaterThan(rows[1]!.cachedTokens);
    for (const r of rows) {
      const usage = {
        input: r.inputTokens,
        cached: r.cachedTokens,
        cacheWrite: r.cacheWriteTokens,
        output: r.outputTokens,
      };
      expect([r.priced, Number(r.costMicros)]).toEqual([true, priceCall("gpt-5.6-luna", usage).costMicros]);
      // Luna: $1 input, $0.10 cached, $1.25 written, $6 output per million.
      const rest = r.inputTokens - r.cachedTokens - r.cacheWriteTokens;
      expect(Number(r.costMicros)).toBe(
        Math.round(rest * 1 + r.cachedTokens * 0.1 + r.cacheWriteTokens * 1.25 + r.outputTokens * 6),
      );
    }
    const sum = (f: "cachedTokens" | "cacheWriteTokens") => rows.reduce((t, r) => t + r[f], 0);
    const page = (await md(app, w, w.alice, "GET", `/subagents/scout/runs/${run.id}`)).body;
    expect(page).toContain(`(${sum("cachedTokens")} cached, ${sum("cacheWriteTokens")} written to cache)`);
    expect((await stepsOf(run.id)).length).toBeGreaterThan(0);
  });
});
