// createLlmClient over the fake LLM: a run hands every call the same signal, so a call
// must leave nothing attached to it, and a stop must still reach the call in flight.
import { getEventListeners } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { createLlmClient, encodePrompt, type LlmError } from "../src/services/agents/runtime/llm.ts";

let llm: FakeLlm;
beforeAll(async () => {
  llm = await startFakeLlm();
});
afterAll(() => llm.close());

const client = createLlmClient({ timeoutMs: 5_000, maxRetries: 1 });
const ask = (signal: AbortSignal) =>
  client(
    { baseURL: llm.url, apiKey: "sk-test" },
    {
      prompt: encodePrompt({ model: "m", messages: [{ role: "user", content: "hi" }], jsonMode: false }),
      signal,
    },
  );
const finish = { tool: { name: "finish", args: { message: "ok" } } };

describe("the LLM client", () => {
  it("calls that share a run's signal leave no listener on it, retried or not", async () => {
    const run = new AbortController();
    llm.setScript([
      ...Array.from({ length: 12 }, () => finish),
      { status: 429, headers: { "retry-after": "0" } },
      finish,
    ]);
    for (let i = 0; i < 13; i++) await ask(run.signal);
    expect(llm.requests.length).toBeGreaterThanOrEqual(14);
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
  });

  it("a stop on the run's signal aborts the call in flight, and a stopped signal calls nothing", async () => {
    const run = new AbortController();
    llm.setScript([{ ...finish, delayMs: 5_000 }]);
    const before = llm.requests.length;
    const pending = ask(run.signal).catch((e: LlmError) => e);
    await new Promise((r) => setTimeout(r, 100));
    run.abort(new Error("stopped by owner"));
    const err = (await pending) as LlmError;
    expect(err.kind).toBe("aborted");
    expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
    expect(((await ask(run.signal).catch((e: LlmError) => e)) as LlmError).kind).toBe("aborted");
    expect(llm.requests.length).toBe(before + 1);
  });
});
