// The run's memory as a prompt shows it: one log with an entry per step — what it did, the
// note the model left with it, and the page it read, where it read it — that only grows
// from one step to the next. So a step's prompt is last step's, to the byte, up to the end
// of the log, and a provider serves that much from its prompt cache (prompt.ts puts only a
// short pointer and counters after it). A page stays whole from the log's page start on
// (page-log.ts); older ones keep the start of their first read (an excerpt). The log changes
// inside only when its room runs out: the page start then jumps to the last pages at once,
// and when the lines outgrow their room the oldest steps leave STEP_CHUNK at a time, first
// their excerpts and lines without a note, later their notes. Between two cuts the log is
// append-only.

import { plural } from "../../../lib/plural.ts";
import { excerptLine, firstReads, line, noteOf, RECENT_STEPS, type Remembered } from "./memory.ts";
import { type PageCosts, type PageRendering, pageCosts, pagedFrom, previousStart } from "./page-log.ts";
import { estimateTokens } from "./token-estimate.ts";

/** The oldest steps leave the log this many at a time (and their notes as many). */
export const STEP_CHUNK = 8;
// The "not shown" line a cut may put before a kept note.
const MARKER_TOKENS = 12;

/** A step's whole entry: its line and note, and an excerpt when it first read its page. */
function entry(remembered: Remembered, first: boolean): string {
  const head = line(remembered);
  if (!first) return head;
  const detail = remembered.detail as { page?: string };
  return `${head}\n   ${excerptLine({ markdown: detail.page ?? "", gist: remembered.gist })}`;
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

/** How the log shows its pages: prompt.ts renders them (capped, with the run's tools). */
export interface LogPages extends PageRendering {
  /** The step whose page is the current page: whole whatever the room, never cut from the log. */
  current?: number;
  /** The most a page shown whole costs (its cut): the lines leave it to the current page, whichever it is. */
  cap: number;
}

/** The log's text, and where its cache blocks start (prompt.ts BuiltPrompt `stableCuts`). */
export interface Log {
  text: string;
  /**
   * Offsets in `text`, ascending, each just before the newline that starts an entry: the
   * blocks are entries, the same from one step to the next, and the last cut is where the
   * previous step's log ended.
   */
  cuts: number[];
  /** The cut where the whole pages begin: the bytes before it are the same until it moves. */
  window?: number;
  /** Where they began for the step before, when this step moved it: what this step reads up to. */
  before?: number;
  /** The first step whose page may be whole (page-log.ts pagedFrom): its row keeps it as `logFrom`. */
  start: number;
  /** What `text` costs, at least estimateTokens(text): summed from its entries, each measured once. */
  tokens: number;
}

/** Which entries show what: an entry's text, or undefined when the log leaves it out. */
type Shown = (index: number) => string | undefined;

/**
 * The log within `tokens`, its lines and excerpts within `lineTokens` of them. Lines first,
 * as the memory always chose them (`linesWithin`), with the current page whole beside them;
 * then, in what is left, the pages from the previous step's page start on, or from the
 * last few when they no longer fit.
 */
export function memoryLog(steps: Remembered[], tokens: number, lineTokens = tokens, pages?: LogPages): Log {
  if (!steps.length) return { text: "(none yet)", cuts: [], start: 0, tokens: estimateTokens("(none yet)") };
  const first = firstReads(steps);
  const measures = steps.map((s, i) => measure(s, first.has(i)));
  const current = pages?.current;
  const paged = pages ? pageCosts(steps, pages, current) : [];
  const currentCost =
    current === undefined || !paged[current] ? 0 : paged[current]!.cost + measures[current]!.costs[1];
  // The lines' room depends on no page's size (a large current page would cut them for its
  // step alone): they leave a page's cut to it. A current page after the log has its room already.
  const reserve = current === undefined ? 0 : Math.max(currentCost, pages?.cap ?? 0);
  const lines = linesWithin(steps, measures, Math.min(lineTokens, tokens - reserve));
  const previous = previousStart(steps);
  const start = pagedFrom(
    steps.length,
    tokens - currentCost - lines.cost,
    (index) => (index === current ? 0 : extraCost(paged[index], measures[index]!, lines.shown(index))),
    previous,
  );
  const whole = (index: number) => (index >= start || index === current) && paged[index];
  const {
    text,
    offsets,
    tokens: cost,
  } = render(steps, (index) => {
    const page = whole(index);
    return page ? `${line(steps[index]!)}\n${page.text}` : lines.shown(index);
  });
  const cuts = offsets.filter((at): at is number => at !== undefined && at > 0);
  const from = (index: number) => offsets.slice(Math.max(0, index)).find((at) => at !== undefined && at > 0);
  const window = from(start);
  const before = previous !== undefined && previous < start ? from(previous) : undefined;
  return {
    text,
    cuts,
    start,
    tokens: cost,
    ...(window !== undefined && { window }),
    ...(before !== undefined && before !== window && { before }),
  };
}

/** What showing a step's page whole costs beyond what the lines show of it. */
function extraCost(page: PageCosts[number], measures: Measured, shown: string | undefined): number {
  if (!page) return 0;
  return (
    page.cost +
    measures.costs[1] -
    (shown === undefined ? 0 : shown === measures.whole ? measures.costs[0] : measures.costs[1])
  );
}

/**
 * The lines within `tokens`. Steps from `from` on have their whole entry; before it, their
 * line, but below `quiet` only lines with a note, and below `keep` none. The least cut that
 * fits, oldest first: old excerpts, then old lines without a note, then the recent steps'
 * excerpts and old notes. The last RECENT_STEPS (or a few more) keep their lines and every
 * bound is on a chunk boundary, so the log changes at its start once a chunk at most, and
 * only as its room requires.
 */
function linesWithin(
  steps: Remembered[],
  measures: Measured[],
  tokens: number,
): { shown: Shown; cost: number } {
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
      return {
        cost: cost + 20,
        shown: (index) =>
          index >= from
            ? measures[index]!.whole
            : index >= quiet || (index >= keep && measures[index]!.costs[2])
              ? line(steps[index]!)
              : undefined,
      };
  }
  return newestFirst(steps, measures, room);
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
  return { shown: (index: number) => kept.get(index), cost: room - left + 20 };
}

// What an entry's text as last shown costs: the log is mostly the same entries every step,
// and measuring the whole log again was a tenth of a step's CPU.
const shownCost = new WeakMap<Remembered, { text: string; tokens: number }>();
function costOf(step: Remembered, text: string): number {
  const known = shownCost.get(step);
  if (known?.text === text) return known.tokens;
  const tokens = estimateTokens(text);
  shownCost.set(step, { text, tokens });
  return tokens;
}

/**
 * The entries shown, "not shown" lines between them; each entry's offset, before its newline;
 * and what the text costs: its pieces' estimates and two for each newline between them, which
 * is never less than the estimate of the whole (each piece rounds up on its own, and a newline
 * ends any run of letters or digits).
 */
function render(
  steps: Remembered[],
  shown: Shown,
): { text: string; offsets: (number | undefined)[]; tokens: number } {
  const out: string[] = [];
  const offsets: (number | undefined)[] = [];
  let length = -1;
  let tokens = 0;
  const push = (text: string, cost = estimateTokens(text)) => {
    out.push(text);
    length += text.length + 1;
    tokens += cost + 2;
  };
  let next = 1;
  steps.forEach((step, index) => {
    const text = shown(index);
    if (text === undefined) return;
    const skipped = step.number - next;
    if (skipped > 0)
      push(
        next === 1
          ? `(${plural(skipped, "earlier step")} not shown)`
          : `(${plural(skipped, "step")} without a note not shown)`,
      );
    offsets[index] = Math.max(0, length);
    push(text, costOf(step, text));
    next = step.number + 1;
  });
  if (!out.length) push(`(${steps.length} earlier steps not shown)`);
  return { text: out.join("\n"), offsets, tokens };
}
