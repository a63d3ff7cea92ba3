// The pages in the run's log (memory-log.ts): each page a step read sits in that step's
// entry, whole from the log's page start on, and that start moves only when the pages from
// it no longer fit: then at once to the newest page (RECENT_PAGES), so the log appends for as
// many steps as the room holds before it changes inside again (the bytes before the start
// never change while it stays). Where it stood for a step's prompt is kept in that step's row
// (`logFrom`), so the next step, a resumed run and the step page rebuild the same choice.
// A page read again is shown whole once, at its newest read; its older read keeps its line.

import { estimateTokens } from "./token-estimate.ts";

/** A step as the page log reads it: memory.ts `Remembered` (which imports this module) is one. */
interface Read {
  type: string;
  path?: string | null;
  detail: unknown;
}

/**
 * The newest page (the current one) stays whole whatever the room does to the rest. A cut
 * keeps only it: what a cut sends again after the first byte it changes is the cache's
 * loss, and the fewer pages it keeps the later the next cut (bench/README.md: two kept cost
 * 37 % effective input, one 33 %). From the step after a cut the page before is whole again.
 */
export const RECENT_PAGES = 1;
/** At most this many pages whole at once: past it, more cost than a cache saves (bench/README.md). */
export const MOST_PAGES = 6;
/** And at most this many steps back, whatever they read: what a waiting run keeps in memory is bounded too. */
export const MOST_STEPS = 12;

/** Where the log's pages started for the newest step's prompt that says (its row's `logFrom`). */
export function previousStart(steps: readonly Read[]): number | undefined {
  for (let index = steps.length - 1; index >= 0; index--) {
    const from = (steps[index]!.detail as { logFrom?: unknown } | null)?.logFrom;
    if (typeof from === "number") return from;
  }
  return undefined;
}

/** The earliest step whose page the log of `count` steps may show whole: none before it ever again. */
export const wholeFrom = (steps: readonly Read[]) =>
  Math.max(0, Math.min(previousStart(steps) ?? 0, steps.length - RECENT_PAGES));

/** The step's page when it read one (a navigation: its page as recorded, kept while in the window). */
export function pageOf(step: Read): string | undefined {
  const page = step.type === "navigate" ? (step.detail as { page?: unknown } | null)?.page : undefined;
  return typeof page === "string" ? page : undefined;
}

const pathOf = (step: Read) =>
  ((step.detail as { resultPath?: unknown } | null)?.resultPath as string | undefined) ?? step.path ?? "";

/** Per step, its page as shown whole and what that costs; none for a step without one or read again since. */
export type PageCosts = ({ text: string; cost: number } | undefined)[];

/** How the log renders a page whole: `key` names the rendering (the cap, the tools), the same every step of a run. */
export interface PageRendering {
  key: string;
  render: (page: string) => string;
}

// Rendered and measured once per record and rendering.
const rendered = new WeakMap<Read, { text: string; cost: number; key: string }>();

/** The pages the log may show whole (from wholeFrom), and the current one's (`current`). */
export function pageCosts(steps: Read[], rendering: PageRendering, current?: number): PageCosts {
  const costs: PageCosts = [];
  const later = new Set<string>();
  const from = wholeFrom(steps);
  for (let index = steps.length - 1; index >= 0; index--) {
    const step = steps[index]!;
    const page = pageOf(step);
    if (page === undefined) continue;
    const path = pathOf(step);
    if (later.has(path)) continue;
    later.add(path);
    if (index < from && index !== current) continue;
    let cached = rendered.get(step);
    if (cached?.key !== rendering.key) {
      const text = rendering.render(page);
      cached = { text, cost: estimateTokens(text) + 1, key: rendering.key };
      rendered.set(step, cached);
    }
    costs[index] = cached;
  }
  return costs;
}

/**
 * The first step whose page is whole: the previous step's start while every page from there
 * fits `room`, they are at most MOST_PAGES and MOST_STEPS back; else the last RECENT_PAGES steps' pages, then
 * fewer (past the last step: none but the current page). Jumping that far, not a step, is
 * what leaves the log unchanged for the next few steps. `extra(index)` is what showing a
 * step's page whole adds; `previous` is previousStart.
 */
export function pagedFrom(
  count: number,
  room: number,
  extra: (index: number) => number,
  previous: number | undefined,
): number {
  const last = Math.max(0, count - RECENT_PAGES);
  const from = Math.min(previous ?? 0, last);
  const suffix: number[] = [];
  let total = 0;
  let pages = 0;
  for (let index = count - 1; index >= from; index--) {
    const cost = extra(index);
    if (cost > 0) pages++;
    suffix[index] = total += cost;
  }
  if (suffix[from]! <= room && pages <= MOST_PAGES && count - from <= MOST_STEPS) return from;
  for (let start = last; start < count; start++) if (suffix[start]! <= room) return start;
  return count;
}
