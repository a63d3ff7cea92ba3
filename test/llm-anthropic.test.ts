// The LLM client against Anthropic's Messages API, through the real `@anthropic-ai/sdk` over
// HTTP to the fake Anthropic server: the body it sends (breakpoints, blocks, masking), the
// reply it reads from the stream, the prompt cache's usage step after step, and each
// failure's kind. Runs end to end are in anthropic-runs.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type FakeAnthropic, startFakeAnthropic } from "../src/dev/fake-anthropic.ts";
import { TOOLS } from "../src/services/agents/prompt/protocol.ts";
import { memoryBlocks } from "../src/services/agents/runtime/cache-blocks.ts";
import { createLlmClient, encodePrompt, type LlmError } from "../src/services/agents/runtime/llm.ts";
import type { Endpoint } from "../src/services/money/keys.ts";
import { fakeKey } from "./helpers/keys.ts";

let fake: FakeAnthropic;
let endpoint: Endpoint;
const key = fakeKey("sk-ant");
beforeAll(async () => {
  fake = await startFakeAnthropic();
  endpoint = { baseURL: fake.url, apiKey: key, provider: "anthropic" };
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.cache.clear();
  fake.setAcceptedKeys(null);
  fake.setMissingModels([]);
});

const client = createLlmClient({ timeoutMs: 2_000, maxRetries: 2 });
const finish = { tool: { name: "finish", args: { message: "done" } } };
// Long enough to be cached (1024 tokens of ~4 characters).
const SYSTEM = `You are an agent of the workspace. ${"Follow the house rules. ".repeat(200)}`;
const memory = (n: number) =>
  Array.from({ length: n }, (_, i) => `${i + 1}. navigated to /p/${i + 1}`).join("\n");
/** The prompt as the navigator will shape it: the stable part (task and memory), then this step's part. */
const messages = (steps: number, page = "# Current page: /p") => [
  { role: "system" as const, content: SYSTEM },
  { role: "user" as const, content: `# Task\n\nTidy up.\n\n# Your steps so far\n\n${memory(steps)}` },
  { role: "user" as const, content: `${page}\n\nYou have ${10 - steps} steps left.` },
];
const ask = (
  m = messages(1),
  opts: { onText?: (t: string) => void; signal?: AbortSignal; json?: boolean } = {},
) =>
  client(endpoint, {
    prompt: encodePrompt(
      { model: "claude-sonnet-4-5", messages: m, jsonMode: opts.json ?? false },
      "anthropic",
    ),
    signal: opts.signal ?? new AbortController().signal,
    ...(opts.onText && { onText: opts.onText }),
  });
const lastBody = () => fake.requests.at(-1)!.body;
const marked = (blocks: { cache_control?: unknown }[] | undefined) =>
  (blocks ?? []).flatMap((b, i) => (b.cache_control ? [i] : []));

describe("the request", () => {
  it("memory lines are blocks that join to the text exactly, and a step's blocks begin the next step's", () => {
    const text = `# Task\n\nDo 1. this\n\n# Steps\n\n1. read /a\n2. wrote a note\n   10. not a line start\n3. done`;
    const blocks = memoryBlocks(text);
    expect(blocks.join("")).toBe(text);
    expect(blocks.map((b) => b.slice(0, 3))).toEqual(["# T", "\n1.", "\n2.", "\n3."]);
    expect(memoryBlocks("no lines")).toEqual(["no lines"]);
    expect(memoryBlocks("")).toEqual([]);
    // Lines joined by a newline, or each ending with one: either way the next step's text
    // goes on from a block boundary of this one's, which is where its cache entry is.
    for (const end of ["", "\n"]) {
      const step = (n: number) => `# Task\n\nTidy.\n\n${memory(n)}${end}`;
      for (let n = 1; n < 4; n++) {
        const [now, next] = [memoryBlocks(step(n)), memoryBlocks(step(n + 1))];
        expect(next.slice(0, now.length)).toEqual(now);
        expect(next).toHaveLength(now.length + 1);
      }
    }
  });

  it("has breakpoints on the last tool, the system and the stable part; one user turn; no key", async () => {
    fake.setScript([finish]);
    await ask(messages(3));
    const body = lastBody();
    expect(body).toMatchObject({
      model: "claude-sonnet-4-5",
      max_tokens: 4096,
      stream: true,
      tool_choice: { type: "auto", disable_parallel_tool_use: true },
    });
    expect(body.tools!.map((t) => t.name)).toEqual(
      TOOLS.map((t) => t.type === "function" && t.function.name),
    );
    expect(body.tools![0]).toHaveProperty("input_schema.type", "object");
    expect(marked(body.tools)).toEqual([TOOLS.length - 1]);
    expect(marked(body.system as { cache_control?: unknown }[])).toEqual([0]);
    expect(body.messages).toHaveLength(1);
    const turn = body.messages[0]!.content as { text: string; cache_control?: unknown }[];
    // Task, 3 memory lines, then this step's part: the breakpoint on the last memory line.
    expect(turn).toHaveLength(5);
    expect(marked(turn)).toEqual([3]);
    expect(turn.map((b) => b.text).join("")).toBe(messages(3)[1]!.content + messages(3)[2]!.content);
    expect(fake.requests.at(-1)!.raw).not.toContain(key);
    expect(fake.requests.at(-1)!.headers.authorization).toBe(`Bearer ${key}`);
  });

  it("one user message (buildPrompt's shape): its stable part in blocks, the breakpoint at its end; without one, none", async () => {
    fake.setScript([finish, finish]);
    const [system, stable, step] = messages(2);
    const user = { role: "user" as const, content: `${stable!.content}\n\n${step!.content}` };
    const prompt = { model: "claude-sonnet-4-5", messages: [system!, user], jsonMode: false };
    const send = (p: Parameters<typeof encodePrompt>[0]) =>
      client(endpoint, { prompt: encodePrompt(p, "anthropic"), signal: new AbortController().signal });
    await send({ ...prompt, stableChars: stable!.content.length });
    const turn = lastBody().messages[0]!.content as { text: string; cache_control?: unknown }[];
    // Task, 2 memory lines, then this step's part: the breakpoint on the last memory line.
    expect(turn.map((b) => b.text).join("")).toBe(user.content);
    expect(turn).toHaveLength(4);
    expect(marked(turn)).toEqual([2]);
    expect(turn[3]!.text.startsWith("\n\n# Current page")).toBe(true);
    await send(prompt);
    expect(marked(lastBody().messages[0]!.content as { cache_control?: unknown }[])).toEqual([]);
    expect(marked(lastBody().tools)).toEqual([TOOLS.length - 1]);
  });

  it("masks secrets as for OpenAI, with the same fingerprint; JSON mode sends no tools", async () => {
    const secret = `sk-proj-${"a1B2c3D4".repeat(5)}`;
    const m = messages(1, `# Current page: /p\n\nkey: ${secret}`);
    const prompt = { model: "claude-sonnet-4-5", messages: m, jsonMode: false };
    const [openai, anthropic] = [encodePrompt(prompt), encodePrompt(prompt, "anthropic")];
    expect(anthropic.fingerprint).toBe(openai.fingerprint);
    expect(anthropic.masked).toEqual(openai.masked);
    expect(anthropic.body.toString()).not.toContain(secret);
    fake.setScript([{ content: '{"type":"finish","message":"ok"}' }]);
    const r = await ask(m, { json: true });
    expect(r.message.content).toBe('{"type":"finish","message":"ok"}');
    expect(lastBody()).not.toHaveProperty("tools");
    expect(lastBody()).not.toHaveProperty("tool_choice");
    expect((lastBody().system as { text: string }[]).at(-1)!.text).toContain(
      "Answer with exactly one JSON object",
    );
  });
});

describe("the reply", () => {
  it("a tool_use block is the tool call; text reaches onText as it grows", async () => {
    fake.setScript([{ content: "I will tidy up now.", tool: { name: "navigate", args: { path: "/p/2" } } }]);
    const seen: string[] = [];
    const r = await ask(messages(1), { onText: (t) => seen.push(t) });
    expect(r.message.tool_calls).toEqual([
      { id: "toolu_0_0", type: "function", function: { name: "navigate", arguments: '{"path":"/p/2"}' } },
    ]);
    expect(r.message.content).toBe("I will tidy up now.");
    expect(seen).toEqual(["I ", "I will ", "I will tidy ", "I will tidy up ", "I will tidy up now."]);
    expect(r).toMatchObject({ responseModel: "claude-sonnet-4-5", finishReason: "tool_use" });
  });

  it("usage: the first step writes the stable prefix, the next reads it though a memory line was appended", async () => {
    fake.setScript(Array.from({ length: 3 }, () => finish));
    const first = await ask(messages(1));
    const second = await ask(messages(2, "# Current page: /p/2"));
    const third = await ask(messages(3, "# Current page: /p/3"));
    const [u1, u2, u3] = fake.requests.slice(-3).map((r) => r.usage!);
    expect(u1!.cache_read_input_tokens).toBe(0);
    expect(u1!.cache_creation_input_tokens).toBeGreaterThan(1024);
    // Step 2 reads all of step 1's entry (its last memory line's boundary, one block back) and writes one line more.
    expect(u2!.cache_read_input_tokens).toBe(u1!.cache_creation_input_tokens);
    expect(u2!.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(u2!.cache_creation_input_tokens).toBeLessThan(20);
    expect(u3!.cache_read_input_tokens).toBe(u2!.cache_read_input_tokens + u2!.cache_creation_input_tokens);
    // The ledger's convention: input counts all of it, cached the reads, cacheWrite the writes.
    for (const [r, u] of [
      [first, u1],
      [second, u2],
      [third, u3],
    ] as const)
      expect(r.usage).toEqual({
        input: u!.input_tokens + u!.cache_creation_input_tokens + u!.cache_read_input_tokens,
        cached: u!.cache_read_input_tokens,
        cacheWrite: u!.cache_creation_input_tokens,
        output: u!.output_tokens,
      });
  });

  it("a prefix that changed misses: a different system prompt writes anew", async () => {
    fake.setScript([finish, finish]);
    await ask(messages(1));
    const m = messages(2);
    m[0] = { role: "system", content: `${SYSTEM} One more rule.` };
    await ask(m);
    expect(fake.requests.at(-1)!.usage!.cache_read_input_tokens).toBe(0);
  });
});

describe("failures", () => {
  const kindOf = async (script: Parameters<FakeAnthropic["setScript"]>[0], model?: string) => {
    fake.setScript(script);
    const m = messages(1);
    const e = await client(endpoint, {
      prompt: encodePrompt(
        { model: model ?? "claude-sonnet-4-5", messages: m, jsonMode: false },
        "anthropic",
      ),
      signal: new AbortController().signal,
    }).catch((err: LlmError) => err);
    return e as LlmError;
  };
  const fast = { "retry-after-ms": "5" };

  it("401 is auth, and the key it echoes is cut out", async () => {
    const e = await kindOf([{ status: 401, content: `invalid x-api-key ${key}` }]);
    expect(e.kind).toBe("auth");
    expect(e.message).toContain("invalid x-api-key [key]");
    expect(e.message).not.toContain(key);
  });

  it("404 (an unknown model) is not_found; 400 bad_request", async () => {
    fake.setMissingModels(["claude-nope"]);
    expect((await kindOf([finish], "claude-nope")).kind).toBe("not_found");
    expect((await kindOf([{ status: 400, content: "max_tokens: too large" }])).kind).toBe("bad_request");
  });

  it("429 with retry-after is retried by the SDK; 500 and 529 still failing after the retries are server", async () => {
    const before = fake.requests.length;
    fake.setScript([{ status: 429, headers: { "retry-after": "0.01" } }, finish]);
    expect((await ask()).message.tool_calls).toHaveLength(1);
    expect(fake.requests.length - before).toBe(2);
    expect((await kindOf(Array.from({ length: 3 }, () => ({ status: 529, headers: fast })))).kind).toBe(
      "server",
    );
    expect((await kindOf(Array.from({ length: 3 }, () => ({ status: 500, headers: fast })))).kind).toBe(
      "server",
    );
    expect((await kindOf([{ ...finish, streamError: "overloaded_error" }])).kind).toBe("server");
  });

  it("a stream that goes quiet times out; a stop aborts", async () => {
    expect((await kindOf([{ ...finish, chunkDelayMs: 2_500 }])).kind).toBe("timeout");
    fake.setScript([{ ...finish, delayMs: 3_000 }]);
    const stop = new AbortController();
    const pending = ask(messages(1), { signal: stop.signal }).catch((e: LlmError) => e);
    setTimeout(() => stop.abort(), 100);
    expect(((await pending) as LlmError).kind).toBe("aborted");
  });
});
