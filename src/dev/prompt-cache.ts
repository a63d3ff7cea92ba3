// Providers' prompt caches, simulated for the fake servers by the rules their docs give.
// Anthropic (fake-anthropic.ts): the prompt is a sequence of blocks in the order tools →
// system → messages; a block with `cache_control` is a breakpoint (at most 4), and the
// prefix up to it is written to the cache if it is at least 1024 tokens long; a request
// reads the longest cached prefix found at a breakpoint or at any block boundary up to 20
// blocks before one; an entry lives 5 minutes, refreshed by each read. Usage follows the
// docs' billing: reads up to the hit, writes from the hit to the last cacheable breakpoint,
// the rest plain input. Changing `tool_choice` invalidates the messages' part, as documented.
// OpenAI from GPT-5.6 on (fake-llm.ts): tools → messages, a text part with
// `prompt_cache_breakpoint` is a breakpoint, and unless `prompt_cache_options.mode` is
// `explicit` so is the latest message's end (the implicit one); a read is only at a
// breakpoint (no look-back), writes are the latest four breakpoints, entries live 30 minutes.
//
// Tokens are counted approximately, a block's characters / 4 (no tokenizer; Anthropic's own
// count differs a little), which is all the tests' sums need: they are exact for this count.
import { createHash } from "node:crypto";

/** A Messages API request, as much of it as the fake reads. */
export interface MessagesRequest {
  model: string;
  max_tokens: number;
  system?: { type: string; text: string; cache_control?: unknown }[] | string;
  messages: { role: string; content: string | { type: string; text?: string; cache_control?: unknown }[] }[];
  tools?: { name: string; description?: string; input_schema: unknown; cache_control?: unknown }[];
  tool_choice?: unknown;
  stream?: boolean;
  [key: string]: unknown;
}

/** A chat-completions request, as much of it as the cache reads. */
export interface ChatCacheRequest {
  messages: {
    role: string;
    content?: string | null | { type: string; text?: string; prompt_cache_breakpoint?: unknown }[];
  }[];
  tools?: unknown[];
  prompt_cache_options?: { mode?: string };
}

export const LOOKBACK_BLOCKS = 20;
export const MIN_CACHEABLE_TOKENS = 1024;
const MAX_BREAKPOINTS = 4;

/** How a provider finds and writes entries. */
interface Rules {
  /** Block boundaries before a breakpoint where a read may also hit. */
  lookback: number;
  /** The breakpoints a request writes, of those it has (block indexes, in order). */
  writes(breakpoints: number[]): number[];
  ttlMs: number;
}
const ANTHROPIC: Rules = {
  lookback: LOOKBACK_BLOCKS,
  writes: (breakpoints) => breakpoints,
  ttlMs: 5 * 60_000,
};
const OPENAI: Rules = {
  lookback: 0,
  writes: (breakpoints) => breakpoints.slice(-MAX_BREAKPOINTS),
  ttlMs: 30 * 60_000,
};

interface Block {
  /** What the block is, for the prefix's hash (its text, or a tool's JSON), without cache_control. */
  key: string;
  tokens: number;
  breakpoint: boolean;
  emptyText: boolean;
}

export interface CacheUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

const tokensOf = (text: string) => Math.ceil(text.length / 4);

function blocksOf(body: MessagesRequest): Block[] {
  const blocks: Block[] = [];
  const add = (key: string, text: string, cacheControl: unknown, isText: boolean) =>
    blocks.push({
      key,
      tokens: tokensOf(text),
      breakpoint: Boolean(cacheControl),
      emptyText: isText && !text,
    });
  for (const { cache_control, ...tool } of body.tools ?? []) {
    const json = JSON.stringify(tool);
    add(`tool:${json}`, json, cache_control, false);
  }
  const system =
    typeof body.system === "string" ? [{ type: "text", text: body.system }] : (body.system ?? []);
  for (const block of system)
    add(`system:${block.text}`, block.text ?? "", "cache_control" in block && block.cache_control, true);
  // tool_choice is part of the messages' prefix: a change to it misses from the first message on.
  let salt = `tool_choice:${JSON.stringify(body.tool_choice ?? null)}\n`;
  for (const message of body.messages) {
    const content =
      typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    content.forEach((part, index) => {
      const { cache_control, ...rest } = part as { cache_control?: unknown; text?: string };
      const text = rest.text ?? JSON.stringify(rest);
      add(
        `${salt}${index === 0 ? `${message.role}:` : ""}${JSON.stringify(rest)}`,
        text,
        cache_control,
        part.type === "text",
      );
      salt = "";
    });
  }
  return blocks;
}

/** A chat request's blocks: each tool, then each message's text parts (a string is one). */
function chatBlocks(body: ChatCacheRequest): Block[] {
  const blocks: Block[] = (body.tools ?? []).map((tool) => {
    const json = JSON.stringify(tool);
    return { key: `tool:${json}`, tokens: tokensOf(json), breakpoint: false, emptyText: false };
  });
  for (const message of body.messages) {
    const parts =
      typeof message.content === "string"
        ? [{ type: "text", text: message.content }]
        : (message.content ?? []);
    parts.forEach((part, index) => {
      const { prompt_cache_breakpoint, ...rest } = part as {
        prompt_cache_breakpoint?: unknown;
        text?: string;
      };
      blocks.push({
        key: `${index === 0 ? `${message.role}:` : ""}${JSON.stringify(rest)}`,
        tokens: tokensOf(rest.text ?? ""),
        breakpoint: Boolean(prompt_cache_breakpoint),
        emptyText: false,
      });
    });
  }
  const last = blocks.at(-1);
  if (last && body.prompt_cache_options?.mode !== "explicit") last.breakpoint = true;
  return blocks;
}

export class PromptCache {
  private readonly entries = new Map<string, number>();

  /** Forgets every entry (or lets them expire: `now` moved past their lifetime). */
  clear() {
    this.entries.clear();
  }

  get size() {
    return this.entries.size;
  }

  /** What a Messages request reads and writes in `scope` (a key and model: caches are not shared across them), or why it is refused. */
  use(scope: string, body: MessagesRequest, now = Date.now()): CacheUsage | { error: string } {
    const blocks = blocksOf(body);
    if (blocks.some((b) => b.emptyText)) return { error: "messages: text content blocks must be non-empty" };
    const breakpoints = blocks.filter((b) => b.breakpoint).length;
    if (breakpoints > MAX_BREAKPOINTS)
      return {
        error: `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`,
      };
    return this.useBlocks(scope, blocks, ANTHROPIC, now);
  }

  /** What a chat-completions request to a GPT-5.6-family model reads and writes in `scope`. */
  useChat(scope: string, body: ChatCacheRequest, now = Date.now()): CacheUsage {
    return this.useBlocks(scope, chatBlocks(body), OPENAI, now);
  }

  private useBlocks(scope: string, blocks: Block[], rules: Rules, now: number): CacheUsage {
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []));
    // Each block boundary's prefix: its hash (chained) and its tokens so far.
    const prefix: { id: string; tokens: number }[] = [];
    let hash = scope;
    let total = 0;
    for (const block of blocks) {
      hash = createHash("sha256").update(hash).update("\0").update(block.key).digest("hex");
      total += block.tokens;
      prefix.push({ id: hash, tokens: total });
    }
    const live = (index: number) => (this.entries.get(prefix[index]!.id) ?? 0) > now;
    // The longest hit: at a breakpoint, or up to the rules' look-back before one.
    let hit = -1;
    for (const breakpoint of breakpoints)
      for (let index = breakpoint; index >= Math.max(0, breakpoint - rules.lookback) && index > hit; index--)
        if (live(index)) {
          hit = index;
          break;
        }
    const read = hit >= 0 ? prefix[hit]!.tokens : 0;
    if (hit >= 0) this.entries.set(prefix[hit]!.id, now + rules.ttlMs);
    // Written: every cacheable breakpoint past the hit; billed from the hit to the last of them.
    const writes = rules
      .writes(breakpoints)
      .filter((b) => b > hit && prefix[b]!.tokens >= MIN_CACHEABLE_TOKENS);
    for (const breakpoint of writes) this.entries.set(prefix[breakpoint]!.id, now + rules.ttlMs);
    const last = writes.at(-1);
    const written = last === undefined ? 0 : prefix[last]!.tokens - read;
    return {
      input_tokens: total - read - written,
      cache_creation_input_tokens: written,
      cache_read_input_tokens: read,
    };
  }
}
