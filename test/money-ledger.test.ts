// Money, for real: what a call costs (list prices, dated and routed model names, tenant
// overrides), the usage ledger and every total that derives from it, spend alerts that
// fire exactly once even when many calls land at the same instant, and the monthly cost
// limit — a run stopped mid-way, the agent paused, triggers skipped, and the ways back
// (raising the limit; resuming refused while still over it). Real Postgres, Redis, BullMQ
// workers and the fake LLM over HTTP, whose replies carry exact token counts.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrisma, type PrismaClient } from "../src/db/prisma.ts";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { newId } from "../src/lib/ids.ts";
import { queueRun } from "../src/services/agents/core/runs.ts";
import { LeaseLostError, recordStep } from "../src/services/agents/core/steps.ts";
import { createKey } from "../src/services/money/keys.ts";
import {
  liftLastMonthsPauses,
  monthOf,
  readBudget,
  recordUsage,
  type UsageEntry,
} from "../src/services/money/ledger.ts";
import { PRICE_LIST_VERSION, priceCall } from "../src/services/money/pricing.ts";
import { agentOf, processed, requestsFor, runIdOf, stepsOf } from "./helpers/agent-scripts.ts";
import { type Agent, type AgentEnv, makeAgent, runsOf, startAgents, tool } from "./helpers/agents.ts";
import {
  act,
  buildTestApp,
  fileDatabaseUrl,
  login,
  makeWorld,
  md,
  type Person,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("money");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;
const TERMINAL = ["completed", "failed", "cancelled", "timed_out", "skipped"];

/** Token counts as the provider reports them: `cached` is part of `input`. */
const u = (input: number, output: number, cached = 0) => ({ input, output, cached });

/** A scripted reply that reports exactly these token counts. */
const billed = (reply: FakeReply, input: number, output: number, cached = 0): FakeReply => ({
  ...reply,
  usage: { prompt_tokens: input, completion_tokens: output, cached_tokens: cached },
});

const nav = (path: string) => tool("navigate", { path });
const finish = (message = "done") => tool("finish", { message });

/** Queues a manual run as its owner over the markdown API; returns the run id. */
async function runTask(w: World, owner: Person, handle: string, task = "Look around.") {
  const res = await md(app, w, owner, "POST", `/subagents/${handle}/run/actions/run_task`, { task });
  expect(res.statusCode, res.body).toBe(201);
  return runIdOf(res.headers.location as string);
}

/** Waits for a run to end. */
const ended = (runId: string) =>
  waitFor(async () => {
    const r = await db().subagentTaskRun.findUniqueOrThrow({ where: { id: runId } });
    return TERMINAL.includes(r.status) && r;
  }, 15_000);

/** The events worker has finished with every spend event about this agent; returns them. */
async function spendEventsSettled(agentId: string) {
  const events = await db().event.findMany({
    where: { subjectId: agentId, type: { in: ["usage.threshold", "agent.paused"] } },
    orderBy: { createdAt: "asc" },
  });
  for (const e of events)
    await waitFor(async () => {
      const job = await env.runtime.queues.events.getJob(e.id);
      return job && (await job.isCompleted());
    }, 10_000);
  return events;
}

/** The owner's notifications about this agent's spend (they link to its usage page). */
const spendNotifications = (owner: Person, agent: Agent) =>
  db().notification.findMany({
    where: { userId: owner.id, path: `/subagents/${agent.handle}/usage` },
    include: { event: true },
    orderBy: { createdAt: "asc" },
  });

/**
 * Every total that derives from the ledger, compared with the SUM of its rows: runs, API
 * keys, agent months, daily rollups, and each tenant's month (the month rows against the
 * ledger, the daily rows against the ledger). Returns the mismatches, so a failure says
 * which total is off. `tenantId` narrows it to one tenant; without it, the whole database.
 */
async function ledgerMismatches(tenantId?: string): Promise<string[]> {
  const t = tenantId ?? null;
  const rows = await db().$queryRaw<{ what: string }[]>`
    WITH l AS (SELECT * FROM llm_usage WHERE ${t}::text IS NULL OR tenant_id = ${t}::text)
    SELECT 'run ' || r.id || ': ' || row(r.input_tokens, r.cached_tokens, r.output_tokens, r.cost_micros)::text
      || ' vs ledger ' || row(s.i, s.c, s.o, s.cost)::text AS what
    FROM subagent_task_runs r
    LEFT JOIN (SELECT run_id, sum(input_tokens) i, sum(cached_tokens) c, sum(output_tokens) o, sum(cost_micros) cost
               FROM l GROUP BY run_id) s ON s.run_id = r.id
    WHERE (${t}::text IS NULL OR r.tenant_id = ${t}::text)
      AND (r.input_tokens, r.cached_tokens, r.output_tokens, r.cost_micros)
          IS DISTINCT FROM (coalesce(s.i, 0), coalesce(s.c, 0), coalesce(s.o, 0), coalesce(s.cost, 0))
    UNION ALL
    SELECT 'key ' || k.id || ': ' || row(k.total_calls, k.total_input_tokens, k.total_cached_tokens,
      k.total_output_tokens, k.total_cost_micros)::text || ' vs ledger ' || row(s.n, s.i, s.c, s.o, s.cost)::text
    FROM agent_api_keys k
    LEFT JOIN (SELECT api_key_id, count(*) n, sum(input_tokens) i, sum(cached_tokens) c, sum(output_tokens) o,
                      sum(cost_micros) cost
               FROM l GROUP BY api_key_id) s ON s.api_key_id = k.id
    WHERE (${t}::text IS NULL OR k.tenant_id = ${t}::text)
      AND (k.total_calls, k.total_input_tokens, k.total_cached_tokens, k.total_output_tokens, k.total_cost_micros)
          IS DISTINCT FROM (coalesce(s.n, 0), coalesce(s.i, 0), coalesce(s.c, 0), coalesce(s.o, 0), coalesce(s.cost, 0))
    UNION ALL
    SELECT 'agent month ' || coalesce(m.agent_id, s.agent_id) || ' ' || coalesce(m.month, s.month) || ': '
      || coalesce(row(m.calls, m.input_tokens, m.cached_tokens, m.output_tokens, m.cost_micros)::text, 'missing')
      || ' vs ledger ' || coalesce(row(s.n, s.i, s.c, s.o, s.cost)::text, 'no rows')
    FROM (SELECT * FROM agent_usage_months WHERE ${t}::text IS NULL OR tenant_id = ${t}::text) m
    FULL JOIN (SELECT agent_id, to_char(created_at, 'YYYY-MM') AS month, count(*) n, sum(input_tokens) i,
                      sum(cached_tokens) c, sum(output_tokens) o, sum(cost_micros) cost
               FROM l GROUP BY 1, 2) s ON s.agent_id = m.agent_id AND s.month = m.month
    WHERE (m.calls, m.input_tokens, m.cached_tokens, m.output_tokens, m.cost_micros)
          IS DISTINCT FROM (s.n, s.i, s.c, s.o, s.cost)
    UNION ALL
    SELECT 'daily ' || coalesce(d.agent_id, s.agent_id) || ' ' || coalesce(d.day, s.day)::text || ' '
      || coalesce(d.model, s.model) || ' ' || coalesce(d.key_ref, s.key_ref) || ': '
      || coalesce(row(d.calls, d.unpriced_calls, d.input_tokens, d.cached_tokens, d.output_tokens, d.cost_micros)::text, 'missing')
      || ' vs ledger ' || coalesce(row(s.n, s.unpriced, s.i, s.c, s.o, s.cost)::text, 'no rows')
    FROM (SELECT * FROM llm_usage_daily WHERE ${t}::text IS NULL OR tenant_id = ${t}::text) d
    FULL JOIN (SELECT agent_id, created_at::date AS day, model, coalesce(api_key_id, 'shared') AS key_ref, count(*) n,
                      count(*) FILTER (WHERE NOT priced) unpriced, sum(input_tokens) i, sum(cached_tokens) c,
                      sum(output_tokens) o, sum(cost_micros) cost
               FROM l GROUP BY 1, 2, 3, 4) s
      ON s.agent_id = d.agent_id AND s.day = d.day AND s.model = d.model AND s.key_ref = d.key_ref
    WHERE (d.calls, d.unpriced_calls, d.input_tokens, d.cached_tokens, d.output_tokens, d.cost_micros)
          IS DISTINCT FROM (s.n, s.unpriced, s.i, s.c, s.o, s.cost)
    UNION ALL
    SELECT 'tenant ' || s.tenant_id || ' ' || s.month || ': ledger ' || s.cost || ', agent months '
      || coalesce(m.cost, 0) || ', daily ' || coalesce(d.cost, 0)
    FROM (SELECT tenant_id, to_char(created_at, 'YYYY-MM') AS month, sum(cost_micros) cost FROM l GROUP BY 1, 2) s
    LEFT JOIN (SELECT tenant_id, month, sum(cost_micros) cost FROM agent_usage_months GROUP BY 1, 2) m
      ON m.tenant_id = s.tenant_id AND m.month = s.month
    LEFT JOIN (SELECT tenant_id, to_char(day, 'YYYY-MM') AS month, sum(cost_micros) cost FROM llm_usage_daily GROUP BY 1, 2) d
      ON d.tenant_id = s.tenant_id AND d.month = s.month
    WHERE s.cost IS DISTINCT FROM m.cost OR s.cost IS DISTINCT FROM d.cost`;
  return rows.map((r) => r.what);
}

describe("what a call costs", () => {
  // List prices are USD per 1M tokens, i.e. micro-dollars per token: expected values are
  // worked out by hand from the published prices, never from the code under test.
  it("prices input, cached input and output at each model's list price, in micro-dollars", () => {
    // gpt-4o: $2.50 in, $1.25 cached, $10 out.
    expect(priceCall("gpt-4o", u(1000, 200))).toEqual({
      costMicros: 4500,
      priced: true,
      version: PRICE_LIST_VERSION,
    });
    // 400 of the 1000 prompt tokens were cached: 600 × 2.5 + 400 × 1.25 + 200 × 10.
    expect(priceCall("gpt-4o", u(1000, 200, 400)).costMicros).toBe(1500 + 500 + 2000);
    // gpt-4o-mini: $0.15 in, $0.075 cached, $0.60 out.
    expect(priceCall("gpt-4o-mini", u(1000, 200)).costMicros).toBe(150 + 120);
    expect(priceCall("gpt-4o-mini", u(10_000, 2000, 4000)).costMicros).toBe(900 + 300 + 1200);
    // claude-sonnet-4-5: $3 in, $0.30 cached, $15 out.
    expect(priceCall("claude-sonnet-4-5", u(1000, 200)).costMicros).toBe(3000 + 3000);
    expect(priceCall("claude-sonnet-4-5", u(100_000, 1000, 90_000)).costMicros).toBe(
      30_000 + 27_000 + 15_000,
    );
    // A big call stays exact: 2M prompt tokens (1.5M cached) and 100k out on gpt-4o = $10.125.
    expect(priceCall("gpt-4o", u(2_000_000, 100_000, 1_500_000)).costMicros).toBe(
      1_250_000 + 1_875_000 + 1_000_000,
    );
    // Zero tokens cost nothing but are still a priced call.
    expect(priceCall("gpt-4o", u(0, 0))).toEqual({
      costMicros: 0,
      priced: true,
      version: PRICE_LIST_VERSION,
    });
  });

  it("never bills more cached tokens than the prompt had", () => {
    // A provider reporting cached > prompt must not produce a negative uncached part.
    expect(priceCall("gpt-4o", u(100, 0, 500)).costMicros).toBe(125);
  });

  it("prices dated snapshots, -latest and router-prefixed names as their list model", () => {
    expect(priceCall("gpt-4o-2024-08-06", u(1000, 200)).costMicros).toBe(4500);
    // gpt-4o-mini's snapshot is priced as gpt-4o-mini, not as gpt-4o.
    expect(priceCall("gpt-4o-mini-2024-07-18", u(1000, 200)).costMicros).toBe(270);
    expect(priceCall("claude-sonnet-4-20250514", u(1000, 200)).costMicros).toBe(6000);
    // claude-sonnet-4-5's snapshot is sonnet 4.5, not sonnet 4 with a "-5-…" suffix (same price, so check the name).
    expect(priceCall("claude-sonnet-4-5-20250929", u(1000, 200))).toMatchObject({
      costMicros: 6000,
      priced: true,
    });
    expect(priceCall("claude-3-7-sonnet-latest", u(1000, 200)).costMicros).toBe(6000);
    expect(priceCall("openai/gpt-4o", u(1000, 200)).costMicros).toBe(4500);
    expect(priceCall("anthropic/claude-sonnet-4-5", u(1000, 200, 500)).costMicros).toBe(1500 + 150 + 3000);
    expect(priceCall("openai/gpt-4o-mini-2024-07-18", u(1000, 200)).costMicros).toBe(270);
    // Case does not matter to providers, nor here.
    expect(priceCall("GPT-4o", u(1000, 200)).costMicros).toBe(4500);
  });

  it("prices a lookalike name as nothing rather than as its neighbour", () => {
    const unpriced = { costMicros: 0, priced: false, version: PRICE_LIST_VERSION };
    // gpt-5-pro costs 12× gpt-5: pricing it as gpt-5 would understate spend.
    expect(priceCall("gpt-5-pro", u(1000, 200))).toEqual(unpriced);
    expect(priceCall("gpt-5-pro-2025-10-06", u(1000, 200))).toEqual(unpriced);
    expect(priceCall("gpt-4o-audio-preview", u(1000, 200))).toEqual(unpriced);
    expect(priceCall("fake-model", u(1000, 200))).toEqual(unpriced);
    expect(priceCall("llama-3.1-70b", u(5_000_000, 1_000_000))).toEqual(unpriced);
    // Control: gpt-5 itself is priced ($1.25 in, $10 out).
    expect(priceCall("gpt-5", u(1000, 200)).costMicros).toBe(1250 + 2000);
  });

  it("a tenant's own price wins over the list, and the row's version says so", () => {
    const overrides = {
      "gpt-4o": { input: 1, cached_input: 0.5, output: 2 },
      "llama-3.1-70b": { input: 0.5, cached_input: 0.5, output: 0.75 },
    };
    expect(priceCall("gpt-4o", u(1000, 200, 400), overrides)).toEqual({
      costMicros: 600 + 200 + 400,
      priced: true,
      version: `${PRICE_LIST_VERSION}+tenant`,
    });
    // The override covers the model's snapshots too.
    expect(priceCall("gpt-4o-2024-08-06", u(1000, 200), overrides).costMicros).toBe(1000 + 400);
    // A model only the tenant prices is priced.
    expect(priceCall("llama-3.1-70b", u(1000, 200), overrides)).toEqual({
      costMicros: 500 + 150,
      priced: true,
      version: `${PRICE_LIST_VERSION}+tenant`,
    });
    // Models the tenant did not price keep the list price and the plain version.
    expect(priceCall("gpt-4o-mini", u(1000, 200), overrides)).toEqual({
      costMicros: 270,
      priced: true,
      version: PRICE_LIST_VERSION,
    });
  });

  it("a tenant may price a router's model under its full routed name", () => {
    // Self-hosted and router models are only ever known by their routed id
    // (`meta-llama/llama-3.1-70b-instruct`): set_model_price accepts the `/`, so the
    // price must apply to calls with that id.
    const overrides = { "meta-llama/llama-3.1-70b-instruct": { input: 0.4, cached_input: 0.4, output: 0.4 } };
    expect(priceCall("meta-llama/llama-3.1-70b-instruct", u(1000, 1000), overrides)).toEqual({
      costMicros: 800,
      priced: true,
      version: `${PRICE_LIST_VERSION}+tenant`,
    });
    // A tenant price for a routed gpt-4o beats the list price of plain gpt-4o.
    const routed = { "azure/gpt-4o": { input: 5, cached_input: 2.5, output: 20 } };
    expect(priceCall("azure/gpt-4o", u(1000, 200), routed).costMicros).toBe(5000 + 4000);
    // …and only for that route: OpenAI's own gpt-4o keeps its list price.
    expect(priceCall("openai/gpt-4o", u(1000, 200), routed)).toMatchObject({
      costMicros: 4500,
      version: PRICE_LIST_VERSION,
    });
  });
});

/** Sets the fake LLM's replies, runs a manual task to its end, and returns the run. */
async function scriptedRun(w: World, owner: Person, agent: Agent, replies: FakeReply[]) {
  env.llm.setScript(replies);
  const run = await ended(await runTask(w, owner, agent.handle));
  return run;
}

const ledgerOf = (runId: string) =>
  db().llmUsage.findMany({ where: { runId }, orderBy: { stepNumber: "asc" } });

describe("the ledger", () => {
  it("writes one row per model call, and the run's totals are exactly its rows", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o" });
    const run = await scriptedRun(w, w.alice, scout, [
      // 1000 in, 100 out: 1000 × 2.5 + 100 × 10 = 3500 µ$.
      billed({ ...nav("/studios/general"), delayMs: 25 }, 1000, 100),
      // 2000 in of which 1500 cached, 50 out: 500 × 2.5 + 1500 × 1.25 + 50 × 10 = 3625 µ$.
      billed(nav("/notifications"), 2000, 50, 1500),
      // 3000 in of which 2000 cached, 20 out: 1000 × 2.5 + 2000 × 1.25 + 20 × 10 = 5200 µ$.
      billed(finish(), 3000, 20, 2000),
    ]);
    expect(run).toMatchObject({ status: "completed", model: "gpt-4o" });

    // Exactly the three calls the fake model answered: no more rows, no fewer.
    const calls = requestsFor(env, w);
    expect(calls.map((r) => r.body.model)).toEqual(["gpt-4o", "gpt-4o", "gpt-4o"]);
    const rows = await ledgerOf(run.id);
    // Step 1 is the automatic /whoami (no model call); the calls are steps 2-4.
    expect(
      rows.map((r) => [r.stepNumber, r.inputTokens, r.cachedTokens, r.outputTokens, Number(r.costMicros)]),
    ).toEqual([
      [2, 1000, 0, 100, 3500],
      [3, 2000, 1500, 50, 3625],
      [4, 3000, 2000, 20, 5200],
    ]);
    for (const r of rows)
      expect(r).toMatchObject({
        tenantId: w.tenant.id,
        agentId: scout.id,
        ownerId: w.alice.id,
        apiKeyId: null, // the operator's shared endpoint
        model: "gpt-4o",
        pricingVersion: PRICE_LIST_VERSION,
        priced: true,
      });
    // The latency is the call's own: the first reply was held back 25 ms by the fake server.
    expect(rows[0]!.latencyMs).toBeGreaterThanOrEqual(25);
    expect(rows.every((r) => r.latencyMs >= 0)).toBe(true);

    // The run's totals, and its steps' token counts, are the rows'.
    expect(run).toMatchObject({
      inputTokens: 6000,
      cachedTokens: 3500,
      outputTokens: 170,
      costMicros: 12_325n,
    });
    const steps = await stepsOf(run.id);
    expect(steps.map((s) => [s.number, s.inputTokens, s.outputTokens])).toEqual([
      [1, 0, 0],
      [2, 1000, 100],
      [3, 2000, 50],
      [4, 3000, 20],
    ]);
    // So is the agent's month.
    const month = await db().agentUsageMonth.findUniqueOrThrow({
      where: { agentId_month: { agentId: scout.id, month: monthOf(new Date()) } },
    });
    expect(month).toMatchObject({
      calls: 3,
      inputTokens: 6000n,
      cachedTokens: 3500n,
      outputTokens: 170n,
      costMicros: 12_325n,
    });
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
  });

  it("keeps every run, key, agent month, daily row and the tenant equal to the sum of its rows", async () => {
    const w = await makeWorld();
    // Two owners, three agents: alice's scout on gpt-4o (shared endpoint), her echo on a
    // model no price list knows, bob's ranger on a dated Claude snapshot with his own key.
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o" });
    const echo = await makeAgent(w, w.alice, "echo", { model: "house-model-7b" });
    const key = await createKey(db(), {
      tenantId: w.tenant.id,
      holder: { ownerId: w.bob.id },
      label: "Bob's Anthropic",
      provider: "openai_compatible",
      baseUrl: env.llm.url,
      key: "sk-bob-own-key-0001",
    });
    const ranger = await makeAgent(w, w.bob, "ranger", {
      model: "claude-sonnet-4-5-20250929",
      api_key_id: key.id,
    });

    const r1 = await scriptedRun(w, w.alice, scout, [
      billed(nav("/studios"), 800, 40),
      billed(finish(), 900, 10, 800),
    ]);
    const r2 = await scriptedRun(w, w.bob, ranger, [
      billed(nav("/studios/general"), 5000, 300, 4000),
      billed(nav("/notifications"), 6000, 200, 5000),
      billed(finish(), 7000, 100, 6000),
    ]);
    const r3 = await scriptedRun(w, w.alice, echo, [
      billed(nav("/studios"), 1234, 56),
      billed(finish(), 2345, 67),
    ]);
    const r4 = await scriptedRun(w, w.bob, ranger, [billed(finish(), 10_000, 1000)]);
    const r5 = await scriptedRun(w, w.alice, scout, [billed(finish(), 100_000, 5000, 50_000)]);
    for (const r of [r1, r2, r3, r4, r5]) expect(r.status).toBe("completed");

    // Each run's cost, worked out by hand from the list prices.
    // scout, gpt-4o: 800 × 2.5 + 40 × 10 = 2400; 100 × 2.5 + 800 × 1.25 + 10 × 10 = 1350.
    expect(r1.costMicros).toBe(3750n);
    // ranger, sonnet 4.5 ($3 / $0.30 / $15): 1000×3 + 4000×0.3 + 300×15 = 8700;
    // 1000×3 + 5000×0.3 + 200×15 = 7500; 1000×3 + 6000×0.3 + 100×15 = 6300.
    expect(r2.costMicros).toBe(22_500n);
    // echo: no price anywhere, so zero, and the rows say unpriced.
    expect(r3.costMicros).toBe(0n);
    expect(r3).toMatchObject({ inputTokens: 1234 + 2345, outputTokens: 56 + 67 });
    expect((await ledgerOf(r3.id)).map((r) => r.priced)).toEqual([false, false]);
    // ranger: 10000 × 3 + 1000 × 15.
    expect(r4.costMicros).toBe(45_000n);
    // scout: 50000 × 2.5 + 50000 × 1.25 + 5000 × 10.
    expect(r5.costMicros).toBe(237_500n);

    // Bob's key carried ranger's calls (the fake provider saw it) and only those.
    const viaKey = requestsFor(env, w).filter(
      (r) => r.headers.authorization === "Bearer sk-bob-own-key-0001",
    );
    expect(viaKey.map((r) => agentOf(r.body))).toEqual(["ranger", "ranger", "ranger", "ranger"]);
    const k = await db().agentApiKey.findUniqueOrThrow({ where: { id: key.id } });
    expect(k).toMatchObject({ totalCalls: 4, totalCostMicros: 67_500n, totalInputTokens: 28_000n });
    expect(k.lastUsedAt).not.toBeNull();
    expect((await db().llmUsage.findMany({ where: { runId: r5.id } })).map((r) => r.apiKeyId)).toEqual([
      null,
    ]);

    // The months: scout 3750 + 237500, ranger 22500 + 45000, echo 0 in 2 calls.
    const months = await db().agentUsageMonth.findMany({ where: { tenantId: w.tenant.id } });
    const byAgent = Object.fromEntries(months.map((m) => [m.agentId, [m.calls, m.costMicros]]));
    expect(byAgent).toEqual({
      [scout.id]: [3, 241_250n],
      [ranger.id]: [4, 67_500n],
      [echo.id]: [2, 0n],
    });
    // And every total in the tenant is the sum of its ledger rows.
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
    const daily = await db().llmUsageDaily.findMany({ where: { tenantId: w.tenant.id } });
    expect(daily.find((d) => d.agentId === echo.id)).toMatchObject({
      calls: 2,
      unpricedCalls: 2,
      keyRef: "shared",
    });
    expect(daily.find((d) => d.agentId === ranger.id)).toMatchObject({
      calls: 4,
      keyRef: key.id,
      ownerId: w.bob.id,
    });
  });

  it("the check itself catches a total that drifted from its rows", async () => {
    // Guards the guard: corrupt one total by a single micro-dollar and the check names it.
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o" });
    const run = await scriptedRun(w, w.alice, scout, [billed(finish(), 1000, 100)]);
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
    await db().subagentTaskRun.update({ where: { id: run.id }, data: { costMicros: { increment: 1 } } });
    await db().agentUsageMonth.updateMany({
      where: { agentId: scout.id },
      data: { calls: { increment: 1 } },
    });
    const found = (await ledgerMismatches(w.tenant.id)).sort();
    expect(found).toHaveLength(2);
    expect(found[0]).toContain(`agent month ${scout.id}`);
    expect(found[1]).toContain(`run ${run.id}`);
    // Put it back: the file's last test checks the whole database.
    await db().subagentTaskRun.update({ where: { id: run.id }, data: { costMicros: { decrement: 1 } } });
    await db().agentUsageMonth.updateMany({
      where: { agentId: scout.id },
      data: { calls: { decrement: 1 } },
    });
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
  });
});

/** One model call's ledger entry for `agent`, written straight through recordUsage. */
function entry(w: World, agent: Agent, costMicros: number): UsageEntry {
  return {
    tenantId: w.tenant.id,
    agentId: agent.id,
    ownerId: agent.ownerId,
    runId: null,
    stepNumber: 1,
    apiKeyId: null,
    model: "gpt-4o",
    // 1 output token per 10 µ$ at gpt-4o's $10 / 1M: the tokens agree with the cost.
    usage: u(0, costMicros / 10),
    latencyMs: 1,
    price: { costMicros, priced: true, version: PRICE_LIST_VERSION },
  };
}

const dollars = (micros: number) => micros / 1e6;

/** A run of `agent` that the worker `owner` holds. */
// Queued and taken in one transaction: the file's worker (startAgents) sees the run only
// once this "worker" holds its lease, so it cannot claim the run first.
async function runningRun(w: World, agent: Agent, owner: string) {
  return db().$transaction(async (tx) => {
    const run = await queueRun(tx, {
      tenantId: w.tenant.id,
      agentId: agent.id,
      initiatedById: w.alice.id,
      triggerKind: "manual",
      chainDepth: 0,
      task: "t",
      model: null,
      maxSteps: 5,
      timeoutSeconds: 60,
    });
    return tx.subagentTaskRun.update({
      where: { id: run!.id },
      data: { status: "running", leaseOwner: owner, leaseExpiresAt: new Date(Date.now() + 60_000) },
    });
  });
}
const step = (number: number) => ({
  number,
  type: "navigate" as const,
  path: "/whoami",
  detail: { ok: true },
  inputTokens: 10,
});

describe("a call recorded with its step", () => {
  it("records both in one statement; a lost lease records the call, counts it in the run, and not the step", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const run = await runningRun(w, scout, "worker-a");
    const call = { ...entry(w, scout, 700), runId: run.id };
    const first = await recordUsage(db(), call, new Date(), { owner: "worker-a", record: step(1) });
    expect(first).toMatchObject({ stepped: true, monthMicros: 700n });
    expect(first.budget).toMatchObject({ spentMicros: 700n, keyGone: false, limitMicros: 100_000_000n });
    // Step 1 again (a retried job) is refused, and so is any step by a worker without the lease.
    expect((await recordUsage(db(), call, new Date(), { owner: "worker-a", record: step(1) })).stepped).toBe(
      false,
    );
    expect((await recordUsage(db(), call, new Date(), { owner: "worker-b", record: step(2) })).stepped).toBe(
      false,
    );
    const after = await db().subagentTaskRun.findUniqueOrThrow({ where: { id: run.id } });
    expect(after).toMatchObject({ stepsCount: 1, costMicros: 2100n, outputTokens: 210 });
    expect(await db().subagentTaskRunStep.count({ where: { runId: run.id } })).toBe(1);
    expect(await db().llmUsage.count({ where: { runId: run.id } })).toBe(3);
  });
});

describe("calls recorded together (a worker's group commit)", () => {
  /** How many transactions wrote the tenant's ledger rows: rows one statement wrote share its xmin. */
  async function statements(tenantId: string) {
    const [r] = await db().$queryRaw<{ n: number }[]>`
      SELECT count(DISTINCT xmin::text)::int AS n FROM llm_usage WHERE tenant_id = ${tenantId}`;
    return r!.n;
  }

  it("many agents' calls at once share a statement, and each is recorded as if alone", async () => {
    const w = await makeWorld();
    const agents: Agent[] = [];
    for (let i = 0; i < 12; i++) agents.push(await makeAgent(w, w.alice, `crowd${i}`));
    const runs: Awaited<ReturnType<typeof runningRun>>[] = [];
    for (const a of agents) runs.push(await runningRun(w, a, "worker-a"));
    // Another worker took one run over: its call is recorded, its step is not.
    await db().subagentTaskRun.update({ where: { id: runs[5]!.id }, data: { leaseOwner: "worker-b" } });
    // Two agents spend through the same key: its totals move by both.
    const key = await createKey(db(), {
      tenantId: w.tenant.id,
      holder: { ownerId: w.alice.id },
      label: "Shared",
      provider: "openai_compatible",
      baseUrl: env.llm.url,
      key: "sk-alice-shared-0001",
    });
    const results = await Promise.all(
      agents.map((a, i) =>
        recordUsage(
          db(),
          { ...entry(w, a, 1000 * (i + 1)), runId: runs[i]!.id, apiKeyId: i < 2 ? key.id : null },
          new Date(),
          { owner: "worker-a", record: step(1) },
        ),
      ),
    );
    expect(results.map((r) => r.stepped)).toEqual(agents.map((_, i) => i !== 5));
    expect(results.map((r) => Number(r.monthMicros))).toEqual(agents.map((_, i) => 1000 * (i + 1)));
    expect(results.every((r) => !r.budget.keyGone && r.crossed === 0 && !r.paused)).toBe(true);
    // The first call went out alone (or joined one in flight); the other eleven went together.
    expect(await statements(w.tenant.id)).toBeLessThanOrEqual(2);
    const steps = await db().subagentTaskRunStep.findMany({ where: { tenantId: w.tenant.id } });
    expect(steps.map((s) => s.runId).sort()).toEqual(
      runs
        .filter((_, i) => i !== 5)
        .map((r) => r.id)
        .sort(),
    );
    expect(steps.every((s) => s.number === 1 && s.inputTokens === 10)).toBe(true);
    const counts = await db().subagentTaskRun.findMany({ where: { tenantId: w.tenant.id } });
    expect(counts.filter((r) => r.stepsCount === 1)).toHaveLength(11);
    expect(await db().agentApiKey.findUniqueOrThrow({ where: { id: key.id } })).toMatchObject({
      totalCalls: 2,
      totalCostMicros: 3000n,
    });
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
  });

  it("steps recorded together each pass their own run's gate", async () => {
    const w = await makeWorld();
    const runs: Awaited<ReturnType<typeof runningRun>>[] = [];
    for (let i = 0; i < 6; i++)
      runs.push(await runningRun(w, await makeAgent(w, w.alice, `s${i}`), "worker-a"));
    // Run 2 was taken over by another worker; run 4 has no step 1, so step 2 cannot follow.
    await db().subagentTaskRun.update({ where: { id: runs[2]!.id }, data: { leaseOwner: "worker-b" } });
    const numbers = [1, 1, 1, 1, 2, 1];
    const settled = await Promise.allSettled(
      runs.map((r, i) => recordStep(db(), r, "worker-a", step(numbers[i]!))),
    );
    expect(settled.map((s) => s.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    const recorded = await db().subagentTaskRunStep.findMany({ where: { tenantId: w.tenant.id } });
    expect(recorded.map((s) => s.runId).sort()).toEqual([0, 1, 3, 5].map((i) => runs[i]!.id).sort());
    const [r] = await db().$queryRaw<{ n: number }[]>`
      SELECT count(DISTINCT xmin::text)::int AS n FROM subagent_task_run_steps WHERE tenant_id = ${w.tenant.id}`;
    expect(r!.n).toBeLessThanOrEqual(2);
  });

  it("one agent's calls go one statement after another, each seeing the total the one before left", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", {
      model: "gpt-4o",
      alert_thresholds_usd: [0.002],
    });
    const results = await Promise.all([1, 2, 3].map(() => recordUsage(db(), entry(w, scout, 1000))));
    expect(results.map((r) => Number(r.monthMicros))).toEqual([1000, 2000, 3000]);
    // The $0.002 alert: crossed by the second call, and only by it.
    expect(results.map((r) => r.crossed)).toEqual([0, 1, 0]);
    expect(await statements(w.tenant.id)).toBe(3);
  });

  it("a call that fails, fails alone: the rest of its group is recorded", async () => {
    const w = await makeWorld();
    const agents: Agent[] = [];
    for (let i = 0; i < 4; i++) agents.push(await makeAgent(w, w.alice, `part${i}`));
    const calls = agents.map((a) => entry(w, a, 500));
    // No such agent: its row breaks a foreign key, which rolls back the whole statement.
    calls.splice(2, 0, { ...entry(w, agents[0]!, 500), agentId: "no-such-agent" });
    const settled = await Promise.allSettled(calls.map((c) => recordUsage(db(), c)));
    expect(settled.map((s) => s.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    expect(String((settled[2] as PromiseRejectedResult).reason)).toContain("foreign key");
    expect(await db().llmUsage.count({ where: { tenantId: w.tenant.id } })).toBe(4);
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
  });
});

describe("spend alerts", () => {
  it("each threshold fires exactly once, and the limit pauses once, when 40 calls land at the same instant", async () => {
    const w = await makeWorld();
    const COST = 25_000; // $0.025 a call, 40 calls: $1.00
    // Crossed by 40 calls: $0.10, $0.25, $0.50, $0.75 and $1.00 (reached exactly); $2 is not.
    const limits = { cost_limit_usd: 0.6, alert_thresholds_usd: [0.1, 0.25, 0.5, 0.75, 1, 2] };
    const busy = await makeAgent(w, w.alice, "busy", { model: "gpt-4o", ...limits });
    // The first call creates the month row, so the others all meet on its lock.
    await recordUsage(db(), entry(w, busy, COST));

    // 39 calls on 20 connections of their own, each in its own transaction, as several
    // workers' calls would be (one worker sends an agent's calls one after another). A
    // transaction holds the month row's lock until 20 of them are provably waiting for it
    // (pg_stat_activity), so they are concurrent by construction, not by luck of scheduling.
    const pool: PrismaClient = createPrisma(fileDatabaseUrl(), 20);
    let results: Awaited<ReturnType<typeof recordUsage>>[] = [];
    try {
      await pool.$queryRaw`SELECT 1`;
      let all: Promise<typeof results> | undefined;
      await db().$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT 1 FROM agent_usage_months WHERE agent_id = ${busy.id} FOR UPDATE`;
          all = Promise.all(
            Array.from({ length: 39 }, () =>
              pool.$transaction((c) => recordUsage(c, entry(w, busy, COST)), {
                maxWait: 20_000,
                timeout: 20_000,
              }),
            ),
          );
          await waitFor(async () => {
            const [r] = await db().$queryRaw<{ n: bigint }[]>`
              SELECT count(*) AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'`;
            return r!.n >= 20n;
          }, 10_000);
        },
        { timeout: 20_000 },
      );
      results = await all!;
    } finally {
      await pool.$disconnect();
    }

    // Each call saw its own total: the 39 totals are $0.05 … $1.00, every one exactly once.
    expect(results.map((r) => Number(r.monthMicros)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 39 }, (_, i) => (i + 2) * COST),
    );
    const month = await db().agentUsageMonth.findUniqueOrThrow({
      where: { agentId_month: { agentId: busy.id, month: monthOf(new Date()) } },
    });
    expect(month).toMatchObject({ calls: 40, costMicros: 1_000_000n, outputTokens: 100_000n });
    expect(await db().llmUsage.count({ where: { agentId: busy.id } })).toBe(40);

    // One event per threshold at or below the final total, each exactly once, each
    // carrying the total of the call that crossed it.
    const events = await spendEventsSettled(busy.id);
    const crossed = events
      .filter((e) => e.type === "usage.threshold")
      .map((e) => e.payload as { threshold_micros: number; spent_micros: number; month: string })
      .sort((a, b) => a.threshold_micros - b.threshold_micros);
    expect(crossed.map((p) => [dollars(p.threshold_micros), dollars(p.spent_micros)])).toEqual([
      [0.1, 0.1],
      [0.25, 0.25],
      [0.5, 0.5],
      [0.75, 0.75],
      [1, 1],
    ]);
    expect(results.reduce((n, r) => n + r.crossed, 0)).toBe(5);
    expect(crossed.every((p) => p.month === monthOf(new Date()))).toBe(true);

    // The 24th call reached the $0.60 limit: one pause, by exactly one of the calls.
    const paused = events.filter((e) => e.type === "agent.paused");
    expect(paused).toHaveLength(1);
    expect(paused[0]!.payload).toMatchObject({
      reason: "cost_limit",
      spent_micros: 600_000,
      limit_micros: 600_000,
    });
    expect(results.filter((r) => r.paused)).toHaveLength(1);
    const agent = await db().user.findUniqueOrThrow({ where: { id: busy.id } });
    expect(agent.pausedKind).toBe("cost_limit");
    expect(agent.pausedReason).toContain("$0.60");

    // The worker turned each event into exactly one notification for alice, and none for anyone else.
    const notes = await waitFor(async () => {
      const n = await spendNotifications(w.alice, busy);
      return n.length >= 6 && n;
    });
    expect(notes.map((n) => n.eventId).sort()).toEqual(events.map((e) => e.id).sort());
    expect(notes.every((n) => n.kind === "agent" && n.actorId === busy.id)).toBe(true);
    expect(notes.filter((n) => n.excerpt.includes("past your $1.00 alert"))).toHaveLength(1);
    expect(
      await db().notification.count({ where: { tenantId: w.tenant.id, userId: { not: w.alice.id } } }),
    ).toBe(0);
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
  });

  it("an agent whose run crosses an alert hears of it once, not again on the next run", async () => {
    const w = await makeWorld();
    const scribe = await makeAgent(w, w.alice, "scribe", {
      model: "gpt-4o",
      alert_thresholds_usd: [0.01, 5],
    });
    // 1000 in, 100 out on gpt-4o: 3500 µ$ a call. Run 1: 3 calls, $0.0105, past $0.01 on its last call.
    const call = (r: FakeReply) => billed(r, 1000, 100);
    const first = await scriptedRun(w, w.alice, scribe, [
      call(nav("/studios")),
      call(nav("/notifications")),
      call(finish()),
    ]);
    expect(first).toMatchObject({ status: "completed", costMicros: 10_500n });
    // Run 2: 2 calls, $0.0175 in all: past nothing new.
    const second = await scriptedRun(w, w.alice, scribe, [call(nav("/studios")), call(finish())]);
    expect(second).toMatchObject({ status: "completed", costMicros: 7000n });

    const events = await spendEventsSettled(scribe.id);
    expect(events.map((e) => [e.type, e.runId, e.payload])).toEqual([
      [
        "usage.threshold",
        first.id,
        expect.objectContaining({
          threshold_micros: 10_000,
          spent_micros: 10_500,
          limit_micros: 100_000_000,
        }),
      ],
    ]);
    // The threshold was crossed by the run's third call (step 4): that row is the one at $0.0105.
    const rows = await ledgerOf(first.id);
    expect(rows.map((r) => r.stepNumber)).toEqual([2, 3, 4]);

    const notes = await waitFor(async () => {
      const n = await spendNotifications(w.alice, scribe);
      return n.length > 0 && n;
    });
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({
      kind: "agent",
      path: "/subagents/scribe/usage",
      eventId: events[0]!.id,
    });
    expect(notes[0]!.excerpt).toContain("past your $0.01 alert");
    expect(notes[0]!.excerpt).toContain("limit $100.00");
    // Not paused: far from its $100 limit.
    expect((await db().user.findUniqueOrThrow({ where: { id: scribe.id } })).pausedAt).toBeNull();
  });
});

// 10,000 prompt tokens and 1,000 out on gpt-4o: 25,000 + 10,000 = 35,000 µ$ ($0.035) a call.
const CALL = 35_000;
const priced = (r: FakeReply) => billed(r, 10_000, 1000);

/** The agent's row: pause state and config. */
const agentRow = (a: Agent) => db().user.findUniqueOrThrow({ where: { id: a.id } });
const monthSpend = async (a: Agent) =>
  (
    await db().agentUsageMonth.findUnique({
      where: { agentId_month: { agentId: a.id, month: monthOf(new Date()) } },
    })
  )?.costMicros ?? 0n;

/** A note by alice that bob comments on, mentioning `handle`; returns once the event is processed. */
async function mention(w: World, handle: string) {
  const note = await act(w, w.alice, "/studios/general", "create_note", {
    title: "Plan",
    text: "What next?",
  });
  const text = `@${handle} can you take a look? ${newId(6)}`;
  await act(w, w.bob, note.location as string, "add_comment", { text });
  const c = await waitFor(() => db().comment.findFirst({ where: { authorId: w.bob.id, text } }));
  return processed(env, c.id);
}

describe("the monthly cost limit", () => {
  it("stops a run at the call that reaches it, pauses the agent, and holds back what was queued", async () => {
    const w = await makeWorld();
    // $0.05: the run's first call ($0.035) is under it, its second ($0.07) reaches it.
    const scout = await makeAgent(w, w.alice, "scout", {
      model: "gpt-4o",
      cost_limit_usd: 0.05,
      alert_thresholds_usd: [],
    });
    // The model would go on navigating for ever; only the limit can end this run. Its first
    // reply waits until the second run is queued, so that run was queued before the pause.
    env.llm.setScript(async (_req: ChatRequest, n: number) => {
      if (n === 0) await waitFor(async () => (await runsOf(scout.id)).length === 2);
      return priced(nav(n % 2 ? "/notifications" : "/studios"));
    });
    const first = await runTask(w, w.alice, "scout", "Keep browsing.");
    const second = await runTask(w, w.alice, "scout", "And then this.");

    const a = await ended(first);
    expect(a).toMatchObject({ status: "cancelled", stopReason: "cost_limit", costMicros: 70_000n });
    expect(a.error).toContain("$0.07 spent of $0.05");
    // Exactly two model calls, both of the first run, both in the ledger.
    expect(requestsFor(env, w)).toHaveLength(2);
    expect((await ledgerOf(first)).map((r) => [r.stepNumber, Number(r.costMicros)])).toEqual([
      [2, CALL],
      [3, CALL],
    ]);

    // The run queued before the pause never reaches the model.
    const b = await ended(second);
    expect(b).toMatchObject({ status: "cancelled", stopReason: "cost_limit", costMicros: 0n });
    expect(await db().llmUsage.count({ where: { runId: second } })).toBe(0);
    expect(requestsFor(env, w)).toHaveLength(2);

    // Overshoot is at most the one call that reached the limit.
    const spent = await monthSpend(scout);
    expect(spent).toBe(70_000n);
    expect(spent <= 50_000n + BigInt(CALL)).toBe(true);

    const row = await agentRow(scout);
    expect(row.pausedAt).not.toBeNull();
    expect(row.pausedKind).toBe("cost_limit");
    expect(row.pausedReason).toContain("monthly cost limit of $0.05");

    // One pause, one notification, though both runs met the limit.
    const events = await spendEventsSettled(scout.id);
    expect(events.map((e) => [e.type, e.runId])).toEqual([["agent.paused", first]]);
    const notes = await waitFor(async () => {
      const n = await spendNotifications(w.alice, scout);
      return n.length > 0 && n;
    });
    expect(notes).toHaveLength(1);
    expect(notes[0]!.excerpt).toContain(
      "was paused: it reached its monthly cost limit ($0.07 spent of $0.05",
    );

    // While paused, a mention is recorded as a skipped run, and the run form refuses.
    await mention(w, "scout");
    const runs = await runsOf(scout.id);
    expect(runs.map((r) => [r.triggerKind, r.status])).toEqual([
      ["manual", "cancelled"],
      ["manual", "cancelled"],
      ["mention", "skipped"],
    ]);
    expect(runs[2]!.error).toContain("monthly cost limit");
    const refused = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: "Try again",
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toContain("monthly cost limit");
    expect(await runsOf(scout.id)).toHaveLength(3);
    expect(requestsFor(env, w)).toHaveLength(2);
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
  });

  it("a limit raised while a call is in flight is the limit that call is held to", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", {
      model: "gpt-4o",
      cost_limit_usd: 0.05,
      alert_thresholds_usd: [],
    });
    // During the run's second call (which takes spend from $0.035 to $0.07), alice raises
    // the limit to $1: the call is within the new limit, so nothing pauses.
    env.llm.setScript(async (_req: ChatRequest, n: number) => {
      if (n === 1) {
        const res = await act(w, w.alice, "/subagents/scout/usage", "set_cost_limit", {
          monthly_limit_usd: 1,
        });
        expect(res.status).toBe(200);
      }
      return priced(n < 2 ? nav("/studios") : finish());
    });
    const run = await ended(await runTask(w, w.alice, "scout"));
    expect(run).toMatchObject({ status: "completed", costMicros: 105_000n });
    const row = await agentRow(scout);
    expect([row.pausedAt, row.pausedKind, row.pausedReason]).toEqual([null, null, null]);
    expect(await spendEventsSettled(scout.id)).toEqual([]);
    // The ledger reads the limit from the agent's row when it records a call, so the old
    // $0.05 the run started with pauses nothing…
    expect((await recordUsage(db(), entry(w, scout, 1000))).paused).toBe(false);
    expect((await agentRow(scout)).pausedAt).toBeNull();
    // …while the current $1 does, when reached.
    expect((await recordUsage(db(), entry(w, scout, 1_000_000))).paused).toBe(true);
    await md(app, w, w.alice, "POST", "/subagents/scout/usage/actions/set_cost_limit", {
      monthly_limit_usd: 5,
    });
    // And it still runs when mentioned.
    env.llm.setScript([priced(finish())]);
    const out = await mention(w, "scout");
    expect(out.runs).toHaveLength(1);
    expect(await ended(out.runs[0]!)).toMatchObject({ status: "completed" });
  });

  it("an alert added while a call is in flight fires for that call", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o", alert_thresholds_usd: [] });
    // Spend is $0.035 when alice asks to hear at $0.05, during the call that takes it to $0.07.
    env.llm.setScript(async (_req: ChatRequest, n: number) => {
      if (n === 1) {
        const res = await act(w, w.alice, "/subagents/scout/usage", "set_cost_limit", {
          monthly_limit_usd: 100,
          alert_thresholds_usd: "0.05",
        });
        expect(res.status).toBe(200);
      }
      return priced(n < 2 ? nav("/studios") : finish());
    });
    const run = await ended(await runTask(w, w.alice, "scout"));
    expect(run).toMatchObject({ status: "completed", costMicros: 105_000n });
    // Later calls start above $0.05, so this call was the only one that could tell her.
    const events = await spendEventsSettled(scout.id);
    expect(events.map((e) => [e.type, e.payload])).toEqual([
      ["usage.threshold", expect.objectContaining({ threshold_micros: 50_000, spent_micros: 70_000 })],
    ]);
  });

  it("resuming is refused while over the limit; raising the limit resumes; lowering it stops the next run before any call", async () => {
    const w = await makeWorld();
    const limits = { cost_limit_usd: 0.05, alert_thresholds_usd: [] };
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o", ...limits });
    // $0.07 of a $0.05 limit, recorded by the ledger itself, which pauses the agent.
    expect((await recordUsage(db(), entry(w, scout, 70_000))).paused).toBe(true);
    expect((await agentRow(scout)).pausedKind).toBe("cost_limit");

    // Resuming would only pause it again: refused, saying what to do instead.
    for (const page of ["/subagents/scout", "/subagents/scout/usage"]) {
      const res = await md(app, w, w.alice, "POST", `${page}/actions/resume_subagent`, {});
      expect(res.statusCode, res.body).toBe(409);
      expect(res.body).toContain("$0.07 of its $0.05 limit");
      expect(res.body).toContain("raise the limit");
    }
    expect((await agentRow(scout)).pausedAt).not.toBeNull();

    // A limit still at or under the spend keeps it paused.
    const same = await md(app, w, w.alice, "POST", "/subagents/scout/usage/actions/set_cost_limit", {
      monthly_limit_usd: 0.07,
    });
    expect(same.statusCode, same.body).toBe(200);
    expect(same.body).toContain("stays paused");
    expect((await agentRow(scout)).pausedKind).toBe("cost_limit");

    // Raising it past the spend lifts the limit's pause, and a run completes.
    const raised = await md(app, w, w.alice, "POST", "/subagents/scout/usage/actions/set_cost_limit", {
      monthly_limit_usd: 0.2,
      alert_thresholds_usd: "0.1, $0.15",
    });
    expect(raised.statusCode, raised.body).toBe(200);
    expect(raised.body).toContain("running again");
    const row = await agentRow(scout);
    expect([row.pausedAt, row.pausedKind, row.pausedReason]).toEqual([null, null, null]);
    expect(row.agentConfig).toMatchObject({ cost_limit_usd: 0.2, alert_thresholds_usd: [0.1, 0.15] });
    const ok = await scriptedRun(w, w.alice, scout, [priced(nav("/studios")), priced(finish())]);
    expect(ok).toMatchObject({ status: "completed", costMicros: 70_000n });
    expect(await monthSpend(scout)).toBe(140_000n); // past the new $0.10 alert, not the limit
    expect((await agentRow(scout)).pausedAt).toBeNull();

    // Lowered below the spend: the next run stops at its first check, before any model call.
    const lowered = await md(app, w, w.alice, "POST", "/subagents/scout/usage/actions/set_cost_limit", {
      monthly_limit_usd: 0.1,
    });
    expect(lowered.statusCode, lowered.body).toBe(200);
    const calls = requestsFor(env, w).length;
    env.llm.setScript([priced(finish())]);
    const stopped = await ended(await runTask(w, w.alice, "scout"));
    expect(stopped).toMatchObject({ status: "cancelled", stopReason: "cost_limit", costMicros: 0n });
    expect(stopped.error).toContain("$0.14 spent of $0.10");
    expect(requestsFor(env, w)).toHaveLength(calls);
    const again = await agentRow(scout);
    expect(again.pausedKind).toBe("cost_limit");
    expect(again.pausedReason).toContain("monthly cost limit of $0.10");
    // The alerts the owner set still apply: $0.10 crossed once; and each pause was announced.
    const events = await spendEventsSettled(scout.id);
    expect(events.map((e) => e.type)).toEqual(["agent.paused", "usage.threshold", "agent.paused"]);
    // (crossed by the run's first call: $0.07 + $0.035)
    expect(events[1]!.payload).toMatchObject({ threshold_micros: 100_000, spent_micros: 105_000 });
    expect(await waitFor(async () => (await spendNotifications(w.alice, scout)).length === 3 || null)).toBe(
      true,
    );
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
  });

  it("an owner's own pause is not lifted by a limit change", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o", cost_limit_usd: 0.05 });
    const pause = await md(app, w, w.alice, "POST", "/subagents/scout/actions/pause_subagent", {
      reason: "on holiday",
    });
    expect(pause.statusCode, pause.body).toBe(200);
    const res = await md(app, w, w.alice, "POST", "/subagents/scout/usage/actions/set_cost_limit", {
      monthly_limit_usd: 50,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).not.toContain("running again");
    const row = await agentRow(scout);
    expect(row.pausedAt).not.toBeNull();
    expect([row.pausedKind, row.pausedReason]).toEqual(["owner", "on holiday"]);
    expect(row.agentConfig).toMatchObject({ cost_limit_usd: 50 });
    // Its owner resumes it the ordinary way: the limit has nothing to do with it.
    const resumed = await md(app, w, w.alice, "POST", "/subagents/scout/actions/resume_subagent", {});
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect((await agentRow(scout)).pausedAt).toBeNull();
  });

  it("refuses a bad limit or bad alerts, naming the field, and lets only the owner set them", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o" });
    const set = (who: Person, body: Record<string, unknown>) =>
      md(app, w, who, "POST", "/subagents/scout/usage/actions/set_cost_limit", body);

    const negative = await set(w.alice, { monthly_limit_usd: -1 });
    expect(negative.statusCode).toBe(400);
    expect(negative.body).toContain("monthly_limit_usd");
    const words = await set(w.alice, { monthly_limit_usd: 5, alert_thresholds_usd: "abc" });
    expect(words.statusCode).toBe(400);
    expect(words.body).toContain("alert_thresholds_usd");
    expect(words.body).toContain("abc");
    const zero = await set(w.alice, { monthly_limit_usd: 5, alert_thresholds_usd: "1, 0" });
    expect(zero.statusCode).toBe(400);
    expect(zero.body).toContain("alert_thresholds_usd");
    const tooMany = await set(w.alice, {
      monthly_limit_usd: 5,
      alert_thresholds_usd: "1,2,3,4,5,6,7,8,9,10,11",
    });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.body).toContain("at most 10");
    // Bob is not its owner.
    const bob = await set(w.bob, { monthly_limit_usd: 5000 });
    expect([403, 404]).toContain(bob.statusCode);
    // Nothing changed: the defaults still apply.
    expect((await agentRow(scout)).agentConfig).not.toHaveProperty("cost_limit_usd");
    const budget = await readBudget(db(), scout.id);
    expect([budget.cfg.cost_limit_usd, budget.cfg.alert_thresholds_usd]).toEqual([100, [1, 5, 10, 50]]);
    // An amount no month could reach is a typo, not an alert: refused, not stored to break every later call.
    const huge = await set(w.alice, { monthly_limit_usd: 5, alert_thresholds_usd: "1, 1e300" });
    expect(huge.statusCode).toBe(400);
    expect(huge.body).toContain("alert_thresholds_usd");
    // Duplicates and order do not matter: each amount alerts once.
    const dupes = await set(w.alice, { monthly_limit_usd: 5, alert_thresholds_usd: "$2, 1, 2, 1.5" });
    expect(dupes.statusCode, dupes.body).toBe(200);
    expect((await agentRow(scout)).agentConfig).toMatchObject({
      cost_limit_usd: 5,
      alert_thresholds_usd: [1, 1.5, 2],
    });
  });
});

describe("alert amounts", () => {
  it("the form can clear every alert, and an API caller can too", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o" });
    const browser = await login(app, w, w.alice);
    // A form leaves an emptied field out, which keeps the alerts as they were: the
    // field's help says to write `none`, and that clears them.
    const page = await browser.get("/subagents/scout/usage");
    expect(page.body).toContain("no alerts");
    const res = await browser.post("/subagents/scout/usage/actions/set_cost_limit", {
      monthly_limit_usd: "12.5",
      alert_thresholds_usd: "none",
    });
    expect(res.statusCode, res.body).toBe(303);
    expect((await agentRow(scout)).agentConfig).toMatchObject({
      cost_limit_usd: 12.5,
      alert_thresholds_usd: [],
    });
    // No alerts: crossing $1, $5… notifies nobody.
    await recordUsage(db(), entry(w, scout, 6_000_000));
    expect(await spendEventsSettled(scout.id)).toEqual([]);
    // Over the API an empty string means none as well.
    await md(app, w, w.alice, "POST", "/subagents/scout/usage/actions/set_cost_limit", {
      monthly_limit_usd: 20,
      alert_thresholds_usd: "7",
    });
    expect((await agentRow(scout)).agentConfig).toMatchObject({ alert_thresholds_usd: [7] });
    const api = await md(app, w, w.alice, "POST", "/subagents/scout/usage/actions/set_cost_limit", {
      monthly_limit_usd: 20,
      alert_thresholds_usd: "",
    });
    expect(api.statusCode, api.body).toBe(200);
    expect((await agentRow(scout)).agentConfig).toMatchObject({ alert_thresholds_usd: [] });
  });

  it("an alert amount too large to count in micro-dollars does not stop the ledger", async () => {
    // Written before amounts were checked, or by hand: the call must still be recorded and
    // the run carry on, with the sane amounts still alerting.
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", {
      model: "gpt-4o",
      alert_thresholds_usd: [0.01, 1e300],
    });
    const run = await scriptedRun(w, w.alice, scout, [priced(finish())]);
    expect(run).toMatchObject({ status: "completed", costMicros: 35_000n });
    expect(await ledgerOf(run.id)).toHaveLength(1);
    const events = await spendEventsSettled(scout.id);
    expect(events.map((e) => (e.payload as { threshold_micros: number }).threshold_micros)).toEqual([10_000]);
  });
});

describe("months", () => {
  it("spend recorded in the previous month stays in that month and does not count toward this one", async () => {
    const w = await makeWorld();
    const limits = { cost_limit_usd: 1, alert_thresholds_usd: [0.5] };
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o", ...limits });
    const now = new Date();
    const startOfMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const lastOfPrevious = new Date(startOfMonth - 1); // 23:59:59.999 UTC on the previous month's last day
    const previous = monthOf(lastOfPrevious);
    const current = monthOf(now);
    expect(previous).not.toBe(current);

    // $0.90 at the last millisecond of the previous month: its row, its $0.50 alert.
    await recordUsage(db(), entry(w, scout, 900_000), lastOfPrevious);
    expect((await readBudget(db(), scout.id)).spentMicros).toBe(0n);
    expect((await readBudget(db(), scout.id, null, lastOfPrevious)).spentMicros).toBe(900_000n);

    // $0.20 at the first millisecond of this month, then $0.40 now: this month is $0.60,
    // its own $0.50 alert fires, and $1.50 over two months pauses nothing.
    await recordUsage(db(), entry(w, scout, 200_000), new Date(startOfMonth));
    expect((await readBudget(db(), scout.id)).spentMicros).toBe(200_000n);
    await recordUsage(db(), entry(w, scout, 400_000));
    const budget = await readBudget(db(), scout.id);
    expect([budget.spentMicros, budget.limitMicros]).toEqual([600_000n, 1_000_000n]);

    const months = await db().agentUsageMonth.findMany({
      where: { agentId: scout.id },
      orderBy: { month: "asc" },
    });
    expect(months.map((m) => [m.month, m.calls, m.costMicros])).toEqual([
      [previous, 1, 900_000n],
      [current, 2, 600_000n],
    ]);
    const rows = await db().llmUsage.findMany({
      where: { agentId: scout.id },
      orderBy: { createdAt: "asc" },
    });
    expect(rows[0]!.createdAt.toISOString()).toBe(lastOfPrevious.toISOString());
    const events = await spendEventsSettled(scout.id);
    const byMonth = events.map((e) => [e.type, (e.payload as { month: string }).month]).sort();
    expect(byMonth).toEqual([
      ["usage.threshold", previous],
      ["usage.threshold", current],
    ]);
    expect((await agentRow(scout)).pausedAt).toBeNull();
    expect(await ledgerMismatches(w.tenant.id)).toEqual([]);
  });

  it("a call's day and month are UTC whatever the database session's time zone", async () => {
    const w = await makeWorld();
    const limits = { cost_limit_usd: 100, alert_thresholds_usd: [] };
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o", ...limits });
    const now = new Date();
    const lastOfPrevious = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) - 60_000);
    // A session at UTC+14 (where it is already the next day) and one at UTC-10.
    for (const zone of ["Pacific/Kiritimati", "Pacific/Honolulu"])
      await db().$transaction(async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL TIME ZONE '${zone}'`);
        await recordUsage(tx, entry(w, scout, 1000), lastOfPrevious);
      });
    const rows = await db().llmUsage.findMany({ where: { agentId: scout.id } });
    expect(rows.map((r) => r.createdAt.toISOString())).toEqual([
      lastOfPrevious.toISOString(),
      lastOfPrevious.toISOString(),
    ]);
    const daily = await db().llmUsageDaily.findMany({ where: { agentId: scout.id } });
    expect(daily.map((d) => [d.day.toISOString().slice(0, 10), d.calls])).toEqual([
      [lastOfPrevious.toISOString().slice(0, 10), 2],
    ]);
    expect(await db().agentUsageMonth.findMany({ where: { agentId: scout.id } })).toMatchObject([
      { month: monthOf(lastOfPrevious), calls: 2, costMicros: 2000n },
    ]);
  });
});

describe("a new month", () => {
  it("lifts last month's limit pauses, telling the owner once, and leaves this month's and owners' pauses", async () => {
    const w = await makeWorld();
    const [lastMonth, thisMonth, byOwner] = await Promise.all([
      makeAgent(w, w.alice, "lastmonth"),
      makeAgent(w, w.alice, "thismonth"),
      makeAgent(w, w.alice, "byowner"),
    ]);
    const now = new Date();
    const previous = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) - 3_600_000);
    const pause = (a: Agent, at: Date, kind: string) =>
      db().user.update({
        where: { id: a.id },
        data: {
          pausedAt: at,
          pausedKind: kind,
          pausedReason: kind === "owner" ? "mine" : "reached its limit",
        },
      });
    await Promise.all([
      pause(lastMonth, previous, "cost_limit"),
      pause(thisMonth, now, "cost_limit"),
      pause(byOwner, previous, "owner"),
    ]);
    // The maintenance worker runs it on every sweep, racing these direct calls: whoever
    // lifts the pause, it is lifted once (one event), and a later call finds nothing.
    await Promise.all([liftLastMonthsPauses(db(), now), liftLastMonthsPauses(db(), now)]);
    expect(await liftLastMonthsPauses(db(), now)).toBe(0);
    expect((await agentRow(lastMonth)).pausedAt).toBeNull();
    expect((await agentRow(thisMonth)).pausedKind).toBe("cost_limit");
    expect((await agentRow(byOwner)).pausedKind).toBe("owner");
    const events = await db().event.findMany({ where: { subjectId: lastMonth.id, type: "agent.resumed" } });
    expect(events).toHaveLength(1);
    const notes = await waitFor(async () => {
      const n = await spendNotifications(w.alice, lastMonth);
      return n.length ? n : null;
    }, 10_000);
    expect(notes.map((n) => n.excerpt)).toEqual([
      `runs again: a new month (${monthOf(now)}) began, and its cost limit counts from zero.`,
    ]);
  });
});

describe("the whole database", () => {
  // Last in the file: every run, key, month, day and tenant any test above wrote.
  it("every total equals the sum of its ledger rows", async () => {
    expect(await db().llmUsage.count()).toBeGreaterThan(0);
    expect(await ledgerMismatches()).toEqual([]);
  });
});
