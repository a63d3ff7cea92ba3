// A model's reply read as it streams (`stream: true`): the text it writes arrives a few
// characters at a time and is handed to `onText` as it grows (the run page shows it live),
// tool calls are put together from their pieces, and the usage comes in the last chunk
// (`stream_options.include_usage`), so the ledger counts exactly what it did without
// streaming. llm-http.ts makes the request, with the SDK's retries, backoff and error
// classes up to the first byte of the reply; the server-sent events are read here, as the
// SDK's Stream read them (an `error` in a chunk is an APIError without a status). An
// endpoint that answers a streamed request with a plain completion (some proxies do) is
// read as one.
import type http from "node:http";
import { APIError, APIUserAbortError } from "openai";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessage,
  ChatCompletionMessageFunctionToolCall,
} from "openai/resources/chat/completions";
import type { Usage } from "../../money/pricing.ts";
import type { ChatClient } from "./llm-http.ts";
import { withoutCacheHints } from "./llm-openai-cache.ts";

/** What every request adds to the encoded prompt (encodePrompt). */
export const STREAM_FIELDS = `"stream":true,"stream_options":{"include_usage":true}`;
/** Sent with tools: one tool call per reply (prompt/tool-calls.ts says what happens to the others). */
export const ONE_TOOL_CALL = `"parallel_tool_calls":false`;

export interface Streamed {
  message: ChatCompletionMessage;
  usage: Usage;
  /** The model that answered, as the provider names it, and why it stopped (for traces). */
  model?: string;
  finishReason?: string;
}

type Raw = ChatCompletion["usage"];
/** Reads and writes inside `prompt_tokens`, as the ledger counts them (pricing.ts Usage); GPT-5.6 and later report writes. */
function usageOf(counts: Raw | null | undefined): Usage {
  const written = counts?.prompt_tokens_details?.cache_write_tokens ?? 0;
  return {
    input: counts?.prompt_tokens ?? 0,
    output: counts?.completion_tokens ?? 0,
    cached: counts?.prompt_tokens_details?.cached_tokens ?? 0,
    ...(written > 0 && { cacheWrite: written }),
  };
}

const FLAG = Buffer.from(`,${ONE_TOOL_CALL}`);

/** The request without `parallel_tool_calls`: its last occurrence, after the messages that might quote it. */
function withoutFlag(body: Buffer): Buffer {
  const at = body.lastIndexOf(FLAG);
  return at < 0 ? body : Buffer.concat([body.subarray(0, at), body.subarray(at + FLAG.length)]);
}

/**
 * Fields an OpenAI-compatible endpoint may not know, each left out once it answers a 400
 * naming it: `parallel_tool_calls` (it then answers with one tool call or several: the
 * navigator runs the first either way, and says so) and the prompt-cache hints
 * (llm-openai-cache.ts: the same prompt, cached as the endpoint caches it, or not at all).
 */
const OPTIONAL = [
  { named: /parallel_tool_calls/, strip: withoutFlag },
  { named: /prompt_cache/, strip: withoutCacheHints },
];
type Optional = (typeof OPTIONAL)[number];
/** By endpoint, the fields it refused: asked without them from then on. */
const refusing = new Map<string, Set<Optional>>();

/** Sends `body` and reads the reply, without the fields its endpoint refuses. */
export async function streamCompletion(
  client: ChatClient,
  body: Buffer,
  call: AbortController,
  opts: { idleMs: number; onText?: (text: string) => void },
): Promise<Streamed> {
  const refused = refusing.get(client.baseURL) ?? new Set<Optional>();
  let sent = body;
  for (const optional of refused) sent = optional.strip(sent);
  for (;;) {
    try {
      return await send(client, sent, call, opts);
    } catch (err) {
      const bad = err instanceof APIError && err.status === 400 ? err.message : "";
      const optional = OPTIONAL.find((x) => !refused.has(x) && x.named.test(bad));
      const without = optional?.strip(sent);
      if (!optional || without === sent) throw err;
      refused.add(optional);
      refusing.set(client.baseURL, refused);
      sent = without!;
    }
  }
}

/**
 * Sends `body` (a streaming request's bytes) and reads the reply. `idleMs`: the most the
 * stream may go without a chunk (each attempt's own timeout ends once the reply has started).
 */
async function send(
  client: ChatClient,
  body: Buffer,
  call: AbortController,
  opts: { idleMs: number; onText?: (text: string) => void },
): Promise<Streamed> {
  const reply = await client.post(body, call.signal);
  if (reply.body) {
    // Not streamed after all: the whole completion, as the SDK would have read it.
    const res = JSON.parse(reply.body.toString("utf8")) as ChatCompletion;
    const choice = res.choices?.[0];
    if (!choice?.message) throw new NoChoicesError();
    return {
      message: choice.message,
      usage: usageOf(res.usage),
      model: res.model,
      finishReason: choice.finish_reason ?? undefined,
    };
  }
  return readChunks(reply.res, call, opts);
}

/** What the chunks so far made of the reply. */
class Reply {
  text = "";
  usage: Raw | undefined;
  model: string | undefined;
  finishReason: string | undefined;
  chose = false;
  done = false;
  readonly calls: ChatCompletionMessageFunctionToolCall[] = [];

  constructor(private readonly onText?: (text: string) => void) {}

  /** One event's data: a chunk, `[DONE]`, or an error the endpoint sent instead. */
  add(data: string) {
    if (this.done) return;
    if (data.startsWith("[DONE]")) {
      this.done = true;
      return;
    }
    const chunk = JSON.parse(data) as ChatCompletionChunk & { error?: Record<string, unknown> };
    if (chunk.error) throw new APIError(undefined, chunk.error, undefined, undefined);
    if (chunk.usage) this.usage = chunk.usage;
    this.model ??= chunk.model;
    const choice = chunk.choices?.[0];
    this.finishReason = choice?.finish_reason ?? this.finishReason;
    const delta = choice?.delta;
    if (!delta) return;
    this.chose = true;
    if (delta.content) {
      this.text += delta.content;
      this.onText?.(this.text);
    }
    for (const toolCall of delta.tool_calls ?? []) {
      const partial = this.calls[toolCall.index] ?? {
        id: "",
        type: "function",
        function: { name: "", arguments: "" },
      };
      this.calls[toolCall.index] = partial;
      if (toolCall.id) partial.id = toolCall.id;
      if (toolCall.function?.name) partial.function.name += toolCall.function.name;
      if (toolCall.function?.arguments) partial.function.arguments += toolCall.function.arguments;
    }
  }
}

/**
 * Server-sent events' data, line by line: `data:` lines joined until a blank line ends the
 * event. The other fields (`event:`, `id:`, comments) carry nothing a completion needs.
 */
class EventData {
  private rest = "";
  private data: string[] = [];

  /** Hands `each` the data of every event `chunk` completes. */
  push(chunk: string, each: (data: string) => void) {
    const buffer = this.rest + chunk;
    let at = 0;
    for (let newline = buffer.indexOf("\n"); newline >= 0; newline = buffer.indexOf("\n", at)) {
      const end = newline > at && buffer.charCodeAt(newline - 1) === 13 ? newline - 1 : newline;
      const line = buffer.slice(at, end);
      at = newline + 1;
      if (line === "") {
        if (this.data.length) each(this.data.length === 1 ? this.data[0]! : this.data.join("\n"));
        this.data = [];
      } else if (line.startsWith("data:")) this.data.push(line.slice(line.charCodeAt(5) === 32 ? 6 : 5));
    }
    this.rest = buffer.slice(at);
  }

  /** What a stream that ended without a blank line left. */
  end(each: (data: string) => void) {
    if (this.rest.startsWith("data:"))
      this.data.push(this.rest.slice(this.rest.charCodeAt(5) === 32 ? 6 : 5));
    if (this.data.length) each(this.data.join("\n"));
  }
}

/**
 * Reads the event stream to its end. On the response's events, not its async iterator:
 * the iterator's promises, abort signal and end-of-stream watcher per reply were about 2 %
 * of the worker's CPU. A call aborted meanwhile ends, as the SDK's did, with the abort's
 * reason (an idle stream's IdleError) or APIUserAbortError, never the socket's error.
 */
function readChunks(
  res: http.IncomingMessage,
  call: AbortController,
  opts: { idleMs: number; onText?: (text: string) => void },
): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    const reply = new Reply(opts.onText);
    const events = new EventData();
    const add = (data: string) => reply.add(data);
    let over = false;
    // One timer per reply, restarted by each chunk (a reply comes in dozens of them).
    const idle = setTimeout(() => call.abort(new IdleError(opts.idleMs)), opts.idleMs);
    const arm = () => idle.refresh();
    const finish = (err?: unknown) => {
      if (over) return;
      over = true;
      clearTimeout(idle);
      if (!res.readableEnded) res.destroy();
      if (call.signal.aborted)
        return reject(call.signal.reason instanceof IdleError ? call.signal.reason : new APIUserAbortError());
      if (err !== undefined) return reject(err);
      try {
        resolve(streamed(reply));
      } catch (thrown) {
        reject(thrown);
      }
    };
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      if (over) return;
      arm();
      try {
        events.push(chunk, add);
      } catch (err) {
        finish(err);
      }
    });
    res.on("end", () => {
      try {
        events.end(add);
      } catch (err) {
        return finish(err);
      }
      finish();
    });
    res.on("error", finish);
    res.on("close", () => finish(new Error("Premature close")));
  });
}

function streamed(reply: Reply): Streamed {
  if (!reply.chose) throw new NoChoicesError();
  const toolCalls = reply.calls.filter(Boolean);
  const message: ChatCompletionMessage = {
    role: "assistant",
    content: reply.text || null,
    refusal: null,
    ...(toolCalls.length && { tool_calls: toolCalls }),
  };
  return { message, usage: usageOf(reply.usage), model: reply.model, finishReason: reply.finishReason };
}

/** A stream that stopped sending: a timeout, as the SDK's own would be. */
export class IdleError extends Error {
  constructor(milliseconds: number) {
    super(`the model sent nothing for ${Math.round(milliseconds / 1000)} s`);
  }
}

/** A reply without a choice: a server fault (llm.ts classifies it). */
export class NoChoicesError extends Error {
  constructor() {
    super("the model returned no choices");
  }
}
