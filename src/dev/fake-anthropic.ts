// A real HTTP server speaking Anthropic's Messages API (`POST /v1/messages`, streamed or not,
// and `GET /v1/models`), scripted per test like fake-llm.ts, whose reply shapes it takes
// (`tool`, `content`, `status`…). The app reaches it through the real `@anthropic-ai/sdk`.
//
// Its usage simulates Anthropic's prompt cache from the breakpoints a request carries
// (prompt-cache.ts): tests see cache writes, then reads, exactly when Anthropic's rules
// would give them, and a prompt whose prefix drifts between steps is seen to miss.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
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
function contentOf(reply: AnthropicReply, n: number) {
  const blocks: Record<string, unknown>[] = [];
  if (reply.content) blocks.push({ type: "text", text: reply.content });
  const calls = reply.tools ?? (reply.tool ? [reply.tool] : []);
  for (const [i, t] of calls.entries())
    blocks.push({
      type: "tool_use",
      id: `toolu_${n}_${i}`,
      name: t.name,
      input: typeof t.args === "string" ? JSON.parse(t.args) : t.args,
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
  n: number,
) {
  const content = contentOf(reply, n);
  const send = async (event: string, data: Record<string, unknown>) => {
    if (reply.chunkDelayMs) await new Promise((r) => setTimeout(r, reply.chunkDelayMs));
    if (!res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  };
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers });
  // The headers at once, as Anthropic sends them: a slow first event is the stream's idleness, not the request's.
  res.flushHeaders();
  const message = { id: `msg_fake_${n}`, type: "message", role: "assistant", model: req.model, content: [] };
  await send("message_start", {
    message: { ...message, stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
  });
  if (reply.streamError) {
    await send("error", { error: { type: reply.streamError, message: "fake error mid-stream" } });
    res.end();
    return;
  }
  for (const [index, b] of content.entries()) {
    if (b.type === "text") {
      await send("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const text of reply.chunks ?? pieces(String(b.text)))
        await send("content_block_delta", { index, delta: { type: "text_delta", text } });
    } else {
      await send("content_block_start", { index, content_block: { ...b, input: {} } });
      const json = JSON.stringify(b.input);
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
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startFakeAnthropic(opts: { script?: AnthropicScript } = {}): Promise<FakeAnthropic> {
  let script: AnthropicScript = opts.script ?? [];
  let n = 0;
  let accepted: string[] | null = null;
  let listed = ["claude-sonnet-4-5"];
  let missing = new Set<string>();
  const requests: AnthropicRecorded[] = [];
  const cache = new PromptCache();
  const hanging = new Set<ServerResponse>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // Anthropic reads `x-api-key`; the SDK (1.x) sends the key as a Bearer token: either is the key.
    const key =
      (req.headers["x-api-key"] as string | undefined) ??
      /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (accepted && !(key && accepted.includes(key))) return sendError(res, 401, "invalid x-api-key");
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (req.method === "GET" && path === "/v1/models") {
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
      return;
    }
    if (req.method !== "POST" || path !== "/v1/messages") return sendError(res, 404, `no route ${path}`);
    const raw = await readBody(req);
    const body = JSON.parse(raw) as MessagesRequest;
    const recorded: AnthropicRecorded = { headers: req.headers, body, raw, at: Date.now() };
    requests.push(recorded);
    // Before the script: a missing model or a malformed request takes no turn of it, as Anthropic answers before any model runs.
    if (missing.has(body.model)) return sendError(res, 404, `model: ${body.model}`);
    const tokens = cache.use(`${key}\n${body.model}`, body);
    if ("error" in tokens) return sendError(res, 400, tokens.error);
    const i = n++;
    const reply: AnthropicReply =
      typeof script === "function"
        ? script(body, i)
        : (script[i] ?? { status: 500, content: "fake Anthropic: script exhausted" });
    const content = contentOf(reply, i);
    const usage = { ...tokens, output_tokens: reply.usage?.completion_tokens ?? outputTokens(content) };
    recorded.usage = usage;
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (reply.hang) {
      hanging.add(res);
      res.on("close", () => hanging.delete(res));
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
    if (body.stream) return stream(res, body, reply, usage, i);
    res.writeHead(200, { "content-type": "application/json", ...reply.headers }).end(
      JSON.stringify({
        id: `msg_fake_${i}`,
        type: "message",
        role: "assistant",
        model: body.model,
        content,
        stop_reason: stopOf(content),
        stop_sequence: null,
        usage,
      }),
    );
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => sendError(res, 500, String(err)));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    cache,
    setScript(anthropicScript) {
      script = anthropicScript;
      n = 0;
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
