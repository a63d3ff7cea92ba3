import type { PageDef } from "./types.ts";

interface Compiled {
  page: PageDef;
  segments: string[];
}

export interface Match {
  page: PageDef;
  params: Record<string, string>;
}

const SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;

/** Literal segments beat params, so `/studios/new` could never be shadowed by `/studios/:studio`. */
export function createRouter(pages: PageDef[]) {
  const compiled: Compiled[] = pages
    .map((page) => ({ page, segments: page.pattern.split("/").filter(Boolean) }))
    .sort((a, b) => score(b.segments) - score(a.segments));

  // By number of segments, each list in the order above: a lookup tries only pages of the
  // path's length (an agent reads a page every step, and there are a hundred patterns).
  const byLength = new Map<number, Compiled[]>();
  for (const entry of compiled) {
    const same = byLength.get(entry.segments.length) ?? [];
    same.push(entry);
    byLength.set(entry.segments.length, same);
  }

  return function match(path: string): Match | null {
    const parts = path.split("/").filter(Boolean);
    for (const entry of byLength.get(parts.length) ?? [])
      if (fits(entry.segments, parts)) return matched(entry, parts);
    return null;
  };
}

function fits(segments: string[], parts: string[]): boolean {
  for (let index = 0; index < parts.length; index++) {
    const seg = segments[index]!;
    if (seg.startsWith(":") ? !SEGMENT.test(parts[index]!) : seg !== parts[index]) return false;
  }
  return true;
}

function matched(entry: Compiled, parts: string[]): Match {
  const params: Record<string, string> = {};
  for (let index = 0; index < parts.length; index++)
    if (entry.segments[index]!.startsWith(":")) params[entry.segments[index]!.slice(1)] = parts[index]!;
  return { page: entry.page, params };
}

function score(segments: string[]): number {
  return segments.reduce((s, seg, i) => s + (seg.startsWith(":") ? 0 : 2 ** (16 - i)), 0);
}
