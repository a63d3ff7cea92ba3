// A run page's live stream (server-sent events on the page's own URL): every step exactly
// once, in order, as the database has it; resumed after any event with no gap and no step
// twice; "thinking…", stopping and the outcome; heartbeats; the page's own authorization.
// A real worker (in process) runs the agent on the fake LLM; the stream is read over HTTP.
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LIVE_CHANNEL } from "../src/services/events-channel.ts";
import { LIVE_APPLICATION_NAME } from "../src/services/live/listener.ts";
import { stepHtml, stepMarkdown, stepPath } from "../src/services/pages/run-steps.ts";
import { runById, runIdOf, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool } from "./helpers/agents.ts";
import {
  buildTestApp,
  fileDatabaseUrl,
  login,
  makeWorld,
  md,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import { as, type LiveClient, openLive, portOf, statusOf, stepNumbers } from "./helpers/live.ts";

let app: FastifyInstance;
let port: number;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp({ LIVE_HEARTBEAT_MS: "150" });
  port = await portOf(app);
  env = await startAgents("live-runs");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

/** `n` reads, each after `delayMs` of "thinking" and with words beside the call, then finish. */
function reader(n: number, delayMs: number) {
  let calls = 0;
  return () => {
    calls += 1;
    if (calls > n) return { ...tool("finish", { message: `Read ${n} pages` }), delayMs };
    return {
      ...tool("navigate", { path: calls % 2 ? "/studios/general" : "/whoami", note: `read ${calls}` }),
      content: `Reading page ${calls} to learn what the team is doing.`,
      delayMs,
    };
  };
}

async function runTask(w: World, task = "Look around") {
  const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", { task });
  expect(res.statusCode).toBe(201);
  const path = String(res.headers.location);
  return { path, id: runIdOf(path) };
}

const live = (w: World, path: string, extra: { lastEventId?: string } = {}) =>
  openLive({ port, path, ...as(w, w.alice), ...extra });

/** What the run page renders for each of the run's steps, from the rows. */
async function rendered(runId: string) {
  return (await stepsOf(runId)).map((s) => ({
    number: s.number,
    markdown: stepMarkdown(s, stepPath("scout", runId, s.number)),
    html: stepHtml(s, stepPath("scout", runId, s.number), true),
  }));
}

describe("a run page's stream", () => {
  it("from start to end matches the run's steps in the database exactly, then closes", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    env.llm.setScript(reader(4, 60));
    const run = await runTask(w);
    const stream = await live(w, run.path);
    expect(stream.status).toBe(200);
    expect(stream.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(stream.headers.vary).toBe("Accept");
    await stream.ended;
    const events = stream.events;
    expect((await runById(run.id)).status).toBe("completed");
    const steps = events.filter((e) => e.event === "step").map((e) => e.data);
    expect(steps.map(({ number, markdown, html }) => ({ number, markdown, html }))).toEqual(
      await rendered(run.id),
    );
    expect(steps.map((s) => s.number)).toEqual([1, 2, 3, 4, 5, 6]);
    // The words the model sent beside its call are in the step as it arrives.
    expect(steps[1].markdown).toContain("> Reading page 1 to learn what the team is doing.");
    // Every event has an id; the last says where the run ended; "thinking…" came while calls were out.
    expect(events.every((e) => e.id)).toBe(true);
    expect(events.at(-1)).toMatchObject({ event: "status", id: "6.completed", data: { state: "completed" } });
    // "Thinking…" came while calls were out, each about a step not delivered yet (how many
    // depends on how reads fell: steps read together come without one in between).
    const thinking = events.flatMap((e, i) => (e.event === "thinking" ? [{ i, step: e.data.step }] : []));
    expect(thinking.length).toBeGreaterThan(0);
    for (const t of thinking)
      expect(stepNumbers(events.slice(0, t.i)).every((n: number) => n < t.step)).toBe(true);
    // Asking again from the last event: nothing left, and 204 tells EventSource to stop asking.
    const again = await live(w, run.path, { lastEventId: "6.completed" });
    expect(again.status).toBe(204);
  });

  it("resumed with Last-Event-ID mid-run, or from the position its page embeds, has no gap and no step twice", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice, "scout", { max_steps: 30 });
    const browser = await login(app, w, w.alice);
    env.llm.setScript(reader(12, 200));
    const run = await runTask(w);
    const first = await live(w, run.path);
    await first.until((e) => stepNumbers(e).length >= 3);
    first.close();
    const seen = stepNumbers(first.events);
    const lastId = first.events.at(-1)!.id;
    // Steps are recorded while nobody listens.
    await waitFor(async () => (await runById(run.id)).stepsCount >= seen.at(-1)! + 2, 10_000);
    const second = await live(w, run.path, { lastEventId: lastId });
    await second.until((e) => stepNumbers(e).length >= 1);
    // The browser's way in: the page says where its content stands, and its stream starts there.
    const page = await browser.get(run.path);
    const since = /data-live-since="([^"]+)"/.exec(page.body)![1]!;
    const onPage = [...page.body.matchAll(/id="step-(\d+)"/g)].map((m) => Number(m[1]));
    const third = await live(w, `${run.path}?last_event_id=${encodeURIComponent(since)}`);
    await Promise.all([second.ended, third.ended]);
    const total = (await runById(run.id)).stepsCount;
    const all = Array.from({ length: total }, (_, i) => i + 1);
    expect([...seen, ...stepNumbers(second.events)]).toEqual(all);
    expect([...onPage, ...stepNumbers(third.events)]).toEqual(all);
    expect(statusOf(second.events)).toBe("completed");
  });

  it("hears of a call from the row before it; only a call no row precedes (a JSON-mode retry) is announced", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    const heard: string[] = [];
    const channel = new pg.Client({ connectionString: fileDatabaseUrl() });
    await channel.connect();
    channel.on("notification", (n) => heard.push(n.payload ?? ""));
    await channel.query(`LISTEN ${LIVE_CHANNEL}`);
    env.llm.setScript([
      { ...tool("navigate", { path: "/studios/general" }), delayMs: 100 },
      { status: 400, content: "this model does not support tools" },
      { content: '{"type":"finish","message":"done"}', delayMs: 300 },
    ]);
    const run = await runTask(w);
    const stream = await live(w, run.path);
    await stream.ended;
    await channel.end();
    expect(statusOf(stream.events)).toBe("completed");
    const calls = heard.filter((p) => p.startsWith(`call ${run.id} `)).map((p) => p.split(" ")[2]);
    expect(calls).toEqual(["3"]);
    // Every step was heard, so a watcher knew of every call that followed one.
    expect(heard.filter((p) => p.startsWith(`step ${run.id} `)).map((p) => p.split(" ")[3])).toEqual([
      "1",
      "2",
      "3",
    ]);
    expect(stream.events.some((e) => e.event === "thinking" && e.data.step === 3)).toBe(true);
  });

  it("shows stopping, then the outcome, when the owner stops a running run", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    env.llm.setScript(reader(50, 300));
    const run = await runTask(w);
    const stream = await live(w, run.path);
    await stream.until((e) => stepNumbers(e).length >= 2);
    const stop = await md(app, w, w.alice, "POST", `${run.path}/actions/stop_run`, {});
    expect(stop.statusCode).toBe(200);
    await stream.ended;
    const states = stream.events.filter((e) => e.event === "status").map((e) => e.data.state);
    // A busy worker may claim the run after the stream opened: "queued" may come first.
    expect(states.filter((s) => s !== "queued")).toEqual(["running", "stopping", "cancelled"]);
    expect(stream.events.at(-1)!.data.progress.markdown).toContain(
      "Status: **cancelled** (stopped_by_owner)",
    );
    expect(stepNumbers(stream.events)).toEqual((await stepsOf(run.id)).map((s) => s.number));
  });

  it("goes on delivering, nothing missed, after the web process loses its LISTEN connection", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    env.llm.setScript(reader(6, 200));
    const run = await runTask(w);
    const stream = await live(w, run.path);
    await stream.until((e) => stepNumbers(e).length >= 2);
    // As a restart of Postgres or a failover would: this test file's database only.
    const killed = await testPrisma().$queryRaw<{ n: number }[]>`
      SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
      WHERE application_name = ${LIVE_APPLICATION_NAME} AND datname = current_database()`;
    expect(killed[0]!.n).toBe(1);
    await stream.ended;
    expect(stepNumbers(stream.events)).toEqual((await stepsOf(run.id)).map((s) => s.number));
    expect(statusOf(stream.events)).toBe("completed");
  });

  it("keeps an idle stream open with heartbeats", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    // A run waiting for its owner: nothing happens until they answer.
    const run = await testPrisma().subagentTaskRun.create({
      data: {
        id: `wait${Date.now().toString(36)}`,
        tenantId: w.tenant.id,
        agentId: scout.id,
        triggerKind: "manual",
        task: "Wait",
        maxSteps: 5,
        timeoutSeconds: 60,
        status: "waiting",
        stopReason: "asked_owner",
        question: "Go on?",
      },
    });
    const stream = await live(w, `/subagents/scout/runs/${run.id}`);
    await stream.until((e) => e.length >= 1);
    await waitFor(async () => (stream.raw().match(/^: ping$/gm)?.length ?? 0) >= 2, 3000);
    expect(stream.events.map((e) => [e.event, e.id])).toEqual([["status", "0.waiting"]]);
    stream.close();
  });
});

describe("who may watch", () => {
  let w: World;
  let path: string;
  beforeAll(async () => {
    w = await makeWorld();
    await makeAgent(w, w.alice);
    env.llm.setScript(reader(1, 0));
    path = (await runTask(w)).path;
  });

  it("whoever may not see the run page gets its 404 from the stream, and no event", async () => {
    const other = await makeWorld();
    const tries: [string, Promise<LiveClient>][] = [
      ["bob, in the studio but not its owner", openLive({ port, path, ...as(w, w.bob) })],
      ["carol, not in the studio", openLive({ port, path, ...as(w, w.carol) })],
      [
        "alice, with an agent handle that is not hers",
        openLive({ port, path: path.replace("scout", "nobody"), ...as(w, w.alice) }),
      ],
      ["another workspace's alice, on her own host", openLive({ port, path, ...as(other, other.alice) })],
    ];
    for (const [who, p] of tries) {
      const res = await p;
      expect.soft(res.status, who).toBe(404);
      await res.ended;
      expect.soft(res.events, who).toEqual([]);
    }
    // Another workspace's token on this workspace's host is no credential at all.
    const foreign = await openLive({ port, path, host: w.host, token: other.alice.token });
    expect(foreign.status).toBe(401);
    const browser = await login(app, w, w.bob);
    const session = await openLive({ port, path, host: w.host, cookies: browser.cookies });
    expect(session.status).toBe(404);
  });

  it("a page with nothing live answers 406, after its own authorization", async () => {
    expect((await openLive({ port, path: "/studios", ...as(w, w.alice) })).status).toBe(406);
    expect((await openLive({ port, path: "/studios/nope", ...as(w, w.alice) })).status).toBe(404);
  });
});
