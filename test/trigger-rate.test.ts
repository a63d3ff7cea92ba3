// The agent's trigger rate delays work, it never drops it (agents/triggers/rate.ts): webhooks
// do not use up the budget of mentions and subscriptions; a trigger over the rate waits its
// turn and runs once the window allows; a skipped run can be retried by its managers from
// its page. Real Postgres, Redis, BullMQ workers (events, runs, the sweeper) and the fake LLM.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commentBy, processed, requestsFor, respondScript } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, runsOf, startAgents } from "./helpers/agents.ts";
import {
  act,
  actionNames,
  buildTestApp,
  makeWorld,
  md,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import { createHook, send } from "./helpers/webhooks.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("trigger-rate");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;

async function setRate(w: World, perMinute: number) {
  await db().tenant.update({
    where: { id: w.tenant.id },
    data: { settings: { trigger_rate_per_minute: perMinute } },
  });
}

/** `who` comments on the page; resolves once the events worker has dispatched it. */
async function comment(w: World, who: World["bob"], path: string, text: string) {
  await act(w, who, path, "add_comment", { text });
  const c = await commentBy(who.id, text);
  return processed(env, c.id);
}

/** Alice's @scout watching a note of hers (comments batched over `windowSeconds`), with a webhook. */
async function scoutWatching(w: World, windowSeconds: number) {
  const scout = await makeAgent(w, w.alice, "scout", { subscription_window_seconds: windowSeconds });
  const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Plan", text: "Draft" });
  const sub = await md(app, w, w.alice, "POST", `${note.location}/actions/subscribe`, {
    agent: "scout",
    commented: true,
  });
  expect(sub.statusCode).toBe(201);
  return { scout, path: note.location };
}

const ended = (agentId: string, n: number) =>
  waitFor(async () => {
    const runs = await runsOf(agentId);
    return (
      runs.length === n && runs.every((r) => ["completed", "skipped", "failed"].includes(r.status)) && runs
    );
  }, 20_000);

describe("webhooks and the mention budget", () => {
  it("three webhook deliveries, then a mention and a subscription batch in the same minute: all run, in order, each once", async () => {
    const w = await makeWorld();
    await setRate(w, 3);
    const { scout, path } = await scoutWatching(w, 1);
    // It reads and finishes without a comment: a comment of its own would make the next ones thread triggers.
    env.llm.setScript(respondScript(() => null));
    const hook = await createHook(app, w, w.alice, "scout");
    for (let i = 0; i < 3; i++)
      expect(
        (await send(app, w, hook.id, `{"n":${i}}`, { secret: hook.secret, delivery: `d${i}` })).statusCode,
      ).toBe(202);
    // Bob mentions it (one run, not also the subscription's), then two comments make one batch.
    expect((await comment(w, w.bob, path, "@scout can you look?")).runs).toHaveLength(1);
    await comment(w, w.bob, path, "First thought");
    await comment(w, w.bob, path, "Second thought");
    const runs = await ended(scout.id, 5);
    expect(runs.map((r) => [r.triggerKind, r.status])).toEqual([
      ["webhook", "completed"],
      ["webhook", "completed"],
      ["webhook", "completed"],
      ["mention", "completed"],
      ["subscription", "completed"],
    ]);
    // Nothing waited: webhooks did not count against the three a minute.
    expect(runs.every((r) => r.notBefore === null)).toBe(true);
    // Started in the order they came, one after another.
    const started = runs.map((r) => r.startedAt!.getTime());
    expect(started).toEqual([...started].sort((a, b) => a - b));
    expect(runs[4]!.task).toContain("First thought");
    expect(runs[4]!.task).toContain("Second thought");
    // Each once: one run per trigger, and the model called for each run alone.
    expect(new Set(runs.map((r) => r.triggerEventId)).size).toBe(5);
    expect(requestsFor(env, w)).toHaveLength(5);
  }, 40_000);
});

describe("over the rate", () => {
  it("a subscription batch over the rate waits, then runs once the window allows", async () => {
    const w = await makeWorld();
    await setRate(w, 1);
    const { scout, path } = await scoutWatching(w, 1);
    env.llm.setScript(respondScript(() => null));
    expect((await comment(w, w.bob, path, "@scout first")).runs).toHaveLength(1);
    const [first] = await ended(scout.id, 1);
    // The minute is nearly over for the first run: the next one's place is five seconds away
    // (two were too few under load: the page was read after the place had come).
    await db()
      .$executeRaw`UPDATE subagent_task_runs SET created_at = created_at - interval '55 seconds' WHERE id = ${first!.id}`;
    await comment(w, w.bob, path, "one");
    await comment(w, w.bob, path, "two");
    const waiting = await waitFor(async () =>
      (await runsOf(scout.id)).find((r) => r.triggerKind === "subscription"),
    );
    expect(waiting.status).toBe("queued");
    expect(waiting.notBefore!.getTime()).toBeGreaterThan(Date.now());
    const page = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${waiting.id}`);
    expect(page.body).toContain("## Waiting for its trigger rate");
    const [, done] = await ended(scout.id, 2);
    expect(done).toMatchObject({ id: waiting.id, status: "completed" });
    expect(done!.startedAt!.getTime()).toBeGreaterThanOrEqual(waiting.notBefore!.getTime());
    console.info(
      `waited run started ${done!.startedAt!.getTime() - waiting.notBefore!.getTime()} ms after its place`,
    );
    expect(done!.task).toContain("one");
    expect(done!.task).toContain("two");
  }, 40_000);
});

describe("retry", () => {
  it("a paused agent's skipped mention: its owner retries it from the run page once resumed; others cannot", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    env.llm.setScript(respondScript(() => "Back now."));
    const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Plan", text: "Draft" });
    await act(w, w.alice, "/subagents/scout", "pause_subagent", { reason: "on leave" });
    await comment(w, w.bob, note.location, "@scout are you there?");
    const [skipped] = await ended(scout.id, 1);
    expect(skipped).toMatchObject({ status: "skipped", stopReason: "paused" });
    const runPath = `/subagents/scout/runs/${skipped!.id}`;

    // Its trigger can be kept as a test case too (test/test-cases.test.ts).
    expect(actionNames((await md(app, w, w.alice, "GET", runPath)).body)).toEqual([
      "retry_run",
      "save_test_case",
    ]);
    // Bob reads why, but the retry is its owner's.
    const bobs = await md(app, w, w.bob, "GET", runPath);
    expect(bobs.statusCode).toBe(200);
    expect(actionNames(bobs.body)).toEqual([]);
    expect((await md(app, w, w.bob, "POST", `${runPath}/actions/retry_run`, {})).statusCode).toBe(403);

    const early = await md(app, w, w.alice, "POST", `${runPath}/actions/retry_run`, {});
    expect(early.statusCode).toBe(409);
    expect(early.body).toContain("@scout is paused: resume it, then retry.");
    expect(await runsOf(scout.id)).toHaveLength(1);

    await act(w, w.alice, "/subagents/scout", "resume_subagent", {});
    const retried = await md(app, w, w.alice, "POST", `${runPath}/actions/retry_run`, {});
    expect(retried.statusCode).toBe(201);
    const [, again] = await ended(scout.id, 2);
    expect(again).toMatchObject({
      status: "completed",
      triggerKind: "mention",
      triggerEventId: `retry:${skipped!.id}`,
      initiatedById: w.bob.id,
      task: skipped!.task,
    });
    expect(retried.headers.location).toBe(`/subagents/scout/runs/${again!.id}`);
    expect(await commentBy(scout.id, "Back now.")).toBeTruthy();
    // Once: a second retry is a 409 naming the first; the skipped run links to it.
    const twice = await md(app, w, w.alice, "POST", `${runPath}/actions/retry_run`, {});
    expect(twice.statusCode).toBe(409);
    expect(twice.body).toContain(`Already retried as run ${again!.id}`);
    expect((await md(app, w, w.alice, "GET", runPath)).body).toContain(`Retried as [run ${again!.id}]`);
  }, 40_000);

  it("a paused agent's subscription batch: skipped, its owner told with the run to retry, the commenter not", async () => {
    const w = await makeWorld();
    const { scout, path } = await scoutWatching(w, 0);
    env.llm.setScript(respondScript(() => null));
    await act(w, w.alice, "/subagents/scout", "pause_subagent", { reason: "on leave" });
    await comment(w, w.bob, path, "Just a thought");
    const [skipped] = await ended(scout.id, 1);
    expect(skipped).toMatchObject({ status: "skipped", stopReason: "paused", triggerKind: "subscription" });
    const notices = await db().notification.findMany({ where: { actorId: scout.id } });
    expect(notices.map((n) => [n.userId, n.path, n.excerpt])).toEqual([
      [
        w.alice.id,
        `/subagents/scout/runs/${skipped!.id}`,
        "did not answer a batch of what it watches: it is paused. Its owner can resume it on its page, then retry.",
      ],
    ]);
    await act(w, w.alice, "/subagents/scout", "resume_subagent", {});
    const retried = await md(
      app,
      w,
      w.alice,
      "POST",
      `/subagents/scout/runs/${skipped!.id}/actions/retry_run`,
      {},
    );
    expect(retried.statusCode).toBe(201);
    const [, again] = await ended(scout.id, 2);
    expect(again).toMatchObject({ status: "completed", triggerKind: "subscription", task: skipped!.task });
  }, 40_000);
});
