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
export function usageOf(counts: Counts | undefined): Usage {
  const cached = counts?.cache_read_input_tokens ?? 0;
  const cacheWrite = counts?.cache_creation_input_tokens ?? 0;
  return {
    input: (counts?.input_tokens ?? 0) + cached + cacheWrite,
    output: counts?.output_tokens ?? 0,
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
  for (const call of calls) call.function.arguments ||= "{}";
  const message: ChatCompletionMessage = {
    role: "assistant",
    content: text || null,
    refusal: null,
    ...(calls.length && { tool_calls: calls }),
  };
  return { message, usage: usageOf(counts), model, ...(stop && { finishReason: stop }) };
}

function fromMessage(message: Message): Streamed {
  if (!Array.isArray(message?.content)) throw new NoChoicesError();
  const blocks = message.content.map((block): Block => {
    if (block.type === "text") return { text: block.text };
    if (block.type === "tool_use")
      return {
        tool: {
          id: block.id,
          type: "function",
          function: { name: block.name, arguments: JSON.stringify(block.input) },
        },
      };
    return {};
  });
  return reply(blocks, message.usage, message.model, message.stop_reason);
}

/** message_delta's usage is cumulative: a count it carries replaces the one message_start gave. */
function merged(counts: Counts | undefined, delta: MessageDeltaUsage): Counts {
  const next: Counts = { ...(counts ?? { input_tokens: 0, output_tokens: 0 }) } as Counts;
  next.output_tokens = delta.output_tokens;
  if (delta.input_tokens != null) next.input_tokens = delta.input_tokens;
  if (delta.cache_creation_input_tokens != null)
    next.cache_creation_input_tokens = delta.cache_creation_input_tokens;
  if (delta.cache_read_input_tokens != null) next.cache_read_input_tokens = delta.cache_read_input_tokens;
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
    for await (const event of stream) {
      arm();
      if (event.type === "message_start") {
        started = true;
        model = event.message.model;
        counts = event.message.usage;
      } else if (event.type === "content_block_start") {
        const block = event.content_block;
        blocks[event.index] =
          block.type === "text"
            ? { text: block.text }
            : block.type === "tool_use"
              ? { tool: { id: block.id, type: "function", function: { name: block.name, arguments: "" } } }
              : {};
      } else if (event.type === "content_block_delta") {
        const block = blocks[event.index];
        if (event.delta.type === "text_delta" && block) {
          block.text = (block.text ?? "") + event.delta.text;
          text += event.delta.text;
          opts.onText?.(text);
        } else if (event.delta.type === "input_json_delta" && block?.tool) {
          block.tool.function.arguments += event.delta.partial_json;
        }
      } else if (event.type === "message_delta") {
        stop = event.delta.stop_reason;
        counts = merged(counts, event.usage);
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
