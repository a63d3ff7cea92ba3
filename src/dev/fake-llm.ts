// A real HTTP server speaking the OpenAI chat-completions protocol, scripted per test
// (or by the demo's scripted behaviour). It is the one boundary Cadre fakes: the app
// reaches it through the real `openai` client, over real sockets.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { cacheHintsFor } from "../services/agents/runtime/llm-openai-cache.ts";
import { type ChatCacheRequest, PromptCache } from "./prompt-cache.ts";

export interface ChatMessage {
  role: string;
  /** Text parts (GPT-5.6's cache breakpoints are on them) reach scripts joined, as one string. */
  content?: string | null;
  tool_calls?: unknown[];
  tool_call_id?: string;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: { type: string; function: { name: string } }[];
  response_format?: { type: string };
  [key: string]: unknown;
}

export interface Recorded {
  headers: IncomingMessage["headers"];
  /** The request, its messages' text parts joined (what scripts see). */
  body: ChatRequest;
  /** The request exactly as it came. */
  wire: ChatRequest;
  at: number;
}

export interface FakeReply {
  /** A tool call the model "chose". */
  tool?: { name: string; args: unknown };
  /** Several tool calls in one reply (a model ignoring `parallel_tool_calls: false`). */
  tools?: { name: string; args: unknown }[];
  /** Streamed requests: the content in these pieces, one chunk each (default: a few words a chunk). */
  chunks?: string[];
  /** Streamed requests: the wait before each chunk. */
  chunkDelayMs?: number;
  /** Plain assistant content (JSON-mode answers, or malformed output). */
  content?: string;
  /** An HTTP error instead of a completion (429, 500, 401…). */
  status?: number;
  headers?: Record<string, string>;
  /** A raw body, sent as is (e.g. broken JSON). */
  raw?: string;
  delayMs?: number;
  /** Never answer: the client must time out or abort. */
  hang?: boolean;
  usage?: {
    prompt_tokens: number;
    /** Absent: about a token per 4 characters of the reply. */
    completion_tokens?: number;
    cached_tokens?: number;
    cache_write_tokens?: number;
  };
}

export type Script = FakeReply[] | ((req: ChatRequest, count: number) => FakeReply | Promise<FakeReply>);

export interface FakeLlm {
  url: string;
  requests: Recorded[];
  setScript(script: Script): void;
  /** The prompt cache of GPT-5.6-family models (prompt-cache.ts), by key and model: their usage is its reads and writes. */
  cache: PromptCache;
  setLatency(milliseconds: number): void;
  /** Only these bearer keys are accepted (401 otherwise), like a real provider; null accepts any. */
  setAcceptedKeys(keys: string[] | null): void;
  /** What `GET /models` lists (default: `fake-model`). */
  setModels(models: string[]): void;
  /** Models a provider does not have: a completion asking for one is a 404 `model_not_found`, as OpenAI answers. */
  setMissingModels(models: string[]): void;
  close(): Promise<void>;
}

/** Tokens as a real tokenizer would roughly count them: ~4 characters each. */
export function estimateTokens(messages: ChatMessage[]): number {
  const chars = messages.reduce(
    (n, m) => n + (m.content?.length ?? 0) + JSON.stringify(m.tool_calls ?? "").length,
    0,
  );
  return Math.ceil(chars / 4);
}

function assistantMessage(reply: FakeReply, requestIndex: number) {
  const message: Record<string, unknown> = { role: "assistant", content: reply.content ?? null };
  const calls = reply.tools ?? (reply.tool ? [reply.tool] : []);
  if (calls.length)
    message.tool_calls = calls.map((call, callIndex) => ({
      id: `call_${requestIndex}${callIndex ? `_${callIndex}` : ""}`,
      type: "function",
      function: {
        name: call.name,
        arguments: typeof call.args === "string" ? call.args : JSON.stringify(call.args),
      },
    }));
  return message;
}

function usageOf(req: ChatRequest, reply: FakeReply, message: Record<string, unknown>) {
  const prompt = reply.usage?.prompt_tokens ?? estimateTokens(req.messages);
  const out = reply.usage?.completion_tokens ?? Math.max(5, Math.ceil(JSON.stringify(message).length / 4));
  const written = reply.usage?.cache_write_tokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: out,
    total_tokens: prompt + out,
    prompt_tokens_details: {
      cached_tokens: reply.usage?.cached_tokens ?? 0,
      ...(written !== undefined && { cache_write_tokens: written }),
    },
  };
}

/** The request as scripts read it: each message's text parts joined into one string. */
function joined(wire: ChatRequest): ChatRequest {
  if (!wire.messages.some((m) => Array.isArray(m.content))) return wire;
  const text = (content: unknown) =>
    Array.isArray(content)
      ? content.map((p: { text?: string }) => p.text ?? "").join("")
      : (content as string | null);
  return { ...wire, messages: wire.messages.map((m) => ({ ...m, content: text(m.content) })) };
}

/** A reply's usage from the simulated cache, unless the script set its own. */
function cachedUsage(cache: PromptCache, scope: string, wire: ChatRequest, reply: FakeReply): FakeReply {
  // GPT-5.6 and later, the models whose caching the client marks with breakpoints.
  if (reply.usage || cacheHintsFor(wire.model) !== "breakpoints") return reply;
  const cacheUsage = cache.useChat(scope, wire as ChatCacheRequest);
  const prompt =
    cacheUsage.input_tokens + cacheUsage.cache_read_input_tokens + cacheUsage.cache_creation_input_tokens;
  return {
    ...reply,
    usage: {
      prompt_tokens: prompt,
      cached_tokens: cacheUsage.cache_read_input_tokens,
      cache_write_tokens: cacheUsage.cache_creation_input_tokens,
    },
  };
}

function completion(req: ChatRequest, reply: FakeReply, requestIndex: number) {
  const message = assistantMessage(reply, requestIndex);
  return {
    id: `chatcmpl-fake-${requestIndex}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: req.model,
    choices: [
      { index: 0, message, finish_reason: message.tool_calls ? "tool_calls" : "stop", logprobs: null },
    ],
    usage: usageOf(req, reply, message),
  };
}

/** The text in pieces of a few words, as a model streams it. */
const pieces = (text: string) => text.match(/\S*\s*/g)?.filter(Boolean) ?? [];

/**
 * The same reply as server-sent chunks, as OpenAI streams it: the role, the content piece by
 * piece, each tool call's name then its arguments in two halves, the finish reason, and
 * (asked for with `stream_options.include_usage`) a last chunk with the usage and no choices.
 */
async function streamCompletion(
  res: ServerResponse,
  req: ChatRequest,
  reply: FakeReply,
  requestIndex: number,
) {
  const message = assistantMessage(reply, requestIndex);
  const base = {
    id: `chatcmpl-fake-${requestIndex}`,
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: req.model,
  };
  const send = async (choices: unknown[], extra: Record<string, unknown> = {}) => {
    if (reply.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, reply.chunkDelayMs));
    if (!res.destroyed) res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
  };
  const delta = (fields: Record<string, unknown>, finish: string | null = null) => [
    { index: 0, delta: fields, finish_reason: finish, logprobs: null },
  ];
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers });
  await send(delta({ role: "assistant", content: "" }));
  for (const piece of reply.chunks ?? pieces(reply.content ?? "")) await send(delta({ content: piece }));
  const calls = (message.tool_calls ?? []) as { id: string; function: { name: string; arguments: string } }[];
  for (const [index, call] of calls.entries()) {
    const half = Math.ceil(call.function.arguments.length / 2);
    await send(
      delta({
        tool_calls: [
          {
            index,
            id: call.id,
            type: "function",
            function: { name: call.function.name, arguments: call.function.arguments.slice(0, half) },
          },
        ],
      }),
    );
    await send(
      delta({ tool_calls: [{ index, function: { arguments: call.function.arguments.slice(half) } }] }),
    );
  }
  await send(delta({}, calls.length ? "tool_calls" : "stop"));
  const opts = req.stream_options as { include_usage?: boolean } | undefined;
  if (opts?.include_usage) await send([], { usage: usageOf(req, reply, message) });
  res.end("data: [DONE]\n\n");
}

/** The scripted reply: raw bytes, an HTTP error, or a completion (streamed when asked). */
async function send(res: ServerResponse, body: ChatRequest, reply: FakeReply, requestIndex: number) {
  if (reply.raw !== undefined) {
    res
      .writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers })
      .end(reply.raw);
  } else if (reply.status && reply.status >= 400) {
    const message = reply.content ?? `fake error ${reply.status}`;
    answer(res, reply.status, { error: { message, type: "fake_error" } }, reply.headers);
  } else if (body.stream) await streamCompletion(res, body, reply, requestIndex);
  else answer(res, 200, completion(body, reply, requestIndex), reply.headers);
}

/** A JSON answer. */
function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** What a running fake holds: its script and settings (the test changes them), and what it saw. */
interface FakeState {
  script: Script;
  latency: number;
  /** Requests answered from the script so far: the next one's index in it. */
  answered: number;
  accepted: string[] | null;
  listed: string[];
  missing: Set<string>;
  requests: Recorded[];
  hanging: Set<ServerResponse>;
  cache: PromptCache;
}

/** A wrong key is a 401, as a real provider answers; the key sent, else. */
function checkKey(state: FakeState, req: IncomingMessage, res: ServerResponse): { bearer?: string } | null {
  const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
  if (!state.accepted || (bearer && state.accepted.includes(bearer))) return { bearer };
  answer(res, 401, {
    error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" },
  });
  return null;
}

/** The script's next reply, its usage from the simulated cache unless the script set its own. */
async function nextReply(state: FakeState, body: ChatRequest, wire: ChatRequest, bearer?: string) {
  const index = state.answered++;
  const script = state.script;
  const scripted: FakeReply =
    typeof script === "function"
      ? await script(body, index)
      : (script[index] ?? { content: "fake LLM: script exhausted", status: 500 });
  return { index, reply: cachedUsage(state.cache, `${bearer}\n${wire.model}`, wire, scripted) };
}

async function handleRequest(state: FakeState, req: IncomingMessage, res: ServerResponse) {
  const key = checkKey(state, req, res);
  if (!key) return;
  if (req.method === "GET" && req.url?.endsWith("/models")) {
    const data = state.listed.map((id) => ({ id, object: "model", owned_by: "cadre" }));
    return answer(res, 200, { object: "list", data });
  }
  if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
    return answer(res, 404, { error: { message: "not found" } });
  }
  const wire = JSON.parse(await readBody(req)) as ChatRequest;
  const body = joined(wire);
  state.requests.push({ headers: req.headers, body, wire, at: Date.now() });
  // Before the script: a missing model takes no turn of it, as a provider answers before any model runs.
  if (state.missing.has(body.model)) {
    const message = `The model \`${body.model}\` does not exist or you do not have access to it.`;
    return answer(res, 404, {
      error: { message, type: "invalid_request_error", code: "model_not_found" },
    });
  }
  const { index, reply } = await nextReply(state, body, wire, key.bearer);
  const delay = reply.delayMs ?? state.latency;
  if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
  if (reply.hang) {
    state.hanging.add(res);
    res.on("close", () => state.hanging.delete(res));
    return;
  }
  await send(res, body, reply, index);
}

/** What a test holds: the fake's address, what it saw, and its settings. */
function fakeLlmHandle(state: FakeState, server: Server, url: string): FakeLlm {
  return {
    url,
    requests: state.requests,
    cache: state.cache,
    setScript(script) {
      state.script = script;
      state.answered = 0;
    },
    setLatency(milliseconds) {
      state.latency = milliseconds;
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

export async function startFakeLlm(
  opts: { script?: Script; latencyMs?: number; port?: number } = {},
): Promise<FakeLlm> {
  const state: FakeState = {
    script: opts.script ?? [],
    latency: opts.latencyMs ?? 0,
    answered: 0,
    accepted: null,
    listed: ["fake-model"],
    missing: new Set<string>(),
    requests: [],
    hanging: new Set<ServerResponse>(),
    cache: new PromptCache(),
  };
  const server = createServer(async (req, res) => {
    try {
      await handleRequest(state, req, res);
    } catch (err) {
      answer(res, 500, { error: { message: String(err) } });
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return fakeLlmHandle(state, server, `http://127.0.0.1:${port}/v1`);
}
