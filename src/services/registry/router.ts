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

  return function match(path: string): Match | null {
    const parts = path.split("/").filter(Boolean);
    for (const c of compiled) {
      if (c.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const seg = c.segments[i]!;
        const part = parts[i]!;
        if (seg.startsWith(":")) {
          if (SEGMENT.test(part)) params[seg.slice(1)] = part;
          else ok = false;
        } else ok = seg === part;
      }
      if (ok) return { page: c.page, params };
    }
    return null;
  };
}

function score(segments: string[]): number {
  return segments.reduce((s, seg, i) => s + (seg.startsWith(":") ? 0 : 2 ** (16 - i)), 0);
}
