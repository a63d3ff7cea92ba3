// A provider's prompt cache, as OpenAI documents it, applied to the requests a fake model
// receives: the benchmark's honest answer to "how much of a run's input could be served
// from cache". The rules (platform.openai.com/docs/guides/prompt-caching): a request is
// cached as a prefix — tools first, then the messages in order; only prompts of 1,024
// tokens or more are cached; a hit is the longest prefix an earlier request shared, counted
// from 1,024 tokens in steps of 128. Cached input costs a tenth of input on current models
// (gpt-5, gpt-4.1 a quarter): effective tokens count it at a tenth, as the issue does.
import { encode as o200k } from "gpt-tokenizer/encoding/o200k_base";
import type { ChatRequest } from "../src/dev/fake-llm.ts";

const MIN_TOKENS = 1024;
const STEP_TOKENS = 128;
export const CACHED_PRICE = 0.1;

/** A request as the provider's tokenizer sees it, in its order: tools, then each message. */
export function requestTokens(req: ChatRequest): number[] {
  const parts = [JSON.stringify(req.tools ?? [])];
  for (const m of req.messages) parts.push(`<|${m.role}|>${String(m.content ?? "")}`);
  return parts.flatMap((p) => o200k(p));
}

function commonPrefix(a: number[], b: number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Tokens of a request served from cache, given the shared prefix length. */
export function cachedOf(shared: number): number {
  return shared < MIN_TOKENS ? 0 : MIN_TOKENS + Math.floor((shared - MIN_TOKENS) / STEP_TOKENS) * STEP_TOKENS;
}

/** One run's requests through the cache: each one's input and cached tokens. */
export class PrefixCache {
  private readonly seen: number[][] = [];
  input = 0;
  cached = 0;

  /** Takes a request in; returns its usage as the provider would report it. */
  add(req: ChatRequest): { input: number; cached: number } {
    const tokens = requestTokens(req);
    let shared = 0;
    for (const earlier of this.seen) shared = Math.max(shared, commonPrefix(tokens, earlier));
    // The provider caches a prompt it served only from 1,024 tokens on.
    if (tokens.length >= MIN_TOKENS) this.seen.push(tokens);
    const cached = Math.min(cachedOf(shared), tokens.length);
    this.input += tokens.length;
    this.cached += cached;
    return { input: tokens.length, cached };
  }

  get share(): number {
    return this.input ? this.cached / this.input : 0;
  }

  /** Uncached input plus cached input at its price. */
  get effective(): number {
    return this.input - this.cached + CACHED_PRICE * this.cached;
  }
}
