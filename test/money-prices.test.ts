// Workspace prices: who may set or remove an override, what the pricing page shows, and an
// override pricing the next real LLM call (a worker and the fake model). Real Postgres.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tenantSettings } from "../src/services/agents/core/settings.ts";
import { PRICE_LIST_VERSION, priceCall } from "../src/services/money/pricing.ts";
import { type AgentEnv, makeAgent, startAgents, tool } from "./helpers/agents.ts";
import {
  actionNames,
  buildTestApp,
  login,
  makeWorld,
  md,
  type Person,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import { pageBody, section, tableRows } from "./helpers/sections.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app?.close();
});

const db = testPrisma;
const body = (w: World, who: Person, url: string) => pageBody(app, w, who, url);

describe("workspace prices", () => {
  const USAGE = { input: 1000, cached: 200, output: 100 };
  const settingsOf = async (w: World) =>
    tenantSettings(await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } }));
  const price = (w: World, who: Person, params: Record<string, unknown>) =>
    md(app, w, who, "POST", "/usage/pricing/actions/set_model_price", params);
  const remove = (w: World, who: Person, model: string) =>
    md(app, w, who, "POST", "/usage/pricing/actions/remove_model_price", { model });

  it("only a workspace admin may set or remove one", async () => {
    const w = await makeWorld();
    const page = await body(w, w.alice, "/usage/pricing");
    expect(page).toContain("_None: the built-in list applies._");
    expect(page).toContain("| `gpt-4o-mini` | $0.15 | $0.075 | $0.15 | $0.6 |");
    expect(actionNames(page)).toEqual([]);
    const res = await price(w, w.alice, { model: "acme_llm-1", input: 1, cached_input: 1, output: 1 });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("only workspace admins set prices");
    expect((await remove(w, w.alice, "gpt-4o")).statusCode).toBe(403);
    expect((await settingsOf(w)).pricing).toEqual({});
  });

  it("an admin prices an unlisted model: listed, and priceCall now charges for it; removing it undoes that", async () => {
    const w = await makeWorld();
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    expect(priceCall("acme_llm-1", USAGE, (await settingsOf(w)).pricing)).toMatchObject({
      priced: false,
      costMicros: 0,
    });

    const res = await price(w, w.carol, { model: "acme_llm-1", input: 2, cached_input: 0.5, output: 8 });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Priced acme_llm-1 for this workspace");
    expect(actionNames(res.body)).toEqual(["set_model_price", "remove_model_price"]);
    expect(section(res.body, "This workspace's prices")).toContain(
      "| `acme_llm-1` | $2 | $0.5 | $2.5 | $8 |",
    );
    // 800 uncached × $2 + 200 cached × $0.50 + 100 out × $8, per million: micro-dollars.
    const pricing = (await settingsOf(w)).pricing;
    expect(priceCall("acme_llm-1", USAGE, pricing)).toEqual({
      costMicros: 2_500,
      priced: true,
      version: `${PRICE_LIST_VERSION}+tenant`,
    });
    expect(priceCall("acme_llm-1-2026-01-15", USAGE, pricing).priced).toBe(true);
    // Another workspace's calls are not priced by it.
    const other = await makeWorld("x");
    expect(priceCall("acme_llm-1", USAGE, (await settingsOf(other)).pricing).priced).toBe(false);

    // The same model in other letters is the same price: replaced, not listed twice.
    expect(
      (await price(w, w.carol, { model: "ACME_LLM-1", input: 3, cached_input: 0.5, output: 8 })).statusCode,
    ).toBe(200);
    expect(Object.keys((await settingsOf(w)).pricing)).toEqual(["ACME_LLM-1"]);
    expect(priceCall("acme_llm-1", USAGE, (await settingsOf(w)).pricing).costMicros).toBe(
      800 * 3 + 100 + 800,
    );

    const removed = await remove(w, w.carol, "acme_llm-1");
    expect(removed.statusCode).toBe(200);
    expect(removed.body).toContain("_None: the built-in list applies._");
    expect(priceCall("acme_llm-1", USAGE, (await settingsOf(w)).pricing)).toMatchObject({
      priced: false,
      costMicros: 0,
    });
    expect((await remove(w, w.carol, "acme_llm-1")).statusCode).toBe(404);
  });

  it("an override of a built-in model wins over the list; a browser form sets one too", async () => {
    const w = await makeWorld();
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    const browser = await login(app, w, w.carol);
    const res = await browser.post("/usage/pricing/actions/set_model_price", {
      model: "gpt-4o",
      input: "1",
      cached_input: "0",
      output: "1",
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/usage/pricing");
    expect(priceCall("gpt-4o-2024-08-06", USAGE, (await settingsOf(w)).pricing)).toMatchObject({
      costMicros: 800 + 100,
      version: `${PRICE_LIST_VERSION}+tenant`,
    });
    // The list price is untouched for everyone else.
    expect(priceCall("gpt-4o", USAGE).costMicros).toBe(800 * 2.5 + 200 * 1.25 + 100 * 10);
  });

  it("bad input: 400 naming every bad field; odd names neither stored nor 'removed'", async () => {
    const w = await makeWorld();
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    const bad = await price(w, w.carol, {
      model: "bad model!",
      input: -1,
      cached_input: "lots",
      output: 20_000,
    });
    expect(bad.statusCode).toBe(400);
    for (const field of ["model", "input", "cached_input", "output"])
      expect(bad.body).toContain(`\`${field}\``);
    const missing = await price(w, w.carol, { model: "m", input: 1, cached_input: 1 });
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("`output`");
    expect(missing.body).not.toContain("`input`");
    // `__proto__` would be answered "priced" and then vanish from the stored settings.
    const proto = await price(w, w.carol, { model: "__proto__", input: 1, cached_input: 1, output: 1 });
    expect(proto.statusCode).toBe(400);
    expect(proto.body).toContain("`model`");
    // Names every object has (`constructor`, `toString`) are no workspace price.
    for (const model of ["constructor", "toString", "__proto__", "gpt-4o"]) {
      const res = await remove(w, w.carol, model);
      expect(res.statusCode, model).toBe(model === "__proto__" ? 400 : 404);
    }
    expect((await settingsOf(w)).pricing).toEqual({});
  });

  it("a cache-write price is optional: set, it prices cache writes and shows; unset, writes cost 1.25 × input", async () => {
    const w = await makeWorld();
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    const p = { input: 2, cached_input: 0.2, output: 10 };
    await price(w, w.carol, { model: "house-claude", ...p, cache_write_input: 2.5 });
    await price(w, w.carol, { model: "house-gpt", ...p });
    const pricing = (await settingsOf(w)).pricing;
    expect(pricing).toEqual({ "house-claude": { ...p, cache_write_input: 2.5 }, "house-gpt": p });
    // 1000 input of which 300 read from the cache and 500 written to it, 100 out.
    const usage = { input: 1000, cached: 300, cacheWrite: 500, output: 100 };
    expect(priceCall("house-claude", usage, pricing).costMicros).toBe(
      200 * 2 + 300 * 0.2 + 500 * 2.5 + 100 * 10,
    );
    // Unset: the surcharge every provider that reports writes charges (Anthropic, OpenAI from GPT-5.6 on).
    expect(priceCall("house-gpt", usage, pricing).costMicros).toBe(
      200 * 2 + 300 * 0.2 + 500 * 2.5 + 100 * 10,
    );
    // A listed OpenAI model before GPT-5.6 bills a write as input; GPT-5.6's at 1.25 ×.
    expect(priceCall("gpt-4.1", usage).costMicros).toBe(700 * 2 + 300 * 0.5 + 100 * 8);
    expect(priceCall("gpt-5.6-terra", usage).costMicros).toBe(
      Math.round(200 * 2.5 + 300 * 0.25 + 500 * 3.125 + 100 * 15),
    );
    const page = await body(w, w.carol, "/usage/pricing");
    expect(page).toContain("| `house-claude` | $2 | $0.2 | $2.5 | $10 |");
    expect(page).toContain("| `claude-sonnet-4-5` | $3 | $0.3 | $3.75 | $15 |");
  });

  it("an underscore in a model id shows as written on the price list", async () => {
    const w = await makeWorld();
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    await price(w, w.carol, { model: "my_house_model", input: 1, cached_input: 0.1, output: 2 });
    const page = await body(w, w.carol, "/usage/pricing");
    expect(page).toContain("| `my_house_model` | $1 | $0.1 | $1.25 | $2 |");
    const html = (await (await login(app, w, w.carol)).get("/usage/pricing")).body;
    expect(html).toContain("<code>my_house_model</code>");
  });
});

describe("an override prices the next real LLM call", () => {
  let env: AgentEnv;
  beforeAll(async () => {
    env = await startAgents("money-dashboard");
  });
  afterAll(async () => {
    await env?.close();
  });

  it("unpriced before, priced at the workspace rate after, unpriced again once removed", async () => {
    const w = await makeWorld();
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    await makeAgent(w, w.alice, "pricey", { model: "acme_llm-1" });
    env.llm.setScript(() => ({
      ...tool("finish", { message: "done" }),
      usage: { prompt_tokens: 1000, completion_tokens: 100, cached_tokens: 200 },
    }));
    const run = async () => {
      const res = await md(app, w, w.alice, "POST", "/subagents/pricey/run/actions/run_task", { task: "Go" });
      expect(res.statusCode).toBe(201);
      const id = String(res.headers.location).split("/").pop()!;
      const done = await waitFor(async () => {
        const r = await db().subagentTaskRun.findUniqueOrThrow({ where: { id } });
        return ["completed", "failed", "cancelled", "timed_out"].includes(r.status) && r;
      }, 10_000);
      expect(done.status).toBe("completed");
      return db().llmUsage.findMany({ where: { runId: id } });
    };
    const [first] = await run();
    expect(first).toMatchObject({ model: "acme_llm-1", priced: false, costMicros: 0n });

    await md(app, w, w.carol, "POST", "/usage/pricing/actions/set_model_price", {
      model: "acme_llm-1",
      input: 2,
      cached_input: 0.5,
      output: 8,
    });
    const [second] = await run();
    expect(second).toMatchObject({
      priced: true,
      costMicros: 2_500n,
      pricingVersion: `${PRICE_LIST_VERSION}+tenant`,
    });

    await md(app, w, w.carol, "POST", "/usage/pricing/actions/remove_model_price", { model: "acme_llm-1" });
    const [third] = await run();
    expect(third).toMatchObject({ priced: false, costMicros: 0n });

    // The dashboard: one priced call at $0.0025, two flagged ones.
    const page = await body(w, w.alice, "/subagents/pricey/usage");
    expect(tableRows(page, "By model")).toEqual([
      "| ⚠ `acme_llm-1` (no price: counted as $0) | 3 | 3,000 | 600 (20 %) | 300 | $0.0025 |",
    ]);
  });
});
