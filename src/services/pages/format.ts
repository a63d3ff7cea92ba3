import { link, mdEscape } from "../registry/markdown.ts";
import type { Crumb, Query } from "../registry/types.ts";

export const PER_PAGE = 20;

export interface Paging {
  page: number;
  take: number;
  skip: number;
}

export function paging(query: Query, per = PER_PAGE): Paging {
  const n = Number.parseInt(query.page ?? "1", 10);
  const page = Number.isFinite(n) && n > 0 ? Math.min(n, 10_000) : 1;
  return { page, take: per, skip: (page - 1) * per };
}

/** "Page 2 of 5 · [Previous](…) · [Next](…)"; empty when everything fits on one page. */
export function pager(path: string, p: Paging, total: number, extra: Record<string, string> = {}): string {
  const pages = Math.max(1, Math.ceil(total / p.take));
  if (pages === 1 && p.page === 1) return "";
  const href = (n: number) => `${path}?${new URLSearchParams({ ...extra, page: String(n) }).toString()}`;
  const parts = [`Page ${p.page} of ${pages} (${total} in all)`];
  if (p.page > 1) parts.push(link("Previous", href(p.page - 1)));
  if (p.page < pages) parts.push(link("Next", href(p.page + 1)));
  return parts.join(" · ");
}

export function when(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function who(u: { handle: string; name: string }): string {
  return `${mdEscape(u.name)} ([@${u.handle}](/u/${u.handle}))`;
}

export function excerpt(text: string, max = 140): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export const home: Crumb = { label: "Home", path: "/" };

export const subagentsCrumb: Crumb = { label: "Subagents", path: "/subagents" };

export function agentCrumbs(agent: { handle: string; name: string }): Crumb[] {
  return [home, subagentsCrumb, { label: agent.name, path: `/subagents/${agent.handle}` }];
}

export function studioCrumbs(studio: { handle: string; name: string }): Crumb[] {
  return [
    home,
    { label: "Studios", path: "/studios" },
    { label: studio.name, path: `/studios/${studio.handle}` },
  ];
}
