// What a request to the registry's one route (routes/pages.ts) asks for, read from its URL
// alone: the page and, at `<page>/actions/<name>`, the action. The route itself, the audit
// trail and the request metrics all read it the same way.
import { registry } from "../services/catalog/catalog.ts";
import type { Query } from "../services/registry/types.ts";
import { withoutMdSuffix } from "./format.ts";

export function parseUrl(url: string): { path: string; query: Query } {
  const u = new URL(url, "http://x");
  return { path: decodeURIComponent(u.pathname), query: Object.fromEntries(u.searchParams) };
}

export function splitAction(path: string): { page: string; action: string } | null {
  const segs = path.split("/").filter(Boolean);
  if (segs.length < 2 || segs[segs.length - 2] !== "actions") return null;
  return { page: `/${segs.slice(0, -2).join("/")}`, action: segs[segs.length - 1]! };
}

/** The page's path (without `.md`) and, at `<page>/actions/<name>`, the action. Throws on %-escapes that are not UTF-8. */
export function targetOf(url: string): { page: string; action?: string } {
  const raw = parseUrl(url).path;
  const path = withoutMdSuffix(raw) ?? raw;
  return splitAction(path) ?? { page: path };
}

export const UNMATCHED = "unmatched";

/**
 * The route a request took, as a metrics label: its page's pattern and, for an action the
 * page lists, the action (`/studios/:studio/actions/create_note`). Never the path itself, so
 * an address that names no page adds no label value: it is `unmatched`.
 */
export function routePattern(url: string): string {
  let target: ReturnType<typeof targetOf>;
  try {
    target = targetOf(url);
  } catch {
    return UNMATCHED;
  }
  const page = registry.pageAt(target.page);
  if (!page) return UNMATCHED;
  if (target.action === undefined) return page.pattern;
  const action = page.actions.includes(target.action) ? target.action : ":action";
  return `${page.pattern === "/" ? "" : page.pattern}/actions/${action}`;
}
