// A step's call to Anthropic's Messages API through the official SDK, streamed: the body
// encoded once (llm-anthropic-body.ts) is posted as bytes, the SDK adds the key, retries
// 408/409/429/5xx/529 and network errors with backoff (honouring Retry-After) up to the
// first byte of the reply, and yields the server-sent events, read here into the same
// reply the OpenAI path makes (llm-stream.ts): text as it grows, one tool call per
// `tool_use` block, usage, the model and why it stopped. Failures are classified into the
// same LlmError kinds (llm-errors.ts), so fallback.ts and the run record do not know which API answered.
import type Anthropic from "@anthropic-ai/sdk";
import { APIUserAbortError } from "@anthropic-ai/sdk";
import type { Stream } from "@anthropic-ai/sdk/core/streaming";
import type {
  Message,
  MessageDeltaUsage,
  RawMessageStreamEvent,
  Usage as RawUsage,
} from "@anthropic-ai/sdk/resources/messages/messages";
import type {
  ChatCompletionMessage,
  ChatCompletionMessageFunctionToolCall,
} from "openai/resources/chat/completions";
import type { Usage } from "../../money/pricing.ts";
import { IdleError, NoChoicesError, type Streamed } from "./llm-stream.ts";

type Counts = Pick<
  RawUsage,
  "input_tokens" | "output_tokens" | "cache_creation_input_tokens" | "cache_read_input_tokens"
>;

/**
 * Anthropic counts input in three parts: `input_tokens` (after the last cache breakpoint,
 * neither read nor written), cache writes and cache reads. The ledger's input counts all
 * input, the cached part included (pricing.ts): the three summed.
 */
export function usageOf(u: Counts | undefined): Usage {
  const cached = u?.cache_read_input_tokens ?? 0;
  const cacheWrite = u?.cache_creation_input_tokens ?? 0;
  return {
    input: (u?.input_tokens ?? 0) + cached + cacheWrite,
    output: u?.output_tokens ?? 0,
    cached,
    cacheWrite,
  };
}

/** Sends the encoded body and reads the streamed reply. `idleMs`: the most the stream may go without an event. */
export async function streamMessage(
  client: Anthropic,
  body: Buffer,
  call: AbortController,
  opts: { idleMs: number; onText?: (text: string) => void },
): Promise<Streamed> {
  const { data, response } = await client
    .post<Stream<RawMessageStreamEvent>>("/v1/messages", {
      body,
      headers: { "content-type": "application/json" },
      signal: call.signal,
      stream: true,
    })
    .withResponse();
  // A proxy may answer a streamed request with the whole message: read as one.
  if (!response.headers.get("content-type")?.includes("text/event-stream"))
    return fromMessage((await response.json()) as Message);
  return readEvents(data, call, opts);
}

interface Block {
  text?: string;
  tool?: ChatCompletionMessageFunctionToolCall;
}

function reply(blocks: Block[], counts: Counts | undefined, model?: string, stop?: string | null): Streamed {
  const text = blocks.map((b) => b.text ?? "").join("");
  const calls = blocks.flatMap((b) => (b.tool ? [b.tool] : []));
  // A tool called without arguments streams none: its input is the empty object.
  for (const c of calls) c.function.arguments ||= "{}";
  const message: ChatCompletionMessage = {
    role: "assistant",
    content: text || null,
    refusal: null,
    ...(calls.length && { tool_calls: calls }),
  };
  return { message, usage: usageOf(counts), model, ...(stop && { finishReason: stop }) };
}

function fromMessage(m: Message): Streamed {
  if (!Array.isArray(m?.content)) throw new NoChoicesError();
  const blocks = m.content.map((c): Block => {
    if (c.type === "text") return { text: c.text };
    if (c.type === "tool_use")
      return {
        tool: { id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.input) } },
      };
    return {};
  });
  return reply(blocks, m.usage, m.model, m.stop_reason);
}

/** message_delta's usage is cumulative: a count it carries replaces the one message_start gave. */
function merged(counts: Counts | undefined, d: MessageDeltaUsage): Counts {
  const next: Counts = { ...(counts ?? { input_tokens: 0, output_tokens: 0 }) } as Counts;
  next.output_tokens = d.output_tokens;
  if (d.input_tokens != null) next.input_tokens = d.input_tokens;
  if (d.cache_creation_input_tokens != null) next.cache_creation_input_tokens = d.cache_creation_input_tokens;
  if (d.cache_read_input_tokens != null) next.cache_read_input_tokens = d.cache_read_input_tokens;
  return next;
}

async function readEvents(
  stream: AsyncIterable<RawMessageStreamEvent>,
  call: AbortController,
  opts: { idleMs: number; onText?: (text: string) => void },
): Promise<Streamed> {
  const blocks: Block[] = [];
  let text = "";
  let counts: Counts | undefined;
  let model: string | undefined;
  let stop: string | null | undefined;
  let started = false;
  let idle: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(() => call.abort(new IdleError(opts.idleMs)), opts.idleMs);
  };
  arm();
  try {
    for await (const ev of stream) {
      arm();
      if (ev.type === "message_start") {
        started = true;
        model = ev.message.model;
        counts = ev.message.usage;
      } else if (ev.type === "content_block_start") {
        const b = ev.content_block;
        blocks[ev.index] =
          b.type === "text"
            ? { text: b.text }
            : b.type === "tool_use"
              ? { tool: { id: b.id, type: "function", function: { name: b.name, arguments: "" } } }
              : {};
      } else if (ev.type === "content_block_delta") {
        const b = blocks[ev.index];
        if (ev.delta.type === "text_delta" && b) {
          b.text = (b.text ?? "") + ev.delta.text;
          text += ev.delta.text;
          opts.onText?.(text);
        } else if (ev.delta.type === "input_json_delta" && b?.tool) {
          b.tool.function.arguments += ev.delta.partial_json;
        }
      } else if (ev.type === "message_delta") {
        stop = ev.delta.stop_reason;
        counts = merged(counts, ev.usage);
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
  if (!started) throw new NoChoicesError();
  return reply(blocks, counts, model, stop);
}
