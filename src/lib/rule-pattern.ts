// Patterns people write into agents' policy rules, matched against text a model wrote, on the
// worker's shared event loop. JavaScript's RegExp backtracks: `(a+)+$` or `^(.?){30}.{30}Q`
// against the right text takes minutes and stalls every run of every workspace. RE2's
// automaton (re2js: RE2 ported to plain JavaScript, no native build, no WASM to load) takes
// time linear in the text for any pattern, and refuses what cannot be run so
// (backreferences, lookaround) when the pattern is saved.
import { RE2JS, RE2JSException } from "re2js";

/**
 * Linear is still (program size × text length): at the cap, `(.*a){39}` (197 steps) takes
 * 66 ms on 20,000 characters, `(.*a){20}` (102) 34 ms, `(a+)+$` 2 ms (bench/rule-patterns.ts).
 * A pattern may have 200 steps and an agent's rules together 1,000, so the rules one action
 * passes cost at most about a third of a second on the longest text, whatever it says.
 */
export const MAX_PATTERN_SIZE = 200;
export const MAX_RULES_SIZE = 1000;

const cache = new Map<string, RE2JS>();
const CACHE_MAX = 1000;

/** Why RE2 cannot run this pattern, in words a person can act on. */
function explain(pattern: string, err: RE2JSException): string {
  if (/\\[1-9]|\\k</.test(pattern))
    return "backreferences (\\1, \\k<name>) are not supported: rule patterns are matched in linear time (RE2 syntax)";
  if (/\(\?<?[=!]/.test(pattern))
    return "lookahead and lookbehind ((?=…), (?!…), (?<=…)) are not supported: rule patterns are matched in linear time (RE2 syntax)";
  return `not a valid pattern: ${err.message.replace(/^error parsing regexp: /, "")}`;
}

/** A rule's pattern, compiled; throws an Error whose message says what is wrong with it. */
export function compilePattern(pattern: string): RE2JS {
  let regex = cache.get(pattern);
  if (regex) return regex;
  try {
    // RE2 reads a leading `(?i)` itself: case-insensitive, as in the rules people already have.
    regex = RE2JS.compile(pattern);
  } catch (err) {
    if (err instanceof RE2JSException) throw new Error(explain(pattern, err));
    throw err;
  }
  if (regex.programSize() > MAX_PATTERN_SIZE)
    throw new Error(
      `too complex to match quickly (${regex.programSize()} steps, at most ${MAX_PATTERN_SIZE}): use fewer or smaller repeats`,
    );
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(pattern, regex);
  return regex;
}

/** The size the pattern counts against an agent's MAX_RULES_SIZE. */
export const patternSize = (pattern: string): number => compilePattern(pattern).programSize();

/** Whether the pattern occurs anywhere in the text (as RegExp#test does). */
export function patternFinds(pattern: string, text: string): boolean {
  return compilePattern(pattern).matcher(text).find();
}

/** A param's value as the text a pattern is matched against: a string as it is, anything else as JSON, nothing as "". */
export function paramText(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}
