// The LLM client's fetch over node:http, through the real `openai` SDK and the fake LLM:
// what the SDK needs of a fetch — statuses and headers for its retries, aborts it can
// tell from timeouts, connection failures it can retry — must survive the swap.
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIUserAbortError,
  BadRequestError,
  RateLimitError,
} from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { createNodeFetch, nodeFetch } from "../src/services/agents/runtime/http-fetch.ts";

let llm: FakeLlm;
beforeAll(async () => {
  llm = await startFakeLlm();
});
afterAll(() => llm.close());

const client = (o: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ baseURL: llm.url, apiKey: "sk-test", maxRetries: 0, fetch: nodeFetch, ...o });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ask = (c: OpenAI, signal?: AbortSignal) =>
  c.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }, { signal });

describe("connections per endpoint (LLM_MAX_CONNECTIONS)", () => {
  /**
   * How many of `n` calls the fake model was answering at once, at most. Each call is held
   * until `expected` calls are open at once (however slow the machine is to open them), then
   * a little longer, so that a fetch letting more through than it should is seen doing so.
   */
  async function mostAtOnce(fetch: typeof nodeFetch, n: number, expected: number) {
    let open = 0;
    let most = 0;
    let reached: () => void = () => {};
    const full = new Promise<void>((resolve) => {
      reached = resolve;
    });
    llm.setScript(async () => {
      most = Math.max(most, ++open);
      if (open >= expected) reached();
      // The bound only keeps a broken limit from hanging the test: it then fails on `most`.
      await Promise.race([full, sleep(30_000)]);
      await sleep(100);
      open--;
      return { tool: { name: "finish", args: { message: "ok" } } };
    });
    await Promise.all(Array.from({ length: n }, () => ask(client({ fetch, timeout: 60_000 }))));
    return most;
  }

  it("unset, every call has a connection of its own; set, calls past it wait for one", async () => {
    expect(await mostAtOnce(createNodeFetch(), 40, 40)).toBe(40);
    expect(await mostAtOnce(createNodeFetch(3), 12, 3)).toBe(3);
  }, 120_000);
});

describe("nodeFetch under the openai SDK", () => {
  it("sends the body and headers and reads the completion back", async () => {
    llm.setScript([{ tool: { name: "finish", args: { message: "ok" } } }]);
    const res = await ask(client());
    expect(res.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: "finish" } });
    const sent = llm.requests.at(-1)!;
    expect(sent.headers.authorization).toBe("Bearer sk-test");
    expect(sent.body.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("passes statuses and headers through: a 429 with Retry-After is retried, then succeeds", async () => {
    llm.setScript([
      { status: 429, headers: { "retry-after": "0" } },
      { tool: { name: "finish", args: { message: "second" } } },
    ]);
    const res = await ask(client({ maxRetries: 1 }));
    expect(res.choices[0]?.message.tool_calls?.[0]?.type).toBe("function");
    llm.setScript([{ status: 429, headers: { "retry-after": "0" } }]);
    await expect(ask(client())).rejects.toBeInstanceOf(RateLimitError);
  });

  it("an error's body and headers reach the SDK's error", async () => {
    llm.setScript([
      { status: 400, content: "model `m` does not exist", headers: { "x-request-id": "req_1" } },
    ]);
    const err = await ask(client()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).message).toContain("model `m` does not exist");
    expect((err as BadRequestError).requestID).toBe("req_1");
  });

  it("reads a buffered body as text, JSON or bytes, and keeps repeated headers", async () => {
    llm.setScript([{ tool: { name: "finish", args: { message: "é ✓" } } }]);
    const init = { method: "POST", body: JSON.stringify({ model: "m", messages: [] }) };
    const res = await nodeFetch(`${llm.url}/chat/completions`, init);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const text = await res.text();
    expect(JSON.parse(text).choices[0].message.tool_calls[0].function.arguments).toContain("é ✓");
    llm.setScript([{ tool: { name: "finish", args: { message: "again" } } }]);
    const again = await nodeFetch(`${llm.url}/chat/completions`, init);
    const bytes = new Uint8Array(await again.arrayBuffer());
    expect(JSON.parse(new TextDecoder().decode(bytes))).toEqual(await again.json());

    const server = createHttpServer((_req, r) => {
      r.setHeader("set-cookie", ["a=1", "b=2"]);
      r.end("plain");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as { port: number };
    try {
      const plain = await nodeFetch(`http://127.0.0.1:${port}/`);
      expect(plain.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
      expect(await plain.text()).toBe("plain");
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("an abort from the caller cancels the request in flight", async () => {
    llm.setScript([{ hang: true }]);
    const controller = new AbortController();
    const before = llm.requests.length;
    const asked = ask(client(), controller.signal);
    // Aborted once the fake holds it, so the abort meets a request in flight, not one unsent.
    // The fake never answers: only the abort can end the call (or the test times out).
    while (llm.requests.length === before) await sleep(10);
    controller.abort();
    await expect(asked).rejects.toBeInstanceOf(APIUserAbortError);
  });

  it("the SDK's own timeout is reported as a timeout, not an abort", async () => {
    llm.setScript([{ hang: true }]);
    await expect(ask(client({ timeout: 100 }))).rejects.toBeInstanceOf(APIConnectionTimeoutError);
  });

  it("a closed port is a connection error the SDK can retry", async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const { port } = probe.address() as { port: number };
    await new Promise((r) => probe.close(r));
    const c = new OpenAI({
      baseURL: `http://127.0.0.1:${port}/v1`,
      apiKey: "x",
      maxRetries: 0,
      fetch: nodeFetch,
    });
    const err = await ask(c).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(err).not.toBeInstanceOf(APIConnectionTimeoutError);
  });

  it("refuses what it cannot send instead of sending something else", async () => {
    await expect(nodeFetch("ftp://example.invalid/")).rejects.toThrow(/unsupported protocol/);
    await expect(
      nodeFetch(`${llm.url}/chat/completions`, { method: "POST", body: new Blob(["x"]) }),
    ).rejects.toThrow(/string or byte bodies/);
  });
});
