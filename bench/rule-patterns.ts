// Rule patterns against the text a model can send (add_comment's 10,000 characters, a note's
// 20,000): each pattern's match time, medians of 9, after one warm-up. Run: npx tsx bench/rule-patterns.ts
import { compilePattern, MAX_PATTERN_SIZE } from "../src/lib/rule-pattern.ts";

const TEXT = 20_000;
const cases: [string, string][] = [
  ["(?i)budget", "a".repeat(TEXT)],
  ["(a+)+$", `${"a".repeat(TEXT - 1)}!`],
  ["^(.?){30}.{30}Q", "a".repeat(TEXT)],
  ["(a|aa)+$", `${"a".repeat(TEXT - 1)}b`],
  ["(.*a){20}", `${"a".repeat(TEXT - 1)}b`],
  ["(.*a){39}", `${"a".repeat(TEXT - 1)}b`],
  ["[a-z]{190}", "ab".repeat(TEXT / 2)],
];

for (const [pattern, text] of cases) {
  const re = compilePattern(pattern);
  re.matcher(text).find();
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    const t0 = performance.now();
    re.matcher(text).find();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${pattern.padEnd(18)} ${String(re.programSize()).padStart(3)}/${MAX_PATTERN_SIZE} steps  ${times[4]!.toFixed(1).padStart(6)} ms on ${text.length} chars`,
  );
}
