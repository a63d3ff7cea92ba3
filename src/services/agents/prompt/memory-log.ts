// The run's memory as a prompt shows it: a log with an entry per step — what it did, the
// note the model left with it, and, for the first read of a page, the start of that page —
// that only grows from one step to the next. So a step's prompt is last step's, to the
// byte, up to the end of the log, and a provider serves that much from its prompt cache
// (prompt.ts puts everything a step changes after it). When the log outgrows its room, the
// oldest steps leave in chunks on fixed step boundaries, first their excerpts and lines
// without a note, later their notes; between two cuts the log is again append-only.

import { plural } from "../../../lib/plural.ts";
import { excerptLine, firstReads, line, noteOf, RECENT_STEPS, type Remembered } from "./memory.ts";
import { estimateTokens } from "./token-estimate.ts";

/** The oldest steps leave the log this many at a time (and their notes as many). */
export const STEP_CHUNK = 8;
// The "not shown" line a cut may put before a kept note.
const MARKER_TOKENS = 12;

/** A step's whole entry: its line and note, and an excerpt when it first read its page. */
function entry(remembered: Remembered, first: boolean): string {
  const head = line(remembered);
  if (!first) return head;
  const detail = remembered.detail as { resultPath: string; page?: string };
  const excerpt = excerptLine({
    path: detail.resultPath,
    markdown: detail.page ?? "",
    gist: remembered.gist,
    step: remembered.number,
  });
  return `${head}\n   ${excerpt}`;
}

// Entries are the same text every step: measured once per record (compact replaces a record
// whose page it drops, and the new one is measured once more).
interface Measured {
  whole: string;
  /** Tokens of the whole entry, of its line (and note) alone, of its line when it has a note. */
  costs: [number, number, number];
}
const measured = new WeakMap<Remembered, Measured>();
function measure(step: Remembered, first: boolean): Measured {
  let cached = measured.get(step);
  if (!cached) {
    const whole = entry(step, first);
    const line1 = estimateTokens(line(step)) + 1;
    cached = { whole, costs: [estimateTokens(whole) + 1, line1, noteOf(step) ? line1 + MARKER_TOKENS : 0] };
    measured.set(step, cached);
  }
  return cached;
}

/**
 * The log within `tokens`. Steps from `from` on have their whole entry; before it, their
 * line, but below `quiet` only lines with a note, and below `keep` none. The least cut that
 * fits, oldest first: old excerpts, then old lines without a note, then the recent steps'
 * excerpts and old notes. The last RECENT_STEPS (or a few more) keep their lines and every
 * bound is on a chunk boundary, so the log changes at its start once a chunk at most, and
 * only as its room requires.
 */
export function memoryLog(steps: Remembered[], tokens: number): string {
  if (!steps.length) return "(none yet)";
  const first = firstReads(steps);
  const measures = steps.map((s, i) => measure(s, first.has(i)));
  const count = steps.length;
  // The last RECENT_STEPS at least, on a chunk boundary too: the lines shown move a chunk at a time.
  const recent = Math.floor(Math.max(0, count - RECENT_STEPS) / STEP_CHUNK) * STEP_CHUNK;
  // Prefix sums of each level's cost: sum(level, a, b) is steps a..b-1's.
  const sums = [0, 1, 2].map((level) => {
    const acc = [0];
    for (let index = 0; index < count; index++) acc.push(acc[index]! + measures[index]!.costs[level]!);
    return acc;
  });
  const sum = (level: number, start: number, end: number) =>
    start < end ? sums[level]![end]! - sums[level]![start]! : 0;
  const room = tokens - 20; // the first "not shown" line
  for (const [keep, quiet, from] of cuts(recent, Math.ceil(count / STEP_CHUNK) * STEP_CHUNK)) {
    const upTo = Math.min(from, count);
    const cost = sum(2, keep, Math.min(upTo, quiet)) + sum(1, quiet, upTo) + sum(0, upTo, count);
    if (cost <= room)
      return render(steps, (index) =>
        index >= from
          ? measures[index]!.whole
          : index >= quiet || (index >= keep && measures[index]!.costs[2])
            ? line(steps[index]!)
            : undefined,
      );
  }
  return render(steps, newestFirst(steps, measures, room));
}

/** The (keep, quiet, from) bounds in the order tried, each on a chunk boundary. */
function* cuts(recent: number, end: number): Generator<[number, number, number]> {
  // Older steps' excerpts, then their lines without a note, while the recent steps stay whole.
  for (let quiet = 0; quiet < recent; quiet += STEP_CHUNK)
    for (let from = quiet; from <= recent; from += STEP_CHUNK) yield [0, quiet, from];
  // Then the recent steps' excerpts, and the oldest notes.
  for (let keep = 0; keep <= recent; keep += STEP_CHUNK)
    for (let from = keep; from <= end; from += STEP_CHUNK) yield [keep, recent, from];
}

/** The last resort, when even the recent steps overflow: as many lines as fit, newest first. */
function newestFirst(steps: Remembered[], measures: Measured[], room: number) {
  const kept = new Map<number, string>();
  let left = room;
  for (let index = steps.length - 1; index >= 0; index--) {
    if (steps.length - index > RECENT_STEPS && !measures[index]!.costs[2]) continue;
    const text = line(steps[index]!);
    const cost = estimateTokens(text) + 1;
    if (cost > left) break;
    left -= cost;
    kept.set(index, text);
  }
  return (index: number) => kept.get(index);
}

function render(steps: Remembered[], shown: (index: number) => string | undefined): string {
  const out: string[] = [];
  let next = 1;
  steps.forEach((step, index) => {
    const text = shown(index);
    if (text === undefined) return;
    const skipped = step.number - next;
    if (skipped > 0)
      out.push(
        next === 1
          ? `(${plural(skipped, "earlier step")} not shown)`
          : `(${plural(skipped, "step")} without a note not shown)`,
      );
    out.push(text);
    next = step.number + 1;
  });
  return out.length ? out.join("\n") : `(${steps.length} earlier steps not shown)`;
}
