// The leak test for a connection's secret on the run side (issue 45): a distinctive bearer
// token, used by runs that call its tools (one allowed, one approved and run by the
// approvals worker), with a server that quotes the token back in its results. The token
// must be in no response, log line, Redis key or job, model request or row; what the server
// quoted is masked. The connection pages' own leak checks are the settings side's.
// Real Postgres, Redis, workers, a real SDK MCP server; the model is a fake LLM over HTTP.
import { randomBytes } from "node:crypto";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.ts";
import { type AgentEnv, makeAgent, startAgents, waitForRun } from "./helpers/agents.ts";
import { login, makeWorld, md, testConfig, testPrisma, waitFor } from "./helpers/app.ts";
import { type Harness, review, runTask, waitPending, waitStatus } from "./helpers/approvals.ts";
import { databaseDump, redisDump } from "./helpers/dumps.ts";
import { captureLog } from "./helpers/logs.ts";
import { startMcpServer, type TestMcpServer } from "./helpers/mcp-servers.ts";
import { callScript, callsOfRun, closeIssue, connect, grant } from "./helpers/tool-runs.ts";

const TOKEN = `tok_LEAKCHECK_${randomBytes(16).toString("hex")}`;
const appLog: string[] = [];
const workerLog = captureLog("trace");
let app: FastifyInstance;
let env: AgentEnv;
let server: TestMcpServer;
const h: Harness = { app: () => app, env: () => env };

beforeAll(async () => {
  app = await buildApp({
    config: testConfig({ LOG_LEVEL: "trace" }),
    prisma: testPrisma(),
    logger: { stream: { write: (line: string) => void appLog.push(line) } },
  });
  await app.ready();
  env = await startAgents("tool-runs-leak", {}, [], workerLog.logger);
  server = await startMcpServer({
    bearer: TOKEN,
    tools: [
      {
        name: "whoami",
        description: "Who the server thinks you are.",
        annotations: { readOnlyHint: true },
        // A careless server quoting the credential it was sent.
        handler: () => ({ content: [{ type: "text", text: `signed in with ${TOKEN}` }] }),
      },
      closeIssue(() => ({
        content: [{ type: "text", text: `no such issue (token ${TOKEN})` }],
        isError: true,
      })),
    ],
  });
});
afterAll(async () => {
  await server.close();
  await env.close();
  await app.close();
});

describe("the leak test, run side", () => {
  it("a connection's token is in no response, log, job, prompt or row; a result quoting it is masked", {
    timeout: 90_000,
  }, async () => {
    const forms = [TOKEN, Buffer.from(TOKEN).toString("hex"), Buffer.from(TOKEN).toString("base64")];
    const w = await makeWorld("trl");
    const scout = await makeAgent(w, w.alice, "scout", { approval_mode: "continue" });
    await connect(w, w.alice, server.url, { slug: "gh", token: TOKEN });
    const seen: LightMyRequestResponse[] = [];
    const keep = (r: LightMyRequestResponse) => {
      seen.push(r);
      return r;
    };
    keep(await grant(app, w, "scout", "gh__whoami"));
    keep(await grant(app, w, "scout", "gh__close_issue"));
    env.llm.setScript(
      callScript(w, [
        { name: "gh__whoami", params: {} },
        { name: "gh__close_issue", params: { number: 7 } },
      ]),
    );
    const runId = await runTask(h, w, "Who am I on GitHub? Then close #7");
    expect((await waitForRun(scout.id)).status).toBe("completed");
    const pending = await waitPending(scout.id);
    keep(await review(app, w, w.alice, "approve_action", { id: pending.id }));
    await waitStatus(pending.id, "executed");
    const calls = await waitFor(async () => {
      const all = await callsOfRun(runId);
      return all.length === 2 && all.every((c) => c.status !== "calling") ? all : null;
    });
    // Each really went out, and what the server quoted was masked before anyone saw it.
    expect(server.calls.get("whoami")).toBe(1);
    expect(server.calls.get("close_issue")).toBe(1);
    expect(calls.map((c) => c.status)).toEqual(["done", "error"]);
    for (const call of calls) expect(call.result).toContain("[masked: tool connection secret]");

    const steps = await testPrisma().subagentTaskRunStep.findMany({ where: { runId } });
    const browser = await login(app, w, w.alice);
    const pages = [
      "/subagents/scout/settings",
      `/subagents/scout/runs/${runId}`,
      ...steps.map((s) => `/subagents/scout/runs/${runId}/steps/${s.number}`),
      ...calls.map((c) => `/tools?call=${c.id}`),
      "/approvals",
      `/subagents/scout/pending/${pending.id}`,
      "/tools",
    ];
    for (const url of pages) {
      const asMarkdown = keep(await md(app, w, w.alice, "GET", url));
      expect(asMarkdown.statusCode, `${url}: ${asMarkdown.body.slice(0, 200)}`).toBe(200);
      expect(keep(await browser.get(url)).statusCode, url).toBe(200);
    }
    for (const url of ["/tools", "/whoami", `/tools?call=${calls[0]!.id}`])
      expect(keep(await md(app, w, scout, "GET", url)).statusCode, url).toBe(200);
    await waitFor(
      async () =>
        (await testPrisma().event.count({ where: { tenantId: w.tenant.id, publishedAt: null } })) === 0,
      10_000,
    );

    const clean = (where: string, texts: string[]) => {
      for (const text of texts)
        for (const form of forms) expect(text.includes(form), `${where}: ${text.slice(0, 300)}`).toBe(false);
    };
    const responses = seen.map((r) => `${JSON.stringify(r.headers)}\n${r.body}`);
    expect(responses.some((r) => r.includes("[masked: tool connection secret]"))).toBe(true);
    clean("HTTP response", responses);
    expect(appLog.some((line) => line.includes("/tools?call="))).toBe(true);
    clean("app log", appLog);
    // The worker logs little of a run that goes well; whatever it logged is scanned.
    clean("worker log", workerLog.raw);
    const redis = await redisDump(env.config.REDIS_URL, env.config.QUEUE_PREFIX);
    expect(redis.some((entry) => entry.includes(runId))).toBe(true);
    clean("Redis", redis);
    const prompts = env.llm.requests.map((r) => `${JSON.stringify(r.headers)}\n${JSON.stringify(r.body)}`);
    expect(prompts.some((p) => p.includes("signed in with [masked: tool connection secret]"))).toBe(true);
    clean("LLM request", prompts);
    const rows = await databaseDump();
    expect(rows.some((r) => r.table === "tool_calls" && r.row.includes(calls[0]!.id))).toBe(true);
    clean(
      "database",
      rows.map((r) => `${r.table}: ${r.row}`),
    );
  });
});
