// The agent-run benchmark's cache phase: a run that walks through a studio as an agent
// would — the studio, its lists, notes, decisions and commitments, a comment on the way,
// a note to itself every few steps — and a model that answers it while a PrefixCache
// (prefix-cache.ts) measures how much of each request a provider's cache could serve.
import { appendFileSync } from "node:fs";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { type ChatCacheRequest, PromptCache } from "../src/dev/prompt-cache.ts";
import { withoutCacheHints } from "../src/services/agents/runtime/llm-openai-cache.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import type { Ctx } from "../src/services/registry/types.ts";
import { PrefixCache } from "./prefix-cache.ts";

const PROSE =
  "The team met on Tuesday to go over the plan for the spring offsite: venues, budget, who travels when, and what each studio brings. ";

const make = async (ctx: Ctx, path: string, action: string, params: Record<string, unknown>) =>
  (await registry.run(ctx, path, action, params, { form: false })).location;

/** Content to walk through, and the walk: one path per step (null: comment where it is). */
export async function seedWalk(ctx: Ctx): Promise<(string | null)[]> {
  const s = "/studios/general";
  const notes: string[] = [];
  for (let i = 1; i <= 5; i++)
    notes.push(await make(ctx, s, "create_note", { title: `Offsite ${i}`, text: PROSE.repeat(6 + i) }));
  const decisions = [
    await make(ctx, s, "create_decision", { question: "Where do we go?", options: "Lisbon\nPorto\nMadrid" }),
    await make(ctx, s, "create_decision", { question: "When?", description: PROSE.repeat(3) }),
  ];
  const commitments = [
    await make(ctx, s, "create_commitment", { title: "Book the venue", critical_mass: 2 }),
    await make(ctx, s, "create_commitment", { title: "Plan the agenda", critical_mass: 3 }),
  ];
  for (const n of notes.slice(0, 3)) await make(ctx, n, "add_comment", { text: PROSE.repeat(2) });
  const [n1, n2, n3, n4, n5] = notes as [string, string, string, string, string];
  const [d1, d2] = decisions as [string, string];
  const [c1, c2] = commitments as [string, string];
  return [
    s,
    `${s}/notes`,
    n1,
    n2,
    null,
    n3,
    `${s}/decisions`,
    d1,
    d2,
    `${s}/commitments`,
    c1,
    c2,
    s,
    n4,
    n5,
    `${s}/members`,
    `${s}/notes`,
    n1,
    s,
  ];
}

/**
 * The model's side of walks: the k-th call of a run goes to the walk's k-th path (a null
 * comments on the page it is on), the last finishes. Every request goes through the run's
 * cache, whose usage it reports as a provider would (so the ledger's cached tokens are real).
 */
export function walker(walk: (string | null)[], steps: number, opts: { simulated?: boolean } = {}) {
  const caches = new Map<string, PrefixCache>();
  const reply = (handle: string, n: number, req: ChatRequest): FakeReply => {
    const cache = caches.get(handle) ?? new PrefixCache();
    caches.set(handle, cache);
    const { input, cached } = cache.add(req);
    // BENCH_CACHE_DUMP=<file>: every request of the walks, a JSON line each, to see where two steps' prompts part.
    const dump = process.env.BENCH_CACHE_DUMP;
    if (dump) appendFileSync(dump, `${JSON.stringify({ handle, n, req })}\n`);
    // A GPT-5.6 model's usage is the fake's own cache's (fake-llm.ts), breakpoints and all.
    const usage = opts.simulated
      ? undefined
      : { prompt_tokens: input, completion_tokens: 40, cached_tokens: cached };
    const note =
      n % 3 === 0 ? `Step ${n}: the offsite plan is taking shape; next I check the rest.` : undefined;
    if (n >= steps) return { tool: { name: "finish", args: { message: "Looked around." } }, usage };
    const path = walk[n - 1];
    if (path === null)
      return {
        tool: {
          name: "add_comment",
          args: { params: { text: "Lisbon gets my vote." }, reason: "the task asks for a view", note },
        },
        usage,
      };
    return { tool: { name: "navigate", args: { path, note } }, usage };
  };
  return { reply, caches };
}

/** What a GPT-5.6 cache bills of a run's input: read, written, and uncached + 10 % of read + 125 % of written, as shares of it. */
export function billedShares(u: { input: number; read: number; written: number }) {
  const effective = u.input - u.read - u.written + 0.1 * u.read + 1.25 * u.written;
  const pct = (n: number) => (100 * n) / Math.max(1, u.input);
  return { read: pct(u.read), written: pct(u.written), effective: pct(effective) };
}

/**
 * The same requests left to implicit caching (no hints: the breakpoint at the latest
 * message), through a cache of their own: what the run would have been billed without them.
 */
export function implicitly(wires: ChatRequest[]) {
  const cache = new PromptCache();
  const u = { input: 0, read: 0, written: 0 };
  for (const wire of wires) {
    const plain = JSON.parse(
      withoutCacheHints(Buffer.from(JSON.stringify(wire))).toString(),
    ) as ChatCacheRequest;
    const r = cache.useChat("bench", plain);
    u.input += r.input_tokens + r.cache_read_input_tokens + r.cache_creation_input_tokens;
    u.read += r.cache_read_input_tokens;
    u.written += r.cache_creation_input_tokens;
  }
  return billedShares(u);
}
