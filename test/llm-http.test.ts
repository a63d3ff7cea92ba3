// The OpenAI-compatible call without the SDK's request path (llm-http.ts), against the fake
// model over real HTTP: the reply read from its stream, and the SDK's retry and error rules.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import {
  createLlmClient,
  encodePrompt,
  type LlmError,
  type LlmOptions,
} from "../src/services/agents/runtime/llm.ts";

let llm: FakeLlm;
beforeAll(async () => {
  llm = await startFakeLlm();
});
afterAll(() => llm.close());

const KEY = "sk-live-secret-0123456789";
const prompt = encodePrompt({ model: "m", messages: [{ role: "user", content: "hi" }], jsonMode: false });

function ask(opts: Partial<LlmOptions> = {}, signal = new AbortController().signal) {
  const client = createLlmClient({ timeoutMs: 5_000, maxRetries: 2, ...opts });
  return client({ baseURL: llm.url, apiKey: KEY }, { prompt, signal });
}
const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: LlmError) => e,
  );
const sent = () => llm.requests.length;

describe("llm-http: a call over node:http", () => {
  it("reads a streamed tool call and the usage with cached tokens, sending the key and the body as encoded", async () => {
    llm.setScript([
      {
        tool: { name: "navigate", args: { path: "/studios/general" } },
        content: "Looking around.",
        usage: { prompt_tokens: 1200, completion_tokens: 9, cached_tokens: 1024 },
      },
    ]);
    const before = sent();
    const res = await ask();
    expect(res.message.tool_calls?.[0]).toMatchObject({
      type: "function",
      function: { name: "navigate", arguments: JSON.stringify({ path: "/studios/general" }) },
    });
    expect(res.message.content).toBe("Looking around.");
    expect(res.usage).toEqual({ input: 1200, output: 9, cached: 1024 });
    expect(res.finishReason).toBe("tool_calls");
    const req = llm.requests[before]!;
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req.headers["x-stainless-retry-count"]).toBe("0");
    expect(req.body).toEqual(JSON.parse(prompt.body.toString("utf8")));
  });

  it("a 429 with Retry-After waits that long, then retries and succeeds", async () => {
    llm.setScript([
      { status: 429, headers: { "retry-after": "0.3" }, content: "slow down" },
      { tool: { name: "finish", args: { message: "ok" } } },
    ]);
    const before = sent();
    const t0 = performance.now();
    const res = await ask();
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(res.message.tool_calls?.[0]).toMatchObject({ function: { name: "finish" } });
    expect(sent() - before).toBe(2);
    expect(llm.requests[before + 1]!.headers["x-stainless-retry-count"]).toBe("1");
  });

  it("500s until the retries run out: a server error naming the status and what it said", async () => {
    llm.setScript(() => ({ status: 500, content: "upstream exploded", headers: { "retry-after-ms": "5" } }));
    const before = sent();
    const err = await failure(ask({ maxRetries: 2 }));
    expect(err.kind).toBe("server");
    expect(err.message).toMatch(/LLM endpoint answered 500: .*upstream exploded/);
    expect(sent() - before).toBe(3);
  });

  it("x-should-retry: false is not retried, whatever the status", async () => {
    llm.setScript(() => ({ status: 503, headers: { "x-should-retry": "false" } }));
    const before = sent();
    expect((await failure(ask())).kind).toBe("server");
    expect(sent() - before).toBe(1);
  });

  it("a 401 is an auth error, not retried, and its message never carries the key", async () => {
    llm.setScript([{ status: 401, content: `Incorrect API key provided: ${KEY}` }]);
    const before = sent();
    const err = await failure(ask());
    expect(err.kind).toBe("auth");
    expect(err.message).toContain("401");
    expect(err.message).not.toContain(KEY);
    expect(sent() - before).toBe(1);
  });

  it("an endpoint that never answers times out each attempt, then the call", async () => {
    llm.setScript(() => ({ hang: true }));
    const before = sent();
    const err = await failure(ask({ timeoutMs: 150, maxRetries: 1 }));
    expect(err.kind).toBe("timeout");
    expect(sent() - before).toBe(2);
  });

  it("a stream that stops sending times out", async () => {
    llm.setScript([{ content: "one two three", chunkDelayMs: 400 }]);
    const err = await failure(ask({ timeoutMs: 150, maxRetries: 0 }));
    expect(err.kind).toBe("timeout");
  });

  it("a stream whose chunks keep coming within the idle limit is read to its end, however long it takes", async () => {
    llm.setScript([{ chunks: ["one ", "two ", "three ", "four ", "five"], chunkDelayMs: 100 }]);
    const reply = await ask({ timeoutMs: 250, maxRetries: 0 });
    expect(reply.message.content).toBe("one two three four five");
  });

  it("a stop during a retry's wait ends the call at once", async () => {
    llm.setScript([{ status: 429, headers: { "retry-after": "30" } }]);
    const run = new AbortController();
    const before = sent();
    const pending = failure(ask({}, run.signal));
    while (sent() === before) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    run.abort(new Error("stopped"));
    const err = await pending;
    expect(err.kind).toBe("aborted");
    // Seconds, not the 30 s the server asked to wait: a busy machine may take a while to say it.
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(sent() - before).toBe(1);
  });

  it("an endpoint nobody listens on is a network error after its retries", async () => {
    const client = createLlmClient({ timeoutMs: 2_000, maxRetries: 1 });
    const err = await failure(
      client(
        { baseURL: "http://127.0.0.1:9/v1", apiKey: KEY },
        { prompt, signal: new AbortController().signal },
      ),
    );
    expect(err.kind).toBe("network");
    expect(err.message).not.toContain(KEY);
  });
});
