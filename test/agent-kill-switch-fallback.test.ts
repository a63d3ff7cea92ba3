// The workspace's kill switch and an agent's fallback models, on the real stack: workers on
// Redis, Postgres, and the fake model over HTTP. Off, a running run stops at its next step
// and every trigger is recorded as a skipped run saying why; a model the provider does not
// have (404), one that refuses the key for it (401, 403), or one still failing with 5xx
// after the retries, hands the step to the next fallback, and the ledger, the step and the
// run page name the model that answered.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENTS_OFF } from "../src/services/agents/core/kill-switch.ts";
import { commentBy, processed, runIdOf, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, runsOf, startAgents, tool } from "./helpers/agents.ts";
import { act, buildTestApp, makeWorld, md, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { addSchedule, makeDue } from "./helpers/schedules.ts";
import { createHook, send } from "./helpers/webhooks.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("killswitch");
});
afterAll(async () => {
  env.llm.setMissingModels([]);
  await env.close();
  await app.close();
});

const db = testPrisma;
const ENDED = ["completed", "failed", "cancelled", "timed_out", "skipped"];

async function adminWorld() {
  const w = await makeWorld("ks");
  await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
  return w;
}

const switchAgents = (w: World, agents: "on" | "off") =>
  md(app, w, w.alice, "POST", "/settings/agents/actions/set_agents_enabled", { agents });

async function runTask(w: World, handle: string, task = "Look around") {
  const res = await md(app, w, w.alice, "POST", `/subagents/${handle}/run/actions/run_task`, { task });
  expect(res.statusCode, res.body).toBe(201);
  return runIdOf(String(res.headers.location));
}

/** A promise the test opens: the fake model holds a call on it until the switch is off. */
function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

const ended = (id: string) =>
  waitFor(() => db().subagentTaskRun.findFirst({ where: { id, status: { in: ENDED as never } } }), 15_000);

describe("the kill switch", () => {
  it("stops a running run at its next step, and records every trigger while off as a skipped run saying why", async () => {
    const w = await adminWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    let calls = 0;
    // The first call is answered only once agents are switched off, however slow the machine.
    const off = gate();
    env.llm.setScript(async (_req, n) => {
      calls++;
      if (n > 0) return tool("finish", { message: "done" });
      await off.opened;
      return tool("navigate", { path: "/studios/general" });
    });
    const id = await runTask(w, "scout");
    await waitFor(async () => calls >= 1 || null, 10_000);
    expect((await switchAgents(w, "off")).statusCode).toBe(200);
    off.open();
    const run = await ended(id);
    expect(run).toMatchObject({ status: "cancelled", stopReason: AGENTS_OFF });
    expect(run.error).toContain("Agents are switched off in this workspace");
    // The step in flight was recorded (its call was spent); no call followed it.
    expect((await stepsOf(id)).map((s) => s.type)).toEqual(["navigate", "navigate"]);
    expect(calls).toBe(1);

    // Triggers while off: a mention, a webhook delivery's twin (the run form is refused outright).
    const note = await act(w, w.bob, "/studios/general", "create_note", { title: "Q", text: "Hi" });
    await act(w, w.bob, note.location, "add_comment", { text: "@scout can you look?" });
    const c = await commentBy(w.bob.id, "@scout can you look?");
    expect((await processed(env, c.id)).runs).toEqual([]);
    const skipped = (await runsOf(scout.id)).filter((r) => r.status === "skipped");
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ triggerKind: "mention", stopReason: AGENTS_OFF });
    expect(skipped[0]!.error).toContain("Agents are switched off");
    // Bob is told why it did not answer, linked to the skipped run.
    const notice = await waitFor(() =>
      db().notification.findFirst({ where: { userId: w.bob.id, excerpt: { contains: "switched off" } } }),
    );
    expect(notice.excerpt).toContain("agents are switched off in this workspace");
    const form = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", { task: "x" });
    expect(form.statusCode).toBe(403);
    expect(form.body).toContain("agents are switched off in this workspace");
    expect(calls).toBe(1);

    // On again: the next mention starts a run that completes.
    env.llm.setScript([tool("finish", { message: "on it" })]);
    await switchAgents(w, "on");
    await act(w, w.bob, note.location, "add_comment", { text: "@scout now?" });
    const again = await commentBy(w.bob.id, "@scout now?");
    const [runId] = (await processed(env, again.id)).runs;
    expect(await ended(runId!)).toMatchObject({ status: "completed" });
  });

  it("a run still queued when the switch goes off ends before its first step", async () => {
    const w = await adminWorld();
    await makeAgent(w, w.alice, "scout");
    let calls = 0;
    const off = gate();
    env.llm.setScript(async () => {
      calls++;
      await off.opened;
      return tool("navigate", { path: "/studios/general" });
    });
    // One running run per agent: the second waits, queued, behind the first.
    const first = await runTask(w, "scout", "first");
    await waitFor(async () => calls >= 1 || null, 10_000);
    const second = await runTask(w, "scout", "second");
    await switchAgents(w, "off");
    off.open();
    expect(await ended(first)).toMatchObject({ status: "cancelled", stopReason: AGENTS_OFF });
    expect(await ended(second)).toMatchObject({ status: "cancelled", stopReason: AGENTS_OFF });
    expect(await stepsOf(second)).toEqual([]);
    expect(calls).toBe(1);
  });
});

describe("the kill switch and triggers with limits of their own", () => {
  it("a schedule's slot and an inbound webhook's delivery while off are skipped runs saying why", async () => {
    const w = await adminWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const schedule = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "Morning digest" });
    const hook = await createHook(app, w, w.alice, "scout", { name: "CI" });
    let calls = 0;
    env.llm.setScript(() => {
      calls++;
      return tool("finish", { message: "done" });
    });
    expect((await switchAgents(w, "off")).statusCode).toBe(200);

    // The maintenance sweep fires the due slot: recorded, skipped, and the schedule moves on.
    await makeDue(schedule.id, 60_000);
    const slot = await waitFor(
      async () => (await runsOf(scout.id)).find((r) => r.triggerKind === "schedule"),
      10_000,
    );
    expect(slot).toMatchObject({ status: "skipped", stopReason: AGENTS_OFF });
    expect(slot.error).toContain("Agents are switched off in this workspace");
    const moved = await db().agentSchedule.findUniqueOrThrow({ where: { id: schedule.id } });
    expect(moved.nextFireAt!.getTime()).toBeGreaterThan(Date.now());

    // A signed delivery is accepted (the sender did nothing wrong) and its run skipped.
    const res = await send(app, w, hook.id, '{"ref":"main"}', { secret: hook.secret, delivery: "d-1" });
    expect(res.statusCode, res.body).toBe(202);
    const delivered = await db().subagentTaskRun.findUniqueOrThrow({
      where: { id: JSON.parse(res.body).run },
    });
    expect(delivered).toMatchObject({ triggerKind: "webhook", status: "skipped", stopReason: AGENTS_OFF });

    // Nothing reached the model; both are on the agent's runs page, saying why.
    await new Promise((r) => setTimeout(r, 600));
    expect(calls).toBe(0);
    expect((await runsOf(scout.id)).map((r) => r.status)).toEqual(["skipped", "skipped"]);
    const page = await md(app, w, w.alice, "GET", "/subagents/scout/runs");
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/\*\*skipped\*\* \(agents_disabled\) · \[webhook\]/);
    expect(page.body).toMatch(/\*\*skipped\*\* \(agents_disabled\) · \[schedule\]/);
  });
});

describe("the workspace's trigger rate", () => {
  it("skips a trigger over the workspace's rate, whichever agent it wakes, saying so", async () => {
    const w = await adminWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const other = await makeAgent(w, w.alice, "other");
    env.llm.setScript(() => tool("finish", { message: "done" }));
    const set = await md(app, w, w.alice, "POST", "/settings/agents/actions/set_agent_limits", {
      workspace_trigger_rate_per_minute: 1,
    });
    expect(set.statusCode, set.body).toBe(200);
    const note = await act(w, w.bob, "/studios/general", "create_note", { title: "Q", text: "Hi" });
    await act(w, w.bob, note.location, "add_comment", { text: "@scout first" });
    const firstRuns = (await processed(env, (await commentBy(w.bob.id, "@scout first")).id)).runs;
    expect(firstRuns).toHaveLength(1);
    // Another agent, its own rate untouched (3 a minute): the workspace's 1 a minute is used up.
    await act(w, w.bob, note.location, "add_comment", { text: "@other second" });
    expect((await processed(env, (await commentBy(w.bob.id, "@other second")).id)).runs).toEqual([]);
    const [skipped] = await runsOf(other.id);
    expect(skipped).toMatchObject({ status: "skipped", stopReason: "rate_limited", triggerKind: "mention" });
    expect(skipped!.error).toContain("The workspace's agents were already woken 1 time in the last minute");
    // 0 lifts it: the next trigger starts a run.
    await md(app, w, w.alice, "POST", "/settings/agents/actions/set_agent_limits", {
      workspace_trigger_rate_per_minute: 0,
    });
    await act(w, w.bob, note.location, "add_comment", { text: "@other third" });
    const thirdRuns = (await processed(env, (await commentBy(w.bob.id, "@other third")).id)).runs;
    expect(thirdRuns).toHaveLength(1);
    expect((await runsOf(scout.id)).map((r) => r.status)).not.toContain("skipped");
    // Both runs end here: on a slow machine a call of theirs would otherwise reach the next
    // test's script, which counts the calls it sees.
    for (const id of [...firstRuns, ...thirdRuns])
      expect(await ended(id)).toMatchObject({ status: "completed" });
  });
});

describe("fallback models", () => {
  it("answers with the next model when the first is not found (404); the ledger, the step and the run page say which", async () => {
    const w = await adminWorld();
    await makeAgent(w, w.alice, "scout", { model: "gpt-4o", fallback_models: ["gpt-4o-mini"] });
    env.llm.setMissingModels(["gpt-4o"]);
    const seen: string[] = [];
    env.llm.setScript((req, n) => {
      seen.push(req.model);
      return n === 0 ? tool("navigate", { path: "/studios/general" }) : tool("finish", { message: "done" });
    });
    const id = await runTask(w, "scout");
    const run = await ended(id);
    env.llm.setMissingModels([]);
    expect(run).toMatchObject({ status: "completed", model: "gpt-4o" });
    // The fake answered 404 before its script for gpt-4o: the script only saw the fallback.
    expect(seen).toEqual(["gpt-4o-mini", "gpt-4o-mini"]);
    expect(env.llm.requests.filter((r) => r.body.model === "gpt-4o").length).toBeGreaterThanOrEqual(1);
    const ledger = await db().llmUsage.findMany({ where: { runId: id }, orderBy: { stepNumber: "asc" } });
    expect(ledger.map((l) => [l.model, l.priced])).toEqual([
      ["gpt-4o-mini", true],
      ["gpt-4o-mini", true],
    ]);
    const steps = await stepsOf(id);
    expect(steps.slice(1).map((s) => (s.detail as { model?: string }).model)).toEqual([
      "gpt-4o-mini",
      "gpt-4o-mini",
    ]);
    const page = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${id}`);
    expect(page.body).toContain("answered by fallback `gpt-4o-mini`");
  });

  it("falls back once 5xx outlasts the retries; without fallbacks a 404 fails the run as before", async () => {
    const w = await adminWorld();
    await makeAgent(w, w.alice, "scout", { model: "gpt-5", fallback_models: ["gpt-5-mini", "gpt-5-nano"] });
    env.llm.setScript((req) =>
      req.model === "gpt-5" ? { status: 503 } : tool("finish", { message: `done by ${req.model}` }),
    );
    const id = await runTask(w, "scout");
    expect(await ended(id)).toMatchObject({ status: "completed", finalMessage: "done by gpt-5-mini" });
    // The client's retries (LLM_MAX_RETRIES=2) ran first: three tries of gpt-5, then the fallback.
    const forRun = env.llm.requests.slice(-4).map((r) => r.body.model);
    expect(forRun).toEqual(["gpt-5", "gpt-5", "gpt-5", "gpt-5-mini"]);

    await makeAgent(w, w.alice, "solo", { model: "gpt-4o" });
    env.llm.setMissingModels(["gpt-4o"]);
    const solo = await runTask(w, "solo");
    const failed = await ended(solo);
    env.llm.setMissingModels([]);
    expect(failed).toMatchObject({ status: "failed", stopReason: "llm_error" });
    expect(failed.error).toContain("404");
  });

  it.each([401, 403])(
    "a key the provider refuses for the first model (%i) hands the step to the next; the ledger says which",
    async (status) => {
      const w = await adminWorld();
      await makeAgent(w, w.alice, "scout", { model: "gpt-4o", fallback_models: ["gpt-4o-mini"] });
      const seen: string[] = [];
      env.llm.setScript((req) => {
        seen.push(req.model);
        if (req.model === "gpt-4o")
          return { status, raw: `{"error":{"message":"key not allowed for gpt-4o","code":"${status}"}}` };
        return tool("finish", { message: `done by ${req.model}` });
      });
      const id = await runTask(w, "scout");
      expect(await ended(id)).toMatchObject({ status: "completed", finalMessage: "done by gpt-4o-mini" });
      // A refused key is not passing: asked once, never retried, then the fallback.
      expect(seen).toEqual(["gpt-4o", "gpt-4o-mini"]);
      const ledger = await db().llmUsage.findMany({ where: { runId: id } });
      expect(ledger.map((l) => l.model)).toEqual(["gpt-4o-mini"]);
      const page = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${id}`);
      expect(page.body).toContain("answered by fallback `gpt-4o-mini`");
    },
  );
});
