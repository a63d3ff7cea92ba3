// The navigator's loop decisions, driven in memory: a scripted model and ports that keep
// what they are given (test/helpers/navigator-ports.ts). No server, Postgres or Redis: the
// end-to-end runs (agent-runs, one-tool-call, typed-tools…) stay the proof through the stack.
import { describe, expect, it } from "vitest";
import { MAX_INVALID_IN_A_ROW } from "../src/services/agents/runtime/decisions.ts";
import type { ModelCall } from "./helpers/navigator-ports.ts";
import { textReply, toolCall, toolCalls } from "./helpers/navigator-ports.ts";
import { runInMemory } from "./helpers/navigator-run.ts";

const userText = (call: ModelCall) =>
  call.messages
    .filter((message) => message.role === "user")
    .map((message) => String(message.content))
    .join("\n");

const stepTypes = (steps: { number: number; type: string }[]) =>
  steps.map((step) => `${step.number}:${step.type}`);

describe("the navigator's loop, in memory", () => {
  it("records /whoami as step 1, navigates, and finishes with the model's message", async () => {
    const world = await runInMemory({
      script: [toolCall("navigate", { path: "/studios/ops" }), toolCall("finish", { message: "All tidy." })],
    });
    expect(world.finish).toEqual({ status: "completed", stopReason: "finished", finalMessage: "All tidy." });
    expect(stepTypes(world.steps)).toEqual(["1:navigate", "2:navigate", "3:finish"]);
    expect(world.steps[0]).toMatchObject({ path: "/whoami", detail: { auto: true, resultPath: "/whoami" } });
    expect(world.steps[1]).toMatchObject({ path: "/studios/ops", detail: { ok: true, status: 200 } });
    // The finish happened where the run was: on the page it navigated to.
    expect(world.steps[2]).toMatchObject({ path: "/studios/ops", detail: { message: "All tidy." } });
    // One ledger row per call, numbered as the step it became.
    expect(world.charges.map((charge) => charge.stepNumber)).toEqual([2, 3]);
    // Each call's step keeps the fingerprint of the prompt it answered.
    expect(world.steps[2]!.prompt?.hash).toBe(world.calls[1]!.request.prompt.fingerprint);
    expect(userText(world.calls[1]!)).toContain("# Current page: /studios/ops");
    const recorded = world.events.filter((event) => event.type === "step_recorded");
    expect(recorded).toHaveLength(3);
    expect(world.events.filter((event) => event.type === "decided")).toHaveLength(2);
  });

  it("asks its owner and waits for the answer", async () => {
    const world = await runInMemory({ script: [toolCall("ask_owner", { question: "Which studio?" })] });
    expect(world.finish).toEqual({ status: "waiting", stopReason: "asked_owner", question: "Which studio?" });
    expect(world.steps.at(-1)).toMatchObject({ type: "ask_owner", path: "/whoami" });
  });

  it("runs an action on its page, its step made in the action's transaction, and reads where it led", async () => {
    const world = await runInMemory({
      script: [
        toolCall("navigate", { path: "/studios/ops" }),
        toolCall("execute_action", { action: "add_comment", params: { text: "hi" }, reason: "asked to" }),
        toolCall("finish", { message: "Commented." }),
      ],
      outcome: () => ({ notice: "Comment added.", location: "/whoami" }),
    });
    expect(world.finish.status).toBe("completed");
    expect(world.acted).toHaveLength(1);
    expect(world.acted[0]).toMatchObject({ path: "/studios/ops", action: "add_comment", stepNumber: 3 });
    expect(world.steps[2]).toMatchObject({
      number: 3,
      type: "execute",
      detail: { ok: true, action: "add_comment", notice: "Comment added.", resultPath: "/whoami" },
    });
    // Charged before the action, whose transaction may roll back: the row carries no step.
    expect(world.charges.map((charge) => charge.stepNumber)).toEqual([2, 3, 4]);
    expect(world.steps[3]).toMatchObject({ type: "finish", path: "/whoami" });
  });

  it("tells the model which actions a page has when it names another, and runs none", async () => {
    const world = await runInMemory({
      script: [
        toolCall("execute_action", { action: "add_comment", params: {} }),
        (call) => {
          expect(userText(call)).toContain("`add_comment` is not an action on /whoami. Actions here: none.");
          return toolCall("finish", { message: "ok" });
        },
      ],
    });
    expect(world.finish.status).toBe("completed");
    expect(world.acted).toEqual([]);
    expect(world.steps[1]).toMatchObject({ type: "execute", detail: { ok: false, action: "add_comment" } });
  });

  it("feeds a refused action's page back to the model and goes on", async () => {
    const world = await runInMemory({
      script: [
        toolCall("navigate", { path: "/studios/ops" }),
        toolCall("execute_action", { action: "delete_studio", params: {} }),
        (call) => {
          expect(userText(call)).toContain("Only the studio's admins may delete it.");
          return toolCall("finish", { message: "Could not." });
        },
      ],
      outcome: () => new Error("Only the studio's admins may delete it."),
    });
    expect(world.finish.status).toBe("completed");
    expect(world.steps[2]).toMatchObject({ type: "execute", detail: { ok: false, status: 403 } });
  });

  it("waits for an approval when its action was queued for one", async () => {
    const world = await runInMemory({
      script: [
        toolCall("navigate", { path: "/studios/ops" }),
        toolCall("execute_action", { action: "delete_studio", params: {} }),
      ],
      outcome: (request) => ({
        notice: "Queued.",
        location: request.path,
        pending: { id: "p1", waits: true },
      }),
    });
    expect(world.finish).toEqual({
      status: "waiting",
      stopReason: "awaiting_approval",
      question: "Waiting for approval of #p1: delete_studio",
    });
    expect(world.steps.at(-1)).toMatchObject({ type: "execute", detail: { pending: "p1" } });
  });

  it("feeds malformed output back to the model, and a valid reply resets the count", async () => {
    const world = await runInMemory({
      script: [
        textReply("I would like to look around."),
        textReply("still no tool call"),
        toolCall("navigate", { path: "/studios/ops" }),
        textReply("again no tool call"),
        toolCall("finish", { message: "done" }),
      ],
    });
    expect(world.finish.status).toBe("completed");
    expect(stepTypes(world.steps)).toEqual([
      "1:navigate",
      "2:error",
      "3:error",
      "4:navigate",
      "5:error",
      "6:finish",
    ]);
    expect(world.steps[1]!.detail).toMatchObject({
      ok: false,
      reply: expect.stringContaining("look around"),
    });
    // The next prompt carries what was wrong with the reply before; a valid one clears it.
    expect(world.steps[2]!.prompt?.feedback).toBe(world.steps[1]!.detail.error);
    expect(userText(world.calls[1]!)).toContain(String(world.steps[1]!.detail.error));
    expect(world.steps[3]!.prompt?.feedback).toBe(world.steps[2]!.detail.error);
    expect(world.steps[5]!.prompt?.feedback).toBe(world.steps[4]!.detail.error);
    expect(world.steps[4]!.prompt?.feedback).toBeUndefined();
  });

  it(`fails after ${MAX_INVALID_IN_A_ROW} malformed replies in a row`, async () => {
    const world = await runInMemory({ script: Array(MAX_INVALID_IN_A_ROW).fill(textReply("no tool call")) });
    expect(world.finish).toMatchObject({ status: "failed", stopReason: "invalid_output" });
    expect(world.finish.error).toContain(`${MAX_INVALID_IN_A_ROW} times in a row`);
    expect(world.calls).toHaveLength(MAX_INVALID_IN_A_ROW);
    expect(world.charges).toHaveLength(MAX_INVALID_IN_A_ROW);
  });

  it("runs only the first of several tool calls in one reply, and tells the model the rest were not", async () => {
    const world = await runInMemory({
      script: [
        toolCalls(["navigate", { path: "/studios/ops" }], ["finish", { message: "done too early" }]),
        (call) => {
          expect(userText(call)).toContain("Only your first tool call was run");
          expect(userText(call)).toContain("`finish`");
          return toolCall("finish", { message: "done" });
        },
      ],
    });
    expect(world.finish).toMatchObject({ status: "completed", finalMessage: "done" });
    expect(world.steps[1]).toMatchObject({ type: "navigate", unrun: ["finish"] });
  });
});
