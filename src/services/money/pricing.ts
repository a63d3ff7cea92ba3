// Prices per million tokens, versioned in the repo: every ledger row records the version
// (and whether a tenant override applied), so an old row's cost can always be explained.
// A model in no list costs zero and is flagged `priced: false` on the dashboards.
import { z } from "zod";

/**
 * A model call's tokens, as the provider reported them. Input counts all of it: the part
 * read from the provider's prompt cache (`cached`) and the part written to it
 * (`cacheWrite`) are inside `input`, as OpenAI counts `cached_tokens` inside
 * `prompt_tokens` (Anthropic reports the three apart: llm-anthropic.ts sums them).
 */
export interface Usage {
  input: number;
  output: number;
  cached: number;
  /** Written to the prompt cache (Anthropic's `cache_creation_input_tokens`, OpenAI's `cache_write_tokens`); absent: none. */
  cacheWrite?: number;
}

const perMillion = z.number().min(0).max(10_000);
export const priceSchema = z.object({
  input: perMillion,
  cached_input: perMillion,
  /** Input written to a prompt cache; absent, WRITE_SURCHARGE × input (writeRate). */
  cache_write_input: perMillion.optional(),
  output: perMillion,
});
export type Price = z.infer<typeof priceSchema>;

export const PRICE_LIST_VERSION = "2026-11-29";

/**
 * What a cache write costs, as a multiple of input, when a price does not say: what every
 * provider that reports writes charges (Anthropic's 5-minute entries, OpenAI from GPT-5.6
 * on). Providers that charge nothing for a write report none, so it never applies to them.
 */
export const WRITE_SURCHARGE = 1.25;
export const writeRate = (price: Price) => price.cache_write_input ?? price.input * WRITE_SURCHARGE;

/** An OpenAI model before GPT-5.6: a write to its prompt cache costs what input does. */
const noWriteFee = (input: number, cached_input: number, output: number): Price => ({
  input,
  cached_input,
  cache_write_input: input,
  output,
});

/**
 * USD per 1M tokens, from the providers' published list prices. Anthropic bills a write to
 * its 5-minute prompt cache at 1.25 × input and a read at 0.1 × input (its prompt-caching
 * docs, "Understanding cache breakpoint costs"); Cadre only writes 5-minute entries. OpenAI
 * bills writes from GPT-5.6 on, at 1.25 × input, reads at 0.1 × (its prompt-caching guide);
 * the GPT-5.6 tiers' prices are those OpenAI announced with them.
 */
export const PRICE_LIST: Record<string, Price> = {
  "gpt-5.6-sol": { input: 5, cached_input: 0.5, cache_write_input: 6.25, output: 30 },
  "gpt-5.6-terra": { input: 2.5, cached_input: 0.25, cache_write_input: 3.125, output: 15 },
  "gpt-5.6-luna": { input: 1, cached_input: 0.1, cache_write_input: 1.25, output: 6 },
  "gpt-5.5": noWriteFee(5, 0.5, 30),
  "gpt-5.4": noWriteFee(2.5, 0.25, 15),
  "gpt-5": noWriteFee(1.25, 0.125, 10),
  "gpt-5-mini": noWriteFee(0.25, 0.025, 2),
  "gpt-5-nano": noWriteFee(0.05, 0.005, 0.4),
  "gpt-4.1": noWriteFee(2, 0.5, 8),
  "gpt-4.1-mini": noWriteFee(0.4, 0.1, 1.6),
  "gpt-4.1-nano": noWriteFee(0.1, 0.025, 0.4),
  "gpt-4o": noWriteFee(2.5, 1.25, 10),
  "gpt-4o-mini": noWriteFee(0.15, 0.075, 0.6),
  o3: noWriteFee(2, 0.5, 8),
  "o4-mini": noWriteFee(1.1, 0.275, 4.4),
  "claude-opus-4-1": { input: 15, cached_input: 1.5, cache_write_input: 18.75, output: 75 },
  "claude-opus-4": { input: 15, cached_input: 1.5, cache_write_input: 18.75, output: 75 },
  "claude-sonnet-4-5": { input: 3, cached_input: 0.3, cache_write_input: 3.75, output: 15 },
  "claude-sonnet-4": { input: 3, cached_input: 0.3, cache_write_input: 3.75, output: 15 },
  "claude-haiku-4-5": { input: 1, cached_input: 0.1, cache_write_input: 1.25, output: 5 },
  "claude-3-7-sonnet": { input: 3, cached_input: 0.3, cache_write_input: 3.75, output: 15 },
  "claude-3-5-haiku": { input: 0.8, cached_input: 0.08, cache_write_input: 1, output: 4 },
};

export const tenantPricesSchema = z.record(z.string().min(1).max(200), priceSchema);
export type TenantPrices = z.infer<typeof tenantPricesSchema>;

/**
 * The list name a model id is priced under: exact, or with a date or `-latest` suffix
 * (`gpt-4o-2024-08-06`, `claude-sonnet-4-20250514`), as routed (`azure/gpt-4o`, which a
 * tenant may price apart) or after its router prefix (`openai/`, `anthropic/`). Nothing
 * looser: `gpt-5-pro` must not be priced as `gpt-5`.
 */
export function listName(model: string, names: Iterable<string>): string | null {
  const full = model.toLowerCase();
  const bare = full.replace(/^[a-z0-9_-]+\//, "");
  const list = [...names];
  // The routed id first: a price for `azure/gpt-4o` beats one for plain `gpt-4o`.
  for (const id of full === bare ? [full] : [full, bare]) {
    let best: string | null = null;
    for (const name of list) {
      const lowered = name.toLowerCase();
      if (id === lowered) return name;
      if (id.startsWith(`${lowered}-`) && /^-(\d{4}-?\d{2}-?\d{2}|latest)$/.test(id.slice(lowered.length))) {
        if (!best || lowered.length > best.length) best = name;
      }
    }
    if (best) return best;
  }
  return null;
}

export interface Priced {
  costMicros: number;
  priced: boolean;
  version: string;
}

/** Cost in micro-dollars: a price per million tokens is exactly micro-dollars per token. */
export function priceCall(model: string, usage: Usage, overrides: TenantPrices = {}): Priced {
  const own = listName(model, Object.keys(overrides));
  const listed = own ? null : listName(model, Object.keys(PRICE_LIST));
  const price = own ? overrides[own] : listed ? PRICE_LIST[listed] : undefined;
  const version = own ? `${PRICE_LIST_VERSION}+tenant` : PRICE_LIST_VERSION;
  if (!price) return { costMicros: 0, priced: false, version };
  // Input counts cached reads and cache writes too; each is billed at its own rate, the rest at input's.
  const cached = Math.min(usage.cached, usage.input);
  const written = Math.min(usage.cacheWrite ?? 0, usage.input - cached);
  const cost =
    (usage.input - cached - written) * price.input +
    cached * price.cached_input +
    written * writeRate(price) +
    usage.output * price.output;
  return { costMicros: Math.round(cost), priced: true, version };
}

export const usd = (micros: number | bigint, digits = 2) => {
  const value = Number(micros) / 1e6;
  // Sub-cent spend still reads as spend, not $0.00.
  if (value > 0 && value < 0.01 && digits === 2) return `$${value.toFixed(4)}`;
  return `$${value.toFixed(digits)}`;
};

/** An amount that may be under $0.0001 (a grader's call on a small model), in digits that show it: never "$0.0000". */
export const usdTiny = (micros: number | bigint) => usd(micros, micros > 0 && micros < 100 ? 6 : 2);

/** One precision for amounts shown together: cents, or hundredths of a cent when any is under a cent. */
export function moneyDigits(amounts: readonly (number | bigint)[]): 2 | 4 {
  return amounts.some((micros) => Number(micros) > 0 && Number(micros) < 10_000) ? 4 : 2;
}

/**
 * A table's amounts and its total, in one precision and rounded so that the parts add up to
 * the total as shown, the way a receipt's lines add up to its sum: each part is rounded down,
 * then the units the total still lacks go to the parts that lost the most (largest remainder).
 * A total that is not the sum of the parts (more was spent than the rows show) is rounded on
 * its own, in the same precision.
 */
export function usdShares(
  parts: readonly (number | bigint)[],
  total = parts.reduce<number>((sum, micros) => sum + Number(micros), 0),
): { parts: string[]; total: string; digits: 2 | 4 } {
  const digits = moneyDigits([...parts, total]);
  const perUnit = 10 ** (6 - digits);
  const exact = parts.map((micros) => Number(micros) / perUnit);
  const units = exact.map(Math.floor);
  const wanted = Math.round(Number(total) / perUnit);
  const missing = wanted - units.reduce((sum, unit) => sum + unit, 0);
  const sumsUp = Number(total) === parts.reduce<number>((sum, micros) => sum + Number(micros), 0);
  if (sumsUp && missing >= 0 && missing <= parts.length) {
    const byRemainder = exact.map((value, index) => ({ index, left: value - units[index]! }));
    byRemainder.sort((a, b) => b.left - a.left);
    for (const { index } of byRemainder.slice(0, missing)) units[index]! += 1;
  } else for (const [index, value] of exact.entries()) units[index] = Math.round(value);
  const shown = (unit: number) => `$${(unit / 10 ** digits).toFixed(digits)}`;
  return { parts: units.map(shown), total: shown(wanted), digits };
}
