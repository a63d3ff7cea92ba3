// What operators see: /metrics from the web server and from the worker's own listener
// (bounded labels, refused without the token, counters that move when a run completes), and
// the worker's log, whose every line inside a run names the run, its agent and its tenant.
import type { Server } from "node:http";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portOf, serveMetrics } from "../src/http/metrics-scrape.ts";
import { openLiveStream } from "../src/metrics/metrics.ts";
import { runIdOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, makeWorld, md, type World } from "./helpers/app.ts";
import { captureLog } from "./helpers/logs.ts";

const TOKEN = "metrics-token-for-tests-0123456789";
let app: FastifyInstance;
let env: AgentEnv;
let worker: Server;
const log = captureLog();

beforeAll(async () => {
  app = await buildTestApp({ METRICS_TOKEN: TOKEN });
  env = await startAgents("observability", {}, [], log.logger);
  worker = await serveMetrics({ host: "127.0.0.1", port: 0, token: TOKEN });
});
afterAll(async () => {
  worker?.close();
  await env?.close();
  await app?.close();
});

const scrapeWeb = async (authorization?: string) =>
  app.inject({ method: "GET", url: "/metrics", headers: authorization ? { authorization } : {} });

async function scrapeWorker(authorization = `Bearer ${TOKEN}`, path = "/metrics") {
  const res = await fetch(`http://127.0.0.1:${portOf(worker)}${path}`, { headers: { authorization } });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** The value of one series in Prometheus text (0 when absent); `labels` must match all of its labels. */
function value(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",").filter(Boolean);
    if (want.every((w) => have.includes(w)) && have.length === want.length) sum += Number(m[3]);
  }
  return sum;
}

/** Every value the `route` label takes in the request histogram. */
const routes = (text: string) =>
  new Set(
    [...text.matchAll(/^cadre_http_request_duration_seconds_count\{.*route="([^"]*)"/gm)].map((m) => m[1]),
  );

describe("/metrics is not public", () => {
  it("the web server refuses a scrape without the token, or with another, and says how to send it", async () => {
    for (const auth of [undefined, "Bearer wrong-token-wrong-token-0000", `Basic ${TOKEN}`]) {
      const res = await scrapeWeb(auth);
      expect(res.statusCode).toBe(401);
      expect(res.headers["www-authenticate"]).toMatch(/^Bearer/);
      expect(res.body).not.toContain("cadre_");
    }
    const ok = await scrapeWeb(`Bearer ${TOKEN}`);
    expect(ok.statusCode).toBe(200);
    expect(ok.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(ok.body).toContain("# TYPE cadre_http_request_duration_seconds histogram");
  });

  it("without METRICS_TOKEN the endpoint is off: 404, whatever is sent", async () => {
    const off = await buildTestApp();
    try {
      for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }]) {
        const res = await off.inject({ method: "GET", url: "/metrics", headers });
        expect(res.statusCode).toBe(404);
        expect(res.body).not.toContain("cadre_");
      }
    } finally {
      await off.close();
    }
  });

  it("the worker's listener: 401 without the token, 404 for any other address, 200 with it", async () => {
    expect((await scrapeWorker("")).status).toBe(401);
    expect((await scrapeWorker("Bearer nope")).status).toBe(401);
    expect((await scrapeWorker(`Bearer ${TOKEN}`, "/other")).status).toBe(404);
    const ok = await scrapeWorker();
    expect(ok.status).toBe(200);
    expect(ok.body).toContain("# TYPE cadre_runs_ended_total counter");
  });
});

describe("request metrics: the route pattern, never the path", () => {
  let w: World;
  beforeAll(async () => {
    w = await makeWorld();
  });

  it("labels pages and actions by pattern, with status and latency", async () => {
    await md(app, w, w.alice, "GET", "/studios/general");
    await md(app, w, w.alice, "POST", "/studios/general/actions/create_note", { text: "metrics" });
    const text = (await scrapeWeb(`Bearer ${TOKEN}`)).body;
    const page = { method: "GET", route: "/studios/:studio", status: "200" };
    expect(value(text, "cadre_http_request_duration_seconds_count", page)).toBeGreaterThanOrEqual(1);
    const action = { method: "POST", route: "/studios/:studio/actions/create_note", status: "201" };
    expect(value(text, "cadre_http_request_duration_seconds_count", action)).toBe(1);
    expect(value(text, "cadre_http_request_duration_seconds_bucket", { ...action, le: "+Inf" })).toBe(1);
    for (const r of routes(text)) expect(r).not.toContain(w.tenant.subdomain);
  });

  it("a 404 path adds no label value, nor does a made-up id or action on a real page", async () => {
    // Each kind once, so the label values they map to exist before we count them.
    const probe = async (n: string) => {
      await md(app, w, w.alice, "GET", `/no-such-${n}/page`);
      await md(app, w, w.alice, "GET", `/studios/general/notes/missing${n}`);
      await md(app, w, w.alice, "POST", `/studios/general/actions/made_up_${n}`, {});
    };
    await probe("zqfirst");
    const before = routes((await scrapeWeb(`Bearer ${TOKEN}`)).body);
    await probe("zqsecond");
    const text = (await scrapeWeb(`Bearer ${TOKEN}`)).body;
    expect(routes(text)).toEqual(before);
    expect(text).not.toMatch(/zqsecond|zqfirst/);
    expect(
      value(text, "cadre_http_request_duration_seconds_count", {
        method: "GET",
        route: "unmatched",
        status: "404",
      }),
    ).toBe(2);
    const note = { method: "GET", route: "/studios/:studio/notes/:note", status: "404" };
    expect(value(text, "cadre_http_request_duration_seconds_count", note)).toBe(2);
    const made = { method: "POST", route: "/studios/:studio/actions/:action", status: "404" };
    expect(value(text, "cadre_http_request_duration_seconds_count", made)).toBe(2);
  });
});

describe("a run, seen from the worker", () => {
  it("moves the run, step and LLM counters when it completes, and the gauges read the queues", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const usage = { prompt_tokens: 100, completion_tokens: 10 };
    env.llm.setScript([
      { ...tool("navigate", { path: "/studios/general" }), usage },
      { ...tool("finish", { message: "done" }), usage },
    ]);
    const before = (await scrapeWorker()).body;
    const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: "Look around",
    });
    expect(res.statusCode).toBe(201);
    const runId = runIdOf(String(res.headers.location));
    const run = await waitForRun(scout.id);
    expect(run).toMatchObject({ id: runId, status: "completed" });
    const after = (await scrapeWorker()).body;
    const moved = (name: string, labels: Record<string, string>) =>
      value(after, name, labels) - value(before, name, labels);
    expect(moved("cadre_runs_started_total", { trigger: "manual" })).toBe(1);
    expect(
      moved("cadre_runs_ended_total", { trigger: "manual", status: "completed", stop_reason: "finished" }),
    ).toBe(1);
    // /whoami, the studio, the finish.
    expect(moved("cadre_run_steps_total", { type: "navigate" })).toBe(2);
    expect(moved("cadre_run_steps_total", { type: "finish" })).toBe(1);
    expect(moved("cadre_llm_call_duration_seconds_count", { model: "fake-model", outcome: "ok" })).toBe(2);
    expect(moved("cadre_llm_tokens_total", { model: "fake-model", kind: "input" })).toBe(200);
    expect(moved("cadre_llm_tokens_total", { model: "fake-model", kind: "output" })).toBe(20);
    expect(after).toMatch(/^cadre_llm_cost_usd_total\{model="fake-model"\} /m);
    expect(after).toMatch(/^cadre_queue_jobs\{queue="agent-runs",state="waiting"\} \d+$/m);
    expect(after).toMatch(/^cadre_pending_approvals \d+$/m);
  });

  it("a failing model: every line the run logs names the run, its agent and its tenant", async () => {
    const worlds = [await makeWorld(), await makeWorld()];
    env.llm.setScript(() => ({ status: 400, raw: '{"error":{"message":"no such model"}}' }));
    const runs: { id: string; agentId: string; tenantId: string }[] = [];
    for (const w of worlds) {
      const scout = await makeAgent(w, w.alice, "scout");
      const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
        task: "Fail",
      });
      const run = await waitForRun(scout.id);
      expect(run).toMatchObject({ id: runIdOf(String(res.headers.location)), status: "failed" });
      runs.push({ id: run.id, agentId: scout.id, tenantId: w.tenant.id });
    }
    const outcome = await scrapeWorker();
    expect(
      value(outcome.body, "cadre_llm_call_duration_seconds_count", {
        model: "fake-model",
        outcome: "bad_request",
      }),
    ).toBe(2);
    for (const r of runs) {
      const lines = log.lines.filter((l) => l.runId === r.id);
      expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/^LLM call failed/)]);
      expect(lines[0]).toMatchObject({
        runId: r.id,
        agentId: r.agentId,
        agent: "scout",
        tenantId: r.tenantId,
      });
    }
    // Nothing about a run was logged without naming it.
    expect(log.lines.filter((l) => /LLM|run/.test(l.msg) && !l.runId)).toEqual([]);
  });
});

describe("live streams", () => {
  it("openLiveStream counts a stream until it closes, once however often it is closed", async () => {
    const gauge = async () => value((await scrapeWeb(`Bearer ${TOKEN}`)).body, "cadre_live_streams");
    const start = await gauge();
    const close = openLiveStream();
    expect(await gauge()).toBe(start + 1);
    close();
    close();
    expect(await gauge()).toBe(start);
  });
});
