// A real HTTP server speaking Anthropic's Messages API (`POST /v1/messages`, streamed or not,
// and `GET /v1/models`), scripted per test like fake-llm.ts, whose reply shapes it takes
// (`tool`, `content`, `status`…). The app reaches it through the real `@anthropic-ai/sdk`.
//
// Its usage simulates Anthropic's prompt cache from the breakpoints a request carries
// (prompt-cache.ts): tests see cache writes, then reads, exactly when Anthropic's rules
// would give them, and a prompt whose prefix drifts between steps is seen to miss.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FakeReply } from "./fake-llm.ts";
import { type MessagesRequest, PromptCache } from "./prompt-cache.ts";

export type { MessagesRequest };

export interface AnthropicRecorded {
  headers: IncomingMessage["headers"];
  body: MessagesRequest;
  /** The body as it came over the wire (leak tests grep it). */
  raw: string;
  /** What the simulated cache made of it; absent when the request was refused before. */
  usage?: Usage;
  at: number;
}

interface Usage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

/** fake-llm.ts's reply, plus an error `type` for a scripted status, and an `error` event mid-stream. */
export type AnthropicReply = FakeReply & { errorType?: string; streamError?: string };
export type AnthropicScript = AnthropicReply[] | ((req: MessagesRequest, count: number) => AnthropicReply);

export interface FakeAnthropic {
  /** As an Anthropic key stores it: the base the SDK adds `/v1/messages` to, plus `/v1`. */
  url: string;
  requests: AnthropicRecorded[];
  cache: PromptCache;
  setScript(script: AnthropicScript): void;
  /** Only these keys are accepted (401 otherwise); null accepts any. */
  setAcceptedKeys(keys: string[] | null): void;
  setModels(models: string[]): void;
  /** A request for one of these is a 404 `not_found_error`, as Anthropic answers an unknown model. */
  setMissingModels(models: string[]): void;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

function sendError(res: ServerResponse, status: number, message: string, type?: string, headers = {}) {
  res
    .writeHead(status, { "content-type": "application/json", ...headers })
    .end(
      JSON.stringify({ type: "error", error: { type: type ?? ERROR_TYPES[status] ?? "api_error", message } }),
    );
}

/** The reply's content blocks, as Anthropic's message has them. */
function contentOf(reply: AnthropicReply, requestIndex: number) {
  const blocks: Record<string, unknown>[] = [];
  if (reply.content) blocks.push({ type: "text", text: reply.content });
  const calls = reply.tools ?? (reply.tool ? [reply.tool] : []);
  for (const [callIndex, call] of calls.entries())
    blocks.push({
      type: "tool_use",
      id: `toolu_${requestIndex}_${callIndex}`,
      name: call.name,
      input: typeof call.args === "string" ? JSON.parse(call.args) : call.args,
    });
  return blocks;
}

const outputTokens = (content: unknown[]) => Math.max(5, Math.ceil(JSON.stringify(content).length / 4));
const stopOf = (content: Record<string, unknown>[]) =>
  content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";

/** The text in pieces of a few words, as a model streams it. */
const pieces = (text: string) => text.match(/\S*\s*/g)?.filter(Boolean) ?? [];

/** The events Anthropic streams: message_start, each block's start, deltas and stop, message_delta, message_stop. */
async function stream(
  res: ServerResponse,
  req: MessagesRequest,
  reply: AnthropicReply,
  usage: Usage,
  requestIndex: number,
) {
  const content = contentOf(reply, requestIndex);
  const send = async (event: string, data: Record<string, unknown>) => {
    if (reply.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, reply.chunkDelayMs));
    if (!res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  };
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers });
  // The headers at once, as Anthropic sends them: a slow first event is the stream's idleness, not the request's.
  res.flushHeaders();
  const message = {
    id: `msg_fake_${requestIndex}`,
    type: "message",
    role: "assistant",
    model: req.model,
    content: [],
  };
  await send("message_start", {
    message: { ...message, stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
  });
  if (reply.streamError) {
    await send("error", { error: { type: reply.streamError, message: "fake error mid-stream" } });
    res.end();
    return;
  }
  for (const [index, block] of content.entries()) {
    if (block.type === "text") {
      await send("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const text of reply.chunks ?? pieces(String(block.text)))
        await send("content_block_delta", { index, delta: { type: "text_delta", text } });
    } else {
      await send("content_block_start", { index, content_block: { ...block, input: {} } });
      const json = JSON.stringify(block.input);
      const half = Math.ceil(json.length / 2);
      for (const partial_json of [json.slice(0, half), json.slice(half)])
        await send("content_block_delta", { index, delta: { type: "input_json_delta", partial_json } });
    }
    await send("content_block_stop", { index });
  }
  await send("message_delta", {
    delta: { stop_reason: stopOf(content), stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  await send("message_stop", {});
  res.end();
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** What a running fake holds: its script and settings (the test changes them), and what it saw. */
interface FakeState {
  script: AnthropicScript;
  /** Requests answered from the script so far: the next one's index in it. */
  answered: number;
  accepted: string[] | null;
  listed: string[];
  missing: Set<string>;
  requests: AnthropicRecorded[];
  cache: PromptCache;
  hanging: Set<ServerResponse>;
}

function sendModels(res: ServerResponse, listed: string[]) {
  const data = listed.map((id) => ({
    type: "model",
    id,
    display_name: id,
    created_at: "2026-01-01T00:00:00Z",
  }));
  res.writeHead(200, { "content-type": "application/json" }).end(
    JSON.stringify({
      data,
      has_more: false,
      first_id: listed[0] ?? null,
      last_id: listed.at(-1) ?? null,
    }),
  );
}

/** A whole (not streamed) message. */
function sendMessage(
  res: ServerResponse,
  body: MessagesRequest,
  reply: AnthropicReply,
  usage: Usage,
  index: number,
) {
  const content = contentOf(reply, index);
  res.writeHead(200, { "content-type": "application/json", ...reply.headers }).end(
    JSON.stringify({
      id: `msg_fake_${index}`,
      type: "message",
      role: "assistant",
      model: body.model,
      content,
      stop_reason: stopOf(content),
      stop_sequence: null,
      usage,
    }),
  );
}

function nextReply(state: FakeState, body: MessagesRequest): { index: number; reply: AnthropicReply } {
  const index = state.answered++;
  const script = state.script;
  const reply: AnthropicReply =
    typeof script === "function"
      ? script(body, index)
      : (script[index] ?? { status: 500, content: "fake Anthropic: script exhausted" });
  return { index, reply };
}

async function handleRequest(state: FakeState, req: IncomingMessage, res: ServerResponse) {
  // Anthropic reads `x-api-key`; the SDK (1.x) sends the key as a Bearer token: either is the key.
  const key =
    (req.headers["x-api-key"] as string | undefined) ??
    /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
  if (state.accepted && !(key && state.accepted.includes(key)))
    return sendError(res, 401, "invalid x-api-key");
  const path = new URL(req.url ?? "/", "http://x").pathname;
  if (req.method === "GET" && path === "/v1/models") return sendModels(res, state.listed);
  if (req.method !== "POST" || path !== "/v1/messages") return sendError(res, 404, `no route ${path}`);
  const raw = await readBody(req);
  const body = JSON.parse(raw) as MessagesRequest;
  const recorded: AnthropicRecorded = { headers: req.headers, body, raw, at: Date.now() };
  state.requests.push(recorded);
  // Before the script: a missing model or a malformed request takes no turn of it, as Anthropic answers before any model runs.
  if (state.missing.has(body.model)) return sendError(res, 404, `model: ${body.model}`);
  const tokens = state.cache.use(`${key}\n${body.model}`, body);
  if ("error" in tokens) return sendError(res, 400, tokens.error);
  const { index, reply } = nextReply(state, body);
  const usage = {
    ...tokens,
    output_tokens: reply.usage?.completion_tokens ?? outputTokens(contentOf(reply, index)),
  };
  recorded.usage = usage;
  if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
  if (reply.hang) {
    state.hanging.add(res);
    res.on("close", () => state.hanging.delete(res));
    return;
  }
  if (reply.status && reply.status >= 400)
    return sendError(
      res,
      reply.status,
      reply.content ?? `fake error ${reply.status}`,
      reply.errorType,
      reply.headers,
    );
  if (body.stream) return stream(res, body, reply, usage, index);
  sendMessage(res, body, reply, usage, index);
}

/** What a test holds: the fake's address, what it saw, and its settings. */
function fakeAnthropicHandle(state: FakeState, server: Server, url: string): FakeAnthropic {
  return {
    url,
    requests: state.requests,
    cache: state.cache,
    setScript(anthropicScript) {
      state.script = anthropicScript;
      state.answered = 0;
    },
    setAcceptedKeys(keys) {
      state.accepted = keys;
    },
    setModels(models) {
      state.listed = models;
    },
    setMissingModels(models) {
      state.missing = new Set(models);
    },
    async close() {
      for (const res of state.hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function startFakeAnthropic(opts: { script?: AnthropicScript } = {}): Promise<FakeAnthropic> {
  const state: FakeState = {
    script: opts.script ?? [],
    answered: 0,
    accepted: null,
    listed: ["claude-sonnet-4-5"],
    missing: new Set<string>(),
    requests: [],
    cache: new PromptCache(),
    hanging: new Set<ServerResponse>(),
  };
  const server = createServer((req, res) => {
    handleRequest(state, req, res).catch((err) => sendError(res, 500, String(err)));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return fakeAnthropicHandle(state, server, `http://127.0.0.1:${port}/v1`);
}
