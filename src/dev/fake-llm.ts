// A real HTTP server speaking the OpenAI chat-completions protocol, scripted per test
// (or by the demo's scripted behaviour). It is the one boundary Cadre fakes: the app
// reaches it through the real `openai` client, over real sockets.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
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

function assistantMessage(reply: FakeReply, n: number) {
  const message: Record<string, unknown> = { role: "assistant", content: reply.content ?? null };
  const calls = reply.tools ?? (reply.tool ? [reply.tool] : []);
  if (calls.length)
    message.tool_calls = calls.map((t, i) => ({
      id: `call_${n}${i ? `_${i}` : ""}`,
      type: "function",
      function: {
        name: t.name,
        arguments: typeof t.args === "string" ? t.args : JSON.stringify(t.args),
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
  const text = (c: unknown) =>
    Array.isArray(c) ? c.map((p: { text?: string }) => p.text ?? "").join("") : (c as string | null);
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

function completion(req: ChatRequest, reply: FakeReply, n: number) {
  const message = assistantMessage(reply, n);
  return {
    id: `chatcmpl-fake-${n}`,
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
async function streamCompletion(res: ServerResponse, req: ChatRequest, reply: FakeReply, n: number) {
  const message = assistantMessage(reply, n);
  const base = {
    id: `chatcmpl-fake-${n}`,
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: req.model,
  };
  const send = async (choices: unknown[], extra: Record<string, unknown> = {}) => {
    if (reply.chunkDelayMs) await new Promise((r) => setTimeout(r, reply.chunkDelayMs));
    if (!res.destroyed) res.write(`data: ${JSON.stringify({ ...base, choices, ...extra })}\n\n`);
  };
  const delta = (d: Record<string, unknown>, finish: string | null = null) => [
    { index: 0, delta: d, finish_reason: finish, logprobs: null },
  ];
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers });
  await send(delta({ role: "assistant", content: "" }));
  for (const piece of reply.chunks ?? pieces(reply.content ?? "")) await send(delta({ content: piece }));
  const calls = (message.tool_calls ?? []) as { id: string; function: { name: string; arguments: string } }[];
  for (const [index, c] of calls.entries()) {
    const half = Math.ceil(c.function.arguments.length / 2);
    await send(
      delta({
        tool_calls: [
          {
            index,
            id: c.id,
            type: "function",
            function: { name: c.function.name, arguments: c.function.arguments.slice(0, half) },
          },
        ],
      }),
    );
    await send(delta({ tool_calls: [{ index, function: { arguments: c.function.arguments.slice(half) } }] }));
  }
  await send(delta({}, calls.length ? "tool_calls" : "stop"));
  const opts = req.stream_options as { include_usage?: boolean } | undefined;
  if (opts?.include_usage) await send([], { usage: usageOf(req, reply, message) });
  res.end("data: [DONE]\n\n");
}

/** The scripted reply: raw bytes, an HTTP error, or a completion (streamed when asked). */
async function send(res: ServerResponse, body: ChatRequest, reply: FakeReply, i: number) {
  if (reply.raw !== undefined) {
    res
      .writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers })
      .end(reply.raw);
  } else if (reply.status && reply.status >= 400) {
    const message = reply.content ?? `fake error ${reply.status}`;
    answer(res, reply.status, { error: { message, type: "fake_error" } }, reply.headers);
  } else if (body.stream) await streamCompletion(res, body, reply, i);
  else answer(res, 200, completion(body, reply, i), reply.headers);
}

/** A JSON answer. */
function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startFakeLlm(
  opts: { script?: Script; latencyMs?: number; port?: number } = {},
): Promise<FakeLlm> {
  let script: Script = opts.script ?? [];
  let latency = opts.latencyMs ?? 0;
  let n = 0;
  let accepted: string[] | null = null;
  let listed = ["fake-model"];
  let missing = new Set<string>();
  const requests: Recorded[] = [];
  const hanging = new Set<ServerResponse>();
  const cache = new PromptCache();

  const server = createServer(async (req, res) => {
    try {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      if (accepted && !(bearer && accepted.includes(bearer))) {
        return answer(res, 401, {
          error: {
            message: "Incorrect API key provided",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        });
      }
      if (req.method === "GET" && req.url?.endsWith("/models")) {
        const data = listed.map((id) => ({ id, object: "model", owned_by: "cadre" }));
        return answer(res, 200, { object: "list", data });
      }
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        return answer(res, 404, { error: { message: "not found" } });
      }
      const wire = JSON.parse(await readBody(req)) as ChatRequest;
      const body = joined(wire);
      requests.push({ headers: req.headers, body, wire, at: Date.now() });
      // Before the script: a missing model takes no turn of it, as a provider answers before any model runs.
      if (missing.has(body.model)) {
        const message = `The model \`${body.model}\` does not exist or you do not have access to it.`;
        return answer(res, 404, {
          error: { message, type: "invalid_request_error", code: "model_not_found" },
        });
      }
      const i = n++;
      const scripted: FakeReply =
        typeof script === "function"
          ? await script(body, i)
          : (script[i] ?? { content: "fake LLM: script exhausted", status: 500 });
      const reply = cachedUsage(cache, `${bearer}\n${wire.model}`, wire, scripted);
      const delay = reply.delayMs ?? latency;
      if (delay) await new Promise((r) => setTimeout(r, delay));
      if (reply.hang) {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
        return;
      }
      await send(res, body, reply, i);
    } catch (err) {
      answer(res, 500, { error: { message: String(err) } });
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    cache,
    setScript(s) {
      script = s;
      n = 0;
    },
    setLatency(ms) {
      latency = ms;
    },
    setAcceptedKeys(keys) {
      accepted = keys;
    },
    setModels(models) {
      listed = models;
    },
    setMissingModels(models) {
      missing = new Set(models);
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
