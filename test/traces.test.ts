// OpenTelemetry traces of agent runs, received by a real OTLP/HTTP receiver in this process
// (helpers/otlp-receiver.ts decodes what the SDK's exporter sends): the span tree of a run
// with an action, an approval wait and a retried model call, across the two jobs the run
// takes; the run linked to the request that queued it; tenants' spans apart; a receiver
// that goes away mid-run costs the run nothing. Real Postgres, Redis, workers, fake LLM.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flushTracing, startTracing, stopTracing } from "../src/lib/telemetry.ts";
import { failingOnce, runById } from "./helpers/agent-scripts.ts";
import { type AgentEnv, startAgents, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, md, waitFor } from "./helpers/app.ts";
import {
  type Harness,
  noteStep,
  planScript,
  review,
  runTask,
  setupAgent,
  waitPending,
} from "./helpers/approvals.ts";
import { type OtlpReceiver, type ReceivedSpan, startReceiver } from "./helpers/otlp-receiver.ts";

let app: FastifyInstance;
let env: AgentEnv;
let rx: OtlpReceiver;
beforeAll(async () => {
  rx = await startReceiver();
  await startTracing({
    endpoint: rx.url,
    headers: { authorization: "Bearer collector-token" },
    serviceName: "cadre-test",
    scheduledDelayMs: 50,
  });
  app = await buildTestApp();
  env = await startAgents("traces");
});
afterAll(async () => {
  await env.close();
  await app.close();
  await stopTracing();
  await rx.stop();
});

const h: Harness = { app: () => app, env: () => env };

/** Every span of the run's trace, once its `invoke_agent` spans have all arrived. */
async function traceOf(runId: string, jobs: number): Promise<ReceivedSpan[]> {
  await flushTracing();
  const roots = await waitFor(async () => {
    await flushTracing();
    const found = rx.spans.filter((s) => s.attributes["cadre.run.id"] === runId);
    return found.length >= jobs ? found : null;
  }, 10_000);
  return rx.spans.filter((s) => s.traceId === roots[0]!.traceId);
}

const children = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
  spans.filter((s) => s.parentSpanId === parent.spanId);

describe("traces of a run", () => {
  it("one trace: invoke_agent per job, chat and execute_tool under it, the retry, the approval wait, the request it came from", async () => {
    const { w, scout, notePath } = await setupAgent(
      h,
      { requires_approval: ["create_note"], approval_mode: "wait" },
      () => [],
    );
    env.llm.setScript(
      failingOnce(
        planScript([{ path: notePath, action: "add_comment", params: { text: "Looks fine" } }, noteStep]),
      ),
    );
    const runId = await runTask(h, w);
    await waitForRun(scout.id, (s) => s === "waiting");
    const p = await waitPending(scout.id);
    expect((await review(app, w, w.alice, "approve_action", { id: p.id })).statusCode).toBe(200);
    expect((await waitForRun(scout.id)).status).toBe("completed");

    const spans = await traceOf(runId, 2);
    const agents = spans.filter((s) => s.name === "invoke_agent scout");
    expect(agents).toHaveLength(2);
    const [first, second] = agents.sort((a, b) => (a.parentSpanId ? 1 : 0) - (b.parentSpanId ? 1 : 0));
    // The first job starts the run's trace; the job after the approval continues it.
    expect(first!.parentSpanId).toBeUndefined();
    expect(second!.parentSpanId).toBe(first!.spanId);
    expect(first!.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "scout",
      "gen_ai.agent.id": scout.id,
      "cadre.run.trigger": "manual",
      "cadre.tenant.id": w.tenant.id,
      "cadre.run.outcome": "waiting",
      "cadre.run.stop_reason": "awaiting_approval",
    });
    expect(first!.events.map((e) => e.name)).toContain("cadre.approval.wait");
    expect(second!.attributes).toMatchObject({ "cadre.run.outcome": "completed" });
    expect(second!.events.map((e) => e.name)).toContain("cadre.run.resumed");
    expect(first!.service).toBe("cadre-test");
    expect(rx.headers.at(-1)?.authorization).toBe("Bearer collector-token");
    expect((await runById(runId)).traceparent).toContain(first!.spanId);

    // Linked to the request that queued it: the run form's POST, a server span of its own trace.
    const [link] = first!.links;
    const request = rx.spans.find((s) => s.spanId === link?.spanId);
    expect(request).toMatchObject({ kind: 2, attributes: { "http.request.method": "POST" } });
    expect(request!.name).toMatch(/^POST \/subagents\/:?\w+\/run/);

    // Model calls: the first one retried after the 500, as an event on its span.
    const chats = spans.filter((s) => s.name === "chat fake-model");
    expect(chats.every((c) => c.parentSpanId === first!.spanId || c.parentSpanId === second!.spanId)).toBe(
      true,
    );
    const retried = chats.filter((c) => c.events.some((e) => e.name === "cadre.llm.attempt_failed"));
    expect(retried).toHaveLength(1);
    expect(retried[0]!.events[0]!.attributes).toEqual({ "http.response.status_code": 500 });
    for (const c of chats)
      expect(c.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai_compatible",
        "gen_ai.request.model": "fake-model",
        "gen_ai.response.model": expect.any(String),
        "gen_ai.usage.input_tokens": expect.any(Number),
        "gen_ai.usage.output_tokens": expect.any(Number),
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": 0,
        "cadre.usage.cost_usd": expect.any(Number),
        "gen_ai.response.finish_reasons": ["tool_calls"],
      });

    // Actions and navigations: the policy's decision and the rule that made it.
    const tools = [...children(spans, first!), ...children(spans, second!)].filter((s) =>
      s.name.startsWith("execute_tool "),
    );
    const comment = tools.find((s) => s.name === "execute_tool add_comment");
    expect(comment?.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "add_comment",
      "cadre.policy.decision": "allow",
      "cadre.policy.rule": "default",
      "cadre.tool.ok": true,
    });
    const note = tools.find((s) => s.name === "execute_tool create_note");
    expect(note?.attributes).toMatchObject({
      "cadre.policy.decision": "approve",
      "cadre.policy.rule": "requires_approval",
    });
    expect(note?.events).toEqual([
      {
        name: "cadre.approval.requested",
        attributes: { "cadre.approval.id": p.id, "cadre.policy.rule": "requires_approval" },
      },
    ]);
    expect(tools.filter((s) => s.name === "execute_tool navigate").length).toBeGreaterThanOrEqual(2);

    // No message content unless an operator asks for it (traces-content.test.ts).
    const keys = spans.flatMap((s) => Object.keys(s.attributes));
    expect(keys.filter((k) => /messages|arguments/.test(k))).toEqual([]);
  });

  it("a mention's run links to the request that wrote the comment, through the event and its job", async () => {
    const { w, scout, notePath } = await setupAgent(h, {}, (path) => [
      { path, action: "add_comment", params: { text: "On it" } },
    ]);
    const res = await md(app, w, w.alice, "POST", `${notePath}/actions/add_comment`, {
      text: "@scout can you look?",
    });
    expect(res.statusCode).toBeLessThan(400);
    const run = await waitForRun(scout.id);
    expect(run.triggerKind).toBe("mention");
    const root = (await traceOf(run.id, 1)).find((s) => s.name === "invoke_agent scout" && !s.parentSpanId)!;
    const request = rx.spans.find((s) => s.spanId === root.links[0]?.spanId);
    expect(request?.name).toMatch(/^POST \/studios\/:studio\/notes\/:note/);
    // The event's job is a child of that request too.
    expect(rx.spans.some((s) => s.name === "process events" && s.parentSpanId === request!.spanId)).toBe(
      true,
    );
  });

  it("two tenants' runs at once: each trace carries its own tenant's ids only", async () => {
    const a = await setupAgent(h, {}, (path) => [{ path, action: "add_comment", params: { text: "A" } }]);
    const b = await setupAgent(h, {}, (path) => [{ path, action: "add_comment", params: { text: "B" } }]);
    // One script for both worlds: each request's prompt names its own note.
    env.llm.setScript((req) => {
      const which = JSON.stringify(req.messages).includes(a.w.tenant.name) ? a : b;
      return planScript([{ path: which.notePath, action: "add_comment", params: { text: "hi" } }])(req);
    });
    const [runA, runB] = await Promise.all([runTask(h, a.w), runTask(h, b.w)]);
    await Promise.all([waitForRun(a.scout.id), waitForRun(b.scout.id)]);
    const [ta, tb] = await Promise.all([traceOf(runA, 1), traceOf(runB, 1)]);
    const ids = (x: typeof a, run: string) => [x.w.tenant.id, x.scout.id, run, x.w.alice.id, x.notePath];
    const text = (spans: ReceivedSpan[]) => JSON.stringify(spans.map((s) => [s.attributes, s.events]));
    for (const id of ids(b, runB)) expect(text(ta)).not.toContain(id);
    for (const id of ids(a, runA)) expect(text(tb)).not.toContain(id);
    expect(
      ta
        .filter((s) => s.attributes["cadre.tenant.id"])
        .every((s) => s.attributes["cadre.tenant.id"] === a.w.tenant.id),
    ).toBe(true);
    expect(
      tb
        .filter((s) => s.attributes["cadre.tenant.id"])
        .every((s) => s.attributes["cadre.tenant.id"] === b.w.tenant.id),
    ).toBe(true);
  });

  it("the receiver stops mid-run: the run goes on at its pace and ends well; spans flow again once it is back", async () => {
    const { w, scout, notePath } = await setupAgent(h, {}, () => []);
    const plan = planScript([
      { path: notePath, action: "add_comment", params: { text: "one" } },
      { path: notePath, action: "add_comment", params: { text: "two" } },
    ]);
    let calls = 0;
    env.llm.setScript(async (req) => {
      calls += 1;
      // The collector goes away after the run's first call, and its port refuses connections.
      if (calls === 2) await rx.stop();
      return plan(req);
    });
    const t0 = Date.now();
    const runId = await runTask(h, w);
    const run = await waitForRun(scout.id);
    expect(run.status).toBe("completed");
    // Five model calls and two actions in well under a second on a quiet machine: the
    // exporter's 5 s timeout against the absent collector is nowhere on the run's path (a
    // busy machine may be slow, but not by an exporter's timeout per span).
    expect(run.completedAt!.getTime() - run.startedAt!.getTime()).toBeLessThan(5000);
    expect(Date.now() - t0).toBeLessThan(15_000);
    await flushTracing().catch(() => undefined);
    expect(rx.spans.some((s) => s.attributes["cadre.run.id"] === runId)).toBe(false);
    await rx.start();
    const again = await setupAgent(h, {}, (path) => [
      { path, action: "add_comment", params: { text: "back" } },
    ]);
    const next = await runTask(h, again.w);
    await waitForRun(again.scout.id);
    expect((await traceOf(next, 1)).length).toBeGreaterThan(3);
  });
});
