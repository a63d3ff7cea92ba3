// Where the navigator's loop stops or asks again, driven in memory (test/helpers/navigator-ports.ts):
// its step, time and cost limits, stop and pause requests, and a failed model call's
// fallbacks — the next model, JSON mode for an endpoint without tools — or its end.
import { describe, expect, it } from "vitest";
import { LlmError } from "../src/services/agents/runtime/llm.ts";
import { toolCall } from "./helpers/navigator-ports.ts";
import { MODEL, runInMemory } from "./helpers/navigator-run.ts";

const navigateAgain = () => toolCall("navigate", { path: "/studios/ops" });

describe("the navigator's limits, in memory", () => {
  it("stops at its step limit before the call that would pass it", async () => {
    const world = await runInMemory({ maxSteps: 3, script: [navigateAgain(), navigateAgain()] });
    expect(world.finish).toMatchObject({ status: "failed", stopReason: "max_steps" });
    // /whoami is step 1 and counts: two calls make steps 2 and 3, and there is no fourth.
    expect(world.calls).toHaveLength(2);
    expect(world.steps).toHaveLength(3);
  });

  it("does not count a question to its owner or the answer against the step limit", async () => {
    const world = await runInMemory({
      maxSteps: 3,
      previous: [
        { number: 1, type: "navigate", path: "/whoami", detail: { ok: true, resultPath: "/whoami" } },
        { number: 2, type: "ask_owner", path: "/whoami", detail: { question: "Which?" } },
        { number: 3, type: "answer", path: null, detail: { answer: "Ops." } },
      ],
      script: [navigateAgain(), toolCall("finish", { message: "done" })],
    });
    expect(world.finish.status).toBe("completed");
    // A resumed run's claim told no watcher a call is out: its first call is announced.
    expect(world.events[0]).toEqual({ type: "call_started", stepNumber: 4 });
  });

  it("ends at its deadline before calling the model", async () => {
    const world = await runInMemory({ resumable: { deadline: Date.now() - 1 }, script: [] });
    expect(world.finish).toMatchObject({ status: "timed_out", stopReason: "timeout" });
    expect(world.calls).toEqual([]);
  });

  it("ends timed out when its deadline cuts a call short", async () => {
    // The run's own deadline timer, a second away, aborts the call the model is still on.
    const world = await runInMemory({
      resumable: { deadline: Date.now() + 1000 },
      script: [
        (call) =>
          new Promise((_, reject) =>
            call.request.signal.addEventListener("abort", () => reject(new LlmError("aborted", "aborted"))),
          ),
      ],
    });
    expect(world.finish).toMatchObject({ status: "timed_out", stopReason: "timeout" });
    expect(world.charges).toEqual([]);
  });

  it("pauses the agent and ends at its monthly cost limit", async () => {
    const world = await runInMemory({
      agentConfig: { cost_limit_usd: 1 },
      costMicros: 1_000_000,
      script: [navigateAgain()],
    });
    expect(world.finish).toMatchObject({ status: "cancelled", stopReason: "cost_limit" });
    expect(world.pausedAtLimit).toHaveLength(1);
    expect(world.calls).toHaveLength(1);
  });

  it("ends cancelled when its owner stops it, before the next call or during one", async () => {
    const before = new AbortController();
    before.abort("stopped");
    const stoppedFirst = await runInMemory({ stop: before.signal, script: [] });
    expect(stoppedFirst.finish).toMatchObject({ status: "cancelled", stopReason: "stopped_by_owner" });
    expect(stoppedFirst.calls).toEqual([]);

    const during = new AbortController();
    const stoppedInCall = await runInMemory({
      stop: during.signal,
      script: [
        (call) =>
          new Promise((_, reject) => {
            call.request.signal.addEventListener("abort", () => reject(new LlmError("aborted", "aborted")));
            during.abort("stopped");
          }),
      ],
    });
    expect(stoppedInCall.finish).toMatchObject({ status: "cancelled", stopReason: "stopped_by_owner" });
    expect(stoppedInCall.charges).toEqual([]);
  });

  it("pauses at the step boundary when asked, by its row or its heartbeat's signal", async () => {
    const byRow = await runInMemory({ pauseRequested: true, script: [] });
    expect(byRow.finish).toEqual({ status: "paused", stopReason: "paused_by_owner" });
    expect(byRow.calls).toEqual([]);

    const pause = new AbortController();
    const bySignal = await runInMemory({
      pause: pause.signal,
      script: [
        () => {
          // Asked while the model thinks: the step in flight is recorded and charged first.
          pause.abort();
          return navigateAgain();
        },
      ],
    });
    expect(bySignal.finish.status).toBe("paused");
    expect(bySignal.steps.map((step) => step.type)).toEqual(["navigate", "navigate"]);
    expect(bySignal.charges).toHaveLength(1);
  });

  it("asks the agent's next model when its model fails for good, and records which answered", async () => {
    const world = await runInMemory({
      agentConfig: { fallback_models: ["backup-model"] },
      script: [new LlmError("not_found", "no such model"), toolCall("finish", { message: "done" })],
    });
    expect(world.finish.status).toBe("completed");
    expect(world.calls.map((call) => call.model)).toEqual([MODEL, "backup-model"]);
    expect(world.calls[1]!.body.model).toBe("backup-model");
    expect(world.charges.map((charge) => charge.model)).toEqual(["backup-model"]);
    expect(world.steps.at(-1)).toMatchObject({ type: "finish", model: "backup-model" });
    // Retried with no row between: watchers are told the second call is out.
    expect(world.events).toContainEqual({ type: "call_started", stepNumber: 2 });
    expect(world.events).toContainEqual({
      type: "warning",
      fields: { from: MODEL, to: "backup-model", kind: "not_found" },
      message: "model failed; falling back to the next model",
    });
  });

  it("fails with the model's error when no fallback is left", async () => {
    const world = await runInMemory({
      agentConfig: { fallback_models: ["backup-model"] },
      script: [new LlmError("server", "upstream down"), new LlmError("server", "still down")],
    });
    expect(world.finish).toEqual({ status: "failed", stopReason: "llm_error", error: "still down" });
    expect(world.calls).toHaveLength(2);
  });

  it("asks for JSON when the endpoint takes no tools, and reads a JSON decision", async () => {
    const world = await runInMemory({
      script: [
        new LlmError("no_tools", "tools are not supported"),
        (call) => {
          expect(call.body.tools).toBeUndefined();
          expect(call.body.response_format).toEqual({ type: "json_object" });
          return { role: "assistant", content: '{"type":"finish","message":"done"}', refusal: null };
        },
      ],
    });
    expect(world.finish).toMatchObject({ status: "completed", finalMessage: "done" });
    expect(world.calls[0]!.body.tools).toBeDefined();
    expect(world.steps.at(-1)!.prompt).toMatchObject({ json: true });
  });

  it("fails when the endpoint takes no tools even in JSON mode", async () => {
    const world = await runInMemory({
      script: [new LlmError("no_tools", "no tools"), new LlmError("no_tools", "no tools, really")],
    });
    expect(world.finish).toEqual({ status: "failed", stopReason: "llm_error", error: "no tools, really" });
  });

  it("marks the owner's key failed when the provider refuses it", async () => {
    const world = await runInMemory({ keyId: "key_1", script: [new LlmError("auth", "Invalid API key.")] });
    expect(world.finish).toMatchObject({ status: "failed", stopReason: "llm_auth" });
    expect(world.finish.error).toContain(
      "The provider refused the API key Work key (…test): Invalid API key.",
    );
    expect(world.failedKeys).toEqual(["key_1"]);
  });
});
