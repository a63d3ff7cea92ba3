// A connected tool's call in a run's trace (issue 45): its `execute_tool` span, under the run's
// `invoke_agent`, names the tool as the model called it and the server its arguments went to
// (`server.address`, `server.port`, as the MCP conventions of OpenTelemetry name them), with
// the policy's decision; neither the connection's secret nor the tool's answer is in any span.
// A real OTLP/HTTP receiver, a real SDK MCP server, the real stack, a scripted model.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flushTracing, startTracing, stopTracing } from "../src/lib/telemetry.ts";
import { type AgentEnv, makeAgent, startAgents, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, makeWorld, waitFor } from "./helpers/app.ts";
import { type Harness, runTask } from "./helpers/approvals.ts";
import { startMcpServer, type TestMcpServer } from "./helpers/mcp-servers.ts";
import { type OtlpReceiver, startReceiver } from "./helpers/otlp-receiver.ts";
import { callScript, callsOfRun, connect, grant, searchIssues, TOKEN } from "./helpers/tool-runs.ts";

const ANSWER = "2 issues match deploy: #7 #9";
let app: FastifyInstance;
let env: AgentEnv;
let rx: OtlpReceiver;
let server: TestMcpServer;
const h: Harness = { app: () => app, env: () => env };

beforeAll(async () => {
  rx = await startReceiver();
  await startTracing({ endpoint: rx.url, serviceName: "cadre-test", scheduledDelayMs: 50 });
  app = await buildTestApp();
  env = await startAgents("tool-runs-trace");
  server = await startMcpServer({
    bearer: TOKEN,
    tools: [searchIssues(() => ({ content: [{ type: "text", text: ANSWER }] }))],
  });
});
afterAll(async () => {
  await server.close();
  await env.close();
  await app.close();
  await stopTracing();
  await rx.stop();
});

describe("a tool call's span", () => {
  it("execute_tool <slug>__<tool> under invoke_agent, with the server's address and port and the policy's decision", async () => {
    const w = await makeWorld("trt");
    const scout = await makeAgent(w, w.alice, "scout");
    await connect(w, w.alice, server.url, { slug: "gh" });
    await grant(app, w, "scout", "gh__search_issues");
    env.llm.setScript(
      callScript(w, [{ name: "gh__search_issues", params: { query: "deploy" }, after: "/tools" }]),
    );
    const runId = await runTask(h, w, "Find the deploy issues");
    expect((await waitForRun(scout.id)).status).toBe("completed");
    expect((await callsOfRun(runId))[0]).toMatchObject({ status: "done", result: ANSWER });

    const spans = await waitFor(async () => {
      await flushTracing();
      const root = rx.spans.find((s) => s.attributes["cadre.run.id"] === runId);
      const trace = root ? rx.spans.filter((s) => s.traceId === root.traceId) : [];
      return trace.some((s) => s.name === "execute_tool gh__search_issues") ? trace : null;
    }, 15_000);
    const root = spans.find((s) => s.name === "invoke_agent scout")!;
    const call = spans.find((s) => s.name === "execute_tool gh__search_issues")!;
    expect(call.parentSpanId).toBe(root.spanId);
    const { hostname, port } = new URL(server.url);
    expect(call.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "gh__search_issues",
      "gen_ai.tool.type": "extension",
      "mcp.method.name": "tools/call",
      "server.address": hostname,
      "server.port": Number(port),
      "cadre.page.path": "/tools",
      "cadre.tool.ok": true,
      "cadre.policy.decision": "allow",
      "cadre.policy.rule": "default",
    });
    // A navigation is one of ours: no server, type function.
    const navigation = spans.find((s) => s.name === "execute_tool navigate");
    expect(navigation?.attributes["gen_ai.tool.type"]).toBe("function");
    expect(navigation?.attributes["server.address"]).toBeUndefined();
    // Content capture is off: what was sent and what came back stay out, and the secret always.
    const everything = JSON.stringify(spans);
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(ANSWER);
    expect(call.attributes["gen_ai.tool.call.arguments"]).toBeUndefined();
  });
});
