// Runs on an Anthropic key, end to end: real workers on Postgres and Redis, the real
// `@anthropic-ai/sdk` over HTTP to the fake Anthropic server (src/dev/fake-anthropic.ts),
// whose usage comes from its simulated prompt cache. What a cached call costs, to the
// micro-dollar; what a refused key, an unknown model and a key test do; and that the key
// reaches nothing but the provider's Authorization header.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AnthropicRecorded, type FakeAnthropic, startFakeAnthropic } from "../src/dev/fake-anthropic.ts";
import { priceCall } from "../src/services/money/pricing.ts";
import { stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, startAgents, tool } from "./helpers/agents.ts";
import { anthropicAgent, runTask } from "./helpers/anthropic.ts";
import { buildTestApp, makeWorld, md, testPrisma } from "./helpers/app.ts";
import { databaseDump } from "./helpers/dumps.ts";
import { keyRow } from "./helpers/keys.ts";
import { captureLog } from "./helpers/logs.ts";

const db = testPrisma;
const workerLog = captureLog("trace");
let app: FastifyInstance;
let env: AgentEnv;
let fake: FakeAnthropic;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("anthropic", {}, [], workerLog.logger);
  fake = await startFakeAnthropic();
});
afterAll(async () => {
  await env.close();
  await app.close();
  await fake.close();
});
beforeEach(() => {
  fake.cache.clear();
  fake.setMissingModels([]);
  fake.setAcceptedKeys(null);
});

const marked = (blocks: { cache_control?: unknown }[] | string | undefined) =>
  typeof blocks === "string" ? [] : (blocks ?? []).flatMap((b, i) => (b.cache_control ? [i] : []));
const since = (n: number): AnthropicRecorded[] => fake.requests.slice(n);

describe("what a cached call costs", () => {
  it("cache writes at 1.25 × input, reads at 0.1 × input, the rest at input, to the micro-dollar", () => {
    // claude-sonnet-4-5: $3 input, $0.30 cached, $3.75 cache write, $15 output, per million.
    const usage = { input: 10_000, cached: 6_000, cacheWrite: 3_000, output: 200 };
    expect(priceCall("claude-sonnet-4-5", usage).costMicros).toBe(
      1_000 * 3 + 6_000 * 0.3 + 3_000 * 3.75 + 200 * 15,
    );
    expect(priceCall("claude-haiku-4-5-20251001", { ...usage, cached: 0 }).costMicros).toBe(
      7_000 * 1 + 3_000 * 1.25 + 200 * 5,
    );
    // OpenAI has no write surcharge: a cache write (never reported by it) would cost input.
    expect(priceCall("gpt-4o", usage).costMicros).toBe(4_000 * 2.5 + 6_000 * 1.25 + 200 * 10);
    // Never more written than the input not already read.
    expect(
      priceCall("claude-sonnet-4-5", { input: 100, cached: 80, cacheWrite: 500, output: 0 }).costMicros,
    ).toBe(Math.round(80 * 0.3 + 20 * 3.75));
  });
});

describe("a run on an Anthropic key", () => {
  it("navigates, acts through a tool_use, finishes; each call's row carries its cache writes and reads", async () => {
    const w = await makeWorld("claude");
    const { key, keyRow: k } = await anthropicAgent(w, fake, "claude");
    const first = fake.requests.length;
    // The create_note missing its text fails and leaves the run on the studio page: the call
    // after it has the same tools and system prompt, and reads what the one before wrote.
    const note = (params: Record<string, string>) => ({ tool: { name: "create_note", args: { params } } });
    fake.setScript([
      { content: "Let me open the studio.", tool: { name: "navigate", args: { path: "/studios/general" } } },
      note({ title: "Claude was here" }),
      note({ title: "Claude was here", text: "Cached, mostly." }),
      { content: "All done.", tool: { name: "finish", args: { message: "Left a note." } } },
    ]);
    const run = await runTask(app, w, "claude");
    expect(run).toMatchObject({
      status: "completed",
      finalMessage: "Left a note.",
      model: "claude-sonnet-4-5",
    });
    expect(await db().note.count({ where: { tenantId: w.tenant.id, title: "Claude was here" } })).toBe(1);

    // What went over the wire: the key in the Authorization header only; breakpoints on the
    // last tool and the system block; the user part's only when the prompt has a stable part.
    const sent = since(first);
    expect(sent).toHaveLength(4);
    for (const r of sent) {
      expect(r.headers.authorization).toBe(`Bearer ${key}`);
      expect(r.raw).not.toContain(key);
      expect(marked(r.body.tools)).toEqual([r.body.tools!.length - 1]);
      expect(marked(r.body.system)).toEqual([0]);
      const users = r.body.messages.filter((m) => m.role === "user");
      expect(users).toHaveLength(1);
      // At most two: the stable part's end, and where the log's page window begins.
      expect(marked(users[0]!.content).length).toBeLessThanOrEqual(2);
      expect(r.body).toMatchObject({ max_tokens: 4096, stream: true });
    }

    // The ledger: a row per call, exactly as the provider counted it, priced at the three rates.
    const rows = await db().llmUsage.findMany({ where: { runId: run.id }, orderBy: { stepNumber: "asc" } });
    expect(rows).toHaveLength(4);
    for (const [i, row] of rows.entries()) {
      const u = sent[i]!.usage!;
      const usage = {
        input: u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens,
        cached: u.cache_read_input_tokens,
        cacheWrite: u.cache_creation_input_tokens,
        output: u.output_tokens,
      };
      expect(row).toMatchObject({
        apiKeyId: k.id,
        model: "claude-sonnet-4-5",
        priced: true,
        inputTokens: usage.input,
        cachedTokens: usage.cached,
        cacheWriteTokens: usage.cacheWrite,
        outputTokens: usage.output,
      });
      expect(Number(row.costMicros)).toBe(priceCall("claude-sonnet-4-5", usage).costMicros);
    }
    // On /whoami the prefix is over the 1024 tokens a cache entry needs (the tools are the
    // run's): written. The studio offers actions /whoami's call did not type, so the tools
    // change and the second call writes afresh; from then on each call reads what the one
    // before wrote (the same tools, the memory only gains a line) and writes only its new line.
    expect(rows.map((r) => [r.cacheWriteTokens > 0, r.cachedTokens > 0])).toEqual([
      [true, false],
      [true, false],
      [true, true],
      [true, true],
    ]);
    expect(rows[2]!.cachedTokens).toBe(rows[1]!.cacheWriteTokens);
    expect(rows[3]!.cachedTokens).toBe(rows[2]!.cachedTokens + rows[2]!.cacheWriteTokens);
    expect(rows[3]!.cacheWriteTokens).toBeLessThan(rows[3]!.cachedTokens / 4);
    // The run's totals, and its page, say so.
    const totals = await db().subagentTaskRun.findUniqueOrThrow({ where: { id: run.id } });
    const sum = (f: "cachedTokens" | "cacheWriteTokens") => rows.reduce((t, r) => t + r[f], 0);
    expect(totals).toMatchObject({
      cachedTokens: sum("cachedTokens"),
      cacheWriteTokens: sum("cacheWriteTokens"),
    });
    const page = (await md(app, w, w.alice, "GET", `/subagents/claude/runs/${run.id}`)).body;
    expect(page).toContain(`(${sum("cachedTokens")} cached, ${sum("cacheWriteTokens")} written to cache)`);

    // The text beside a tool call is the step's, as with OpenAI; the key is in no step or row.
    const steps = await stepsOf(run.id);
    expect(steps.find((s) => s.type === "navigate" && s.number === 2)?.modelText).toBe(
      "Let me open the studio.",
    );
    const forms = [key, Buffer.from(key).toString("base64"), Buffer.from(key).toString("hex")];
    const dump = (await databaseDump()).map((r) => `${r.table}: ${r.row}`);
    expect(dump.some((r) => r.includes(run.id))).toBe(true);
    for (const f of forms) {
      expect(dump.filter((r) => r.includes(f))).toEqual([]);
      expect(workerLog.raw.filter((l) => l.includes(f))).toEqual([]);
    }
  });
});

describe("failures", () => {
  it("a key Anthropic refuses (401) fails the run with the key's reason and marks the key", async () => {
    const w = await makeWorld("claude401");
    const { key, keyRow: k } = await anthropicAgent(w, fake, "refused");
    // As some providers do, its error quotes the key it refused.
    fake.setScript([{ status: 401, content: `invalid x-api-key: ${key}` }]);
    const run = await runTask(app, w, "refused");
    expect(run).toMatchObject({ status: "failed", stopReason: "llm_auth" });
    expect(run.error).toContain(`The provider refused the API key “Claude refused” (…${k.keyHint})`);
    expect(run.error).toContain("invalid x-api-key: [key]");
    expect((await keyRow(k.id)).authFailedAt).not.toBeNull();
    const dump = (await databaseDump()).map((r) => `${r.table}: ${r.row}`);
    expect(dump.some((r) => r.includes("invalid x-api-key: [key]"))).toBe(true);
    expect(dump.filter((r) => r.includes(key))).toEqual([]);
    expect(workerLog.raw.filter((l) => l.includes(key))).toEqual([]);
  });

  it("an unknown model (404) falls back to the next model; the ledger names the one that answered", async () => {
    const w = await makeWorld("claude404");
    await anthropicAgent(w, fake, "fallback", {
      model: "claude-nope",
      fallback_models: ["claude-haiku-4-5"],
    });
    fake.setMissingModels(["claude-nope"]);
    const first = fake.requests.length;
    fake.setScript([tool("finish", { message: "done by haiku" })]);
    const run = await runTask(app, w, "fallback");
    expect(run).toMatchObject({ status: "completed", finalMessage: "done by haiku" });
    expect(since(first).map((r) => r.body.model)).toEqual(["claude-nope", "claude-haiku-4-5"]);
    const rows = await db().llmUsage.findMany({ where: { runId: run.id } });
    expect(rows.map((r) => [r.model, r.priced])).toEqual([["claude-haiku-4-5", true]]);
  });

  it("testing an Anthropic key lists its models with the SDK; a refused one says so", async () => {
    const w = await makeWorld("claudekey");
    const { keyRow: k } = await anthropicAgent(w, fake, "tested");
    fake.setModels(["claude-haiku-4-5", "claude-sonnet-4-5"]);
    const url = "/u/alice/settings/api-keys/actions/test_api_key";
    const ok = await md(app, w, w.alice, "POST", url, { id: k.id });
    expect(ok.body).toContain("The key works: the provider lists 2 model(s).");
    expect((await keyRow(k.id)).listedModels).toEqual(["claude-haiku-4-5", "claude-sonnet-4-5"]);
    expect(fake.requests.length).toBeGreaterThan(0);
    fake.setAcceptedKeys([]);
    const refused = await md(app, w, w.alice, "POST", url, { id: k.id });
    expect(refused.body).toContain("The provider refused the key (401).");
  });
});
