// A model's reply read as it streams (`stream: true`): the text it writes arrives a few
// characters at a time and is handed to `onText` as it grows (the run page shows it live),
// tool calls are put together from their pieces, and the usage comes in the last chunk
// (`stream_options.include_usage`), so the ledger counts exactly what it did without
// streaming. The SDK still makes the request: its retries, backoff and error classes apply
// up to the first byte of the reply, as before. An endpoint that answers a streamed request
// with a plain completion (some proxies do) is read as one.
import { APIError, APIUserAbortError, type OpenAI } from "openai";
import type { Stream } from "openai/core/streaming";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessage,
  ChatCompletionMessageFunctionToolCall,
} from "openai/resources/chat/completions";
import type { Usage } from "../../money/pricing.ts";

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
const usageOf = (u: Raw | null | undefined): Usage => ({
  input: u?.prompt_tokens ?? 0,
  output: u?.completion_tokens ?? 0,
  cached: u?.prompt_tokens_details?.cached_tokens ?? 0,
});

// Endpoints that refused `parallel_tool_calls` (a 400 naming it): asked without it from then on.
const refusing = new Set<string>();
const FLAG = Buffer.from(`,${ONE_TOOL_CALL}`);

/** The request without `parallel_tool_calls`: its last occurrence, after the messages that might quote it. */
function withoutFlag(body: Buffer): Buffer {
  const at = body.lastIndexOf(FLAG);
  return at < 0 ? body : Buffer.concat([body.subarray(0, at), body.subarray(at + FLAG.length)]);
}

/**
 * Sends `body` and reads the reply; an endpoint that does not know `parallel_tool_calls`
 * is asked again without it (it then answers with one tool call or several: the navigator
 * runs the first either way, and says so).
 */
export async function streamCompletion(
  client: OpenAI,
  body: Buffer,
  call: AbortController,
  opts: { idleMs: number; onText?: (text: string) => void },
): Promise<Streamed> {
  const plain = refusing.has(client.baseURL);
  try {
    return await send(client, plain ? withoutFlag(body) : body, call, opts);
  } catch (err) {
    const refused = err instanceof APIError && err.status === 400 && /parallel_tool_calls/.test(err.message);
    if (!refused || plain || body.lastIndexOf(FLAG) < 0) throw err;
    refusing.add(client.baseURL);
    return send(client, withoutFlag(body), call, opts);
  }
}

/**
 * Sends `body` (a streaming request's bytes) and reads the reply. `idleMs`: the most the
 * stream may go without a chunk (the SDK's own timeout ends once the reply has started).
 */
async function send(
  client: OpenAI,
  body: Buffer,
  call: AbortController,
  opts: { idleMs: number; onText?: (text: string) => void },
): Promise<Streamed> {
  const { data, response } = await client
    .post<Stream<ChatCompletionChunk>>("/chat/completions", {
      body,
      headers: { "content-type": "application/json" },
      signal: call.signal,
      stream: true,
      __security: { bearerAuth: true },
    })
    .withResponse();
  if (!response.headers.get("content-type")?.includes("text/event-stream")) {
    // Not streamed after all: the whole completion, as the SDK would have read it.
    const res = (await response.json()) as ChatCompletion;
    const choice = res.choices?.[0];
    if (!choice?.message) throw new NoChoicesError();
    return {
      message: choice.message,
      usage: usageOf(res.usage),
      model: res.model,
      finishReason: choice.finish_reason ?? undefined,
    };
  }
  return readChunks(data, call, opts);
}

async function readChunks(
  stream: AsyncIterable<ChatCompletionChunk>,
  call: AbortController,
  opts: { idleMs: number; onText?: (text: string) => void },
): Promise<Streamed> {
  let text = "";
  let usage: Raw | undefined;
  let model: string | undefined;
  let finishReason: string | undefined;
  let chose = false;
  const calls: ChatCompletionMessageFunctionToolCall[] = [];
  let idle: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => call.abort(new IdleError(opts.idleMs)), opts.idleMs);
  };
  arm();
  try {
    for await (const chunk of stream) {
      arm();
      if (chunk.usage) usage = chunk.usage;
      model ??= chunk.model;
      finishReason = chunk.choices?.[0]?.finish_reason ?? finishReason;
      const delta = chunk.choices?.[0]?.delta;
      if (!delta) continue;
      chose = true;
      if (delta.content) {
        text += delta.content;
        opts.onText?.(text);
      }
      for (const t of delta.tool_calls ?? []) {
        const c = calls[t.index] ?? { id: "", type: "function", function: { name: "", arguments: "" } };
        calls[t.index] = c;
        if (t.id) c.id = t.id;
        if (t.function?.name) c.function.name += t.function.name;
        if (t.function?.arguments) c.function.arguments += t.function.arguments;
      }
    }
  } catch (err) {
    if (call.signal.reason instanceof IdleError) throw call.signal.reason;
    throw err;
  } finally {
    clearTimeout(idle);
  }
  // The SDK ends a stream its caller aborted without an error: the reply is not whole.
  if (call.signal.aborted)
    throw call.signal.reason instanceof IdleError ? call.signal.reason : new APIUserAbortError();
  if (!chose) throw new NoChoicesError();
  const toolCalls = calls.filter(Boolean);
  const message: ChatCompletionMessage = {
    role: "assistant",
    content: text || null,
    refusal: null,
    ...(toolCalls.length && { tool_calls: toolCalls }),
  };
  return { message, usage: usageOf(usage), model, finishReason };
}

/** A stream that stopped sending: a timeout, as the SDK's own would be. */
export class IdleError extends Error {
  constructor(ms: number) {
    super(`the model sent nothing for ${Math.round(ms / 1000)} s`);
  }
}

/** A reply without a choice: a server fault (llm.ts classifies it). */
export class NoChoicesError extends Error {
  constructor() {
    super("the model returned no choices");
  }
}
