// Traces from the worker as production runs it: its own process (src/worker.ts), configured
// by OTEL_EXPORTER_OTLP_ENDPOINT alone, with no active context following async calls (the
// worker passes its spans explicitly, traces.test.ts runs in-process with the context on).
// The span tree must be the same: chat and execute_tool spans under the run's invoke_agent,
// a retried model call as an event on its chat span. Real Postgres, Redis, fake LLM over HTTP.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { failingOnce, runById } from "./helpers/agent-scripts.ts";
import { makeAgent } from "./helpers/agents.ts";
import { act, fileDatabaseUrl, makeWorld, waitFor } from "./helpers/app.ts";
import { planScript } from "./helpers/approvals.ts";
import { type OtlpReceiver, startReceiver } from "./helpers/otlp-receiver.ts";
import { endWorkers, killGroup, spawnWorker } from "./helpers/workers.ts";

let rx: OtlpReceiver;
let llm: FakeLlm;
const prefix = `${inject("queuePrefix")}-traces-process`;
beforeAll(async () => {
  [rx, llm] = await Promise.all([startReceiver(), startFakeLlm()]);
});
afterAll(async () => {
  await endWorkers(prefix);
  await Promise.all([rx.stop(), llm.close()]);
});

describe("traces from a worker process", () => {
  it("chat and execute_tool spans sit under the run's invoke_agent, the retry on its chat span", {
    timeout: 60_000,
  }, async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const note = await act(w, w.alice, "/studios/general", "create_note", {
      title: "Plan",
      text: "Check it.",
    });
    llm.setScript(
      failingOnce(
        planScript([{ path: note.location, action: "add_comment", params: { text: "Looks fine" } }]),
      ),
    );
    const worker = spawnWorker({
      databaseUrl: fileDatabaseUrl(),
      llmUrl: llm.url,
      prefix,
      // The standard variable for the batch's delay, which the SDK reads: spans arrive while the worker runs.
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
        OTEL_SERVICE_NAME: "cadre-worker-test",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      },
    });
    await worker.ready;
    const res = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Comment on the plan." });
    const runId = res.location.split("/").pop()!;
    await waitFor(async () => ((await runById(runId)).status === "completed" ? true : null), 30_000);
    const spans = await waitFor(async () => {
      const mine = rx.spans.filter((s) => s.service === "cadre-worker-test");
      return mine.some((s) => s.attributes["cadre.run.id"] === runId) ? mine : null;
    }, 20_000);
    killGroup(worker.child, "SIGTERM");
    const root = spans.find((s) => s.name === "invoke_agent scout")!;
    expect(root.parentSpanId).toBeUndefined();
    expect(root.attributes).toMatchObject({ "cadre.run.outcome": "completed", "gen_ai.agent.id": scout.id });
    const trace = spans.filter((s) => s.traceId === root.traceId);
    const under = trace.filter((s) => s.parentSpanId === root.spanId);
    const chats = under.filter((s) => s.name === "chat fake-model");
    expect(chats.length).toBeGreaterThanOrEqual(3);
    expect(trace.filter((s) => s.name.startsWith("chat "))).toHaveLength(chats.length);
    const retried = chats.filter((c) => c.events.some((e) => e.name === "cadre.llm.attempt_failed"));
    expect(retried).toHaveLength(1);
    expect(chats.every((c) => Number(c.attributes["gen_ai.usage.input_tokens"]) > 0)).toBe(true);
    const comment = under.find((s) => s.name === "execute_tool add_comment");
    expect(comment?.attributes).toMatchObject({ "cadre.policy.decision": "allow", "cadre.tool.ok": true });
    expect(trace.filter((s) => s.name.startsWith("execute_tool "))).toHaveLength(
      under.filter((s) => s.name.startsWith("execute_tool ")).length,
    );
  });
});
