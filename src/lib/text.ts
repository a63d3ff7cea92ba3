// What Postgres can store as text. It refuses NUL in `text` and `jsonb`, and a lone UTF-16
// surrogate (half of a pair, `"\ud800"` in JSON) in `jsonb`; in `text` the driver quietly
// turns the surrogate into U+FFFD. Input with either is refused (registry/params.ts);
// what is only recorded (a page's query, what a model sent) is made storable instead.

/** With the `u` flag a surrogate pair is one code point, so only a lone half matches. */
const LONE_SURROGATE = /[\ud800-\udfff]/u;
const LONE_SURROGATES = /[\ud800-\udfff]/gu;

/** Why a string cannot be stored, or null. */
export function textProblem(text: string): string | null {
  if (text.includes("\u0000")) return "must not contain NUL characters";
  if (LONE_SURROGATE.test(text)) return "is not valid Unicode text (an unpaired UTF-16 surrogate)";
  return null;
}

/** The string with what textProblem refuses replaced (dropped by default). */
export function storable(text: string, replacement = ""): string {
  return text.replaceAll("\u0000", replacement).replace(LONE_SURROGATES, replacement);
}

/** A JSON value for a `jsonb` column, every string and key storable, U+FFFD marking what was replaced. */
export function storableJson(value: unknown): unknown {
  if (typeof value === "string") return storable(value, "\ufffd");
  if (Array.isArray(value)) return value.map(storableJson);
  if (value === null || typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype)
    return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, nested]) => [storable(key, "\ufffd"), storableJson(nested)]),
  );
}

/** Someone's text as a task quotes it, as data: cut at `max` characters, every line behind `> `. */
export function quoteAsData(text: string, max: number, indent = ""): string {
  const body = text.length > max ? `${text.slice(0, max)}…` : text;
  return body
    .split("\n")
    .map((l) => `${indent}> ${l}`)
    .join("\n");
}
