// A worker SIGKILLed while its run's tool call is out at the server (issue 45): the call was
// recorded before it left (its step, its tool_calls row, its event, in one transaction), so the
// worker that resumes the run never calls again. The call is marked `interrupted`, the model
// reads that it reached the server at most once, and the run finishes. A real worker process
// (src/worker.ts), a real SDK MCP server holding the call in this process, the fake model.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { runById } from "./helpers/agent-scripts.ts";
import { makeAgent } from "./helpers/agents.ts";
import { act, buildTestApp, fileDatabaseUrl, makeWorld, testPrisma, waitFor } from "./helpers/app.ts";
import { startMcpServer, type TestMcpServer } from "./helpers/mcp-servers.ts";
import { callScript, callsOfRun, closeIssue, connect, grant, TOKEN } from "./helpers/tool-runs.ts";
import { endWorkers, killGroup, spawnWorker } from "./helpers/workers.ts";

let app: FastifyInstance;
let llm: FakeLlm;
let server: TestMcpServer;
const prefix = `${inject("queuePrefix")}-tool-runs-recovery`;

beforeAll(async () => {
  app = await buildTestApp();
  llm = await startFakeLlm();
  server = await startMcpServer({
    bearer: TOKEN,
    tools: [closeIssue((args) => ({ content: [{ type: "text", text: `closed #${String(args.number)}` }] }))],
  });
});
afterAll(async () => {
  await endWorkers(prefix);
  server.release();
  await server.close();
  await llm.close();
  await app.close();
});

const worker = () => spawnWorker({ databaseUrl: fileDatabaseUrl(), llmUrl: llm.url, prefix });

describe("a worker killed while its tool call is out", () => {
  it("the resumed run never calls again: the call is marked interrupted and the run finishes", {
    timeout: 180_000,
  }, async () => {
    const w = await makeWorld("trr");
    await makeAgent(w, w.alice, "scout");
    await connect(w, w.alice, server.url, { slug: "gh" });
    // Granted without approval: the call goes out in the run itself, not in an approval's job.
    await grant(app, w, "scout", "gh__close_issue", "on");
    llm.setScript(callScript(w, [{ name: "gh__close_issue", params: { number: 31 } }]));
    server.hold();
    const arrived = server.nextCall();
    const first = worker();
    await first.ready;
    const res = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Close #31" });
    const runId = res.location.split("/").pop()!;
    expect(await arrived).toBe("close_issue");
    // Out at the server: its step and its record committed before it left.
    const [out] = await callsOfRun(runId);
    expect(out).toMatchObject({ status: "calling", tool: "gh__close_issue", arguments: { number: 31 } });
    const steps = await testPrisma().subagentTaskRunStep.findMany({ where: { runId, type: "execute" } });
    expect(steps.map((s) => (s.detail as { toolCall?: string }).toolCall)).toEqual([out!.id]);
    expect(await runById(runId)).toMatchObject({ status: "running", attempts: 1 });

    killGroup(first.child, "SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    // The server answers a caller that is gone: nobody records it.
    server.release();
    const from = llm.requests.length;
    const second = worker();
    await second.ready;
    const done = await waitFor(async () => {
      const run = await runById(runId);
      return run.status === "completed" ? run : null;
    }, 60_000);
    killGroup(second.child, "SIGTERM");
    expect(done).toMatchObject({ attempts: 2, stopReason: "finished" });
    expect(server.calls.get("close_issue")).toBe(1);
    const [call, ...more] = await callsOfRun(runId);
    expect(more).toEqual([]);
    expect(call).toMatchObject({ id: out!.id, status: "interrupted", result: "" });
    // The model, resumed, was told: no result, and it may have reached the server.
    const resumed = llm.requests.slice(from).map((r) => JSON.stringify(r.body.messages));
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed.some((m) => m.includes("reached the server at most once"))).toBe(true);
    const page = await app.inject({
      method: "GET",
      url: `/tools?call=${call!.id}`,
      headers: { host: w.host, authorization: `Bearer ${w.alice.token}`, accept: "text/markdown" },
    });
    expect(page.body).toContain("interrupted: the worker running it stopped before the server answered");
  });
});
