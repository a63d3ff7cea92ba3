// The pages in the run's log (memory-log.ts): each page a step read sits in that step's
// entry, whole while the step is in the window, and the window's start moves on a fixed
// clock, PAGE_CHUNK steps at a time, so the bytes before it never change between two moves.
// A page read again is shown whole once, at its newest read; its older read keeps its line.

import { estimateTokens } from "./token-estimate.ts";

/** A step as the page log reads it: memory.ts `Remembered` (which imports this module) is one. */
interface Read {
  type: string;
  path?: string | null;
  detail: unknown;
}

/**
 * A page may stay whole while its step is among the last PAGE_WINDOW steps, and leaves with
 * the others of its chunk of PAGE_CHUNK steps; sooner, a chunk at a time, when the window's
 * pages do not fit the room (pagedFrom). The last RECENT_PAGES stay whole whatever the room
 * does to the rest: the current page and the one before it, as the agent has always seen them.
 */
export const PAGE_WINDOW = 6;
export const PAGE_CHUNK = 3;
export const RECENT_PAGES = 2;

/** Where the window of `count` steps starts, by the clock alone: its pages are whole, room permitting. */
export const windowStart = (count: number) =>
  Math.floor(Math.max(0, count - PAGE_WINDOW) / PAGE_CHUNK) * PAGE_CHUNK;

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

/** The pages the window (from windowStart) may show whole, and the current one's (`current`). */
export function pageCosts(steps: Read[], rendering: PageRendering, current?: number): PageCosts {
  const costs: PageCosts = [];
  const later = new Set<string>();
  const from = windowStart(steps.length);
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
 * The first step whose page is whole: the window's start when every page from there fits
 * `room`, else a chunk later, and so on; then the last RECENT_PAGES steps' pages, then fewer
 * (past the last step: none but the current page). Off the clock the log changes every
 * step, but only when pages too large for the room leave no choice: the pages just read
 * matter more than the cache. `extra(index)` is what showing a step's page whole adds.
 */
export function pagedFrom(count: number, room: number, extra: (index: number) => number): number {
  const first = windowStart(count);
  const suffix: number[] = [];
  let total = 0;
  for (let index = count - 1; index >= first; index--) suffix[index] = total += extra(index);
  const last = Math.max(first, count - RECENT_PAGES);
  for (
    let start = first;
    start < count;
    start = start < last ? Math.min(start + PAGE_CHUNK, last) : start + 1
  )
    if (suffix[start]! <= room) return start;
  return count;
}
