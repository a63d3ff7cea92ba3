// What an OpenAI-compatible request says about prompt caching, as OpenAI's prompt-caching
// guide and the SDK's types (openai 6.49: `prompt_cache_key`, `prompt_cache_options`, a
// text part's `prompt_cache_breakpoint`, usage's `cache_write_tokens`) describe it.
//
// Before GPT-5.6, caching is implicit: the longest cached prefix of 1,024 tokens or more is
// read, and `prompt_cache_key` routes requests that share a prefix to the same servers.
// From GPT-5.6 on, a write costs 1.25 × input and, left implicit, the one breakpoint sits at
// the latest message, where a later request reads only an exact prefix written at one of
// its own breakpoints. A step's prompt is one user message that ends with what the step
// changes (the pages, prompt.ts buildPrompt), so implicit caching would write each step's
// whole prompt at 1.25 × and read none of it back. So, for those models, explicit mode:
//   1. the system message — the tools and instructions, the same for every step of every
//      run of the agent (the key is the agent's);
//   2. the stable part's three blocks (cache-blocks.ts) — this step's end, written now; the
//      step before's end, which it wrote; and where the page window began for the step
//      before, which the steps since that window began wrote, and which a step that moves
//      the window (its pages before the new start cut to excerpts) still reads.
// Four breakpoints, the most a request writes; what follows them is never written.
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { markedBlocks, type StablePart, stableBlocks } from "./cache-blocks.ts";

/** `breakpoints`: GPT-5.6 and later (explicit mode); `key`: OpenAI models that take a cache key only. */
export type CacheHints = "breakpoints" | "key";

const BREAKPOINT = { mode: "explicit" } as const;

/**
 * The hints a request for `model` carries, by its OpenAI name (after a router's prefix,
 * `openai/gpt-5.6-sol`). Other models get none: an endpoint that does not know the fields
 * may refuse them (llm-stream.ts then asks without them), and they would gain nothing.
 */
export function cacheHintsFor(model: string): CacheHints | undefined {
  const bare = model.toLowerCase().replace(/^.*\//, "");
  const gpt = /^gpt-(\d+)(?:\.(\d+))?/.exec(bare);
  if (gpt) {
    const [major, minor] = [Number(gpt[1]), Number(gpt[2] ?? 0)];
    return major > 5 || (major === 5 && minor >= 6) ? "breakpoints" : "key";
  }
  return /^(o\d|chatgpt-)/.test(bare) ? "key" : undefined;
}

/**
 * The messages (masked already) as JSON with breakpoints: the first system message's end,
 * and the last blocks of the first user message's stable part (masked).
 */
export function messagesWithBreakpoints(
  messages: ChatCompletionMessageParam[],
  stable: StablePart | undefined,
): string {
  let system = false;
  let user = false;
  const marked = messages.map((message) => {
    if (typeof message.content !== "string" || !message.content) return message;
    if (message.role === "system" && !system) {
      system = true;
      return {
        ...message,
        content: [{ type: "text", text: message.content, prompt_cache_breakpoint: BREAKPOINT }],
      };
    }
    if (message.role !== "user" || user || stable === undefined) return message;
    user = true;
    const texts = stableBlocks(message.content, stable);
    const breakpoints = markedBlocks(message.content, stable);
    const parts = texts.flatMap((text, index) =>
      text
        ? [{ type: "text", text, ...(breakpoints.has(index) && { prompt_cache_breakpoint: BREAKPOINT }) }]
        : [],
    );
    return { ...message, content: parts };
  });
  return JSON.stringify(marked);
}

/** The body's cache fields, after its others: the key, and explicit mode with breakpoints. */
export function cacheFields(hints: CacheHints | undefined, key: string | undefined): string {
  if (!hints) return "";
  const keyed = key ? `,"prompt_cache_key":${JSON.stringify(key)}` : "";
  return hints === "breakpoints" ? `${keyed},"prompt_cache_options":{"mode":"explicit"}` : keyed;
}

/**
 * The body without its cache hints, for an endpoint that refused one: the same messages
 * (text parts stay parts), no key, no breakpoints, no options. The same buffer when it has none.
 */
export function withoutCacheHints(body: Buffer): Buffer {
  const json = JSON.parse(body.toString("utf8")) as {
    prompt_cache_key?: unknown;
    prompt_cache_options?: unknown;
    messages: { content: unknown }[];
  };
  const parts = json.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  const marked = parts.filter((part: { prompt_cache_breakpoint?: unknown }) => part.prompt_cache_breakpoint);
  if (!("prompt_cache_key" in json) && !("prompt_cache_options" in json) && !marked.length) return body;
  delete json.prompt_cache_key;
  delete json.prompt_cache_options;
  for (const part of marked) delete part.prompt_cache_breakpoint;
  return Buffer.from(JSON.stringify(json));
}
