import { link, mdEscape } from "../registry/markdown.ts";
import type { Crumb, Query } from "../registry/types.ts";

export const PER_PAGE = 20;

export interface Paging {
  page: number;
  take: number;
  skip: number;
}

export function paging(query: Query, per = PER_PAGE): Paging {
  const requested = Number.parseInt(query.page ?? "1", 10);
  const page = Number.isFinite(requested) && requested > 0 ? Math.min(requested, 10_000) : 1;
  return { page, take: per, skip: (page - 1) * per };
}

/** "Page 2 of 5 · [Previous](…) · [Next](…)"; empty when everything fits on one page. */
export function pager(
  path: string,
  paged: Paging,
  total: number,
  extra: Record<string, string> = {},
): string {
  const pages = Math.max(1, Math.ceil(total / paged.take));
  if (pages === 1 && paged.page === 1) return "";
  const href = (pageNumber: number) =>
    `${path}?${new URLSearchParams({ ...extra, page: String(pageNumber) }).toString()}`;
  const parts = [`Page ${paged.page} of ${pages} (${total} in all)`];
  if (paged.page > 1) parts.push(link("Previous", href(paged.page - 1)));
  if (paged.page < pages) parts.push(link("Next", href(paged.page + 1)));
  return parts.join(" · ");
}

export function when(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function who(person: { handle: string; name: string }): string {
  return `${mdEscape(person.name)} ([@${person.handle}](/u/${person.handle}))`;
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

/** A studio as a picker or a confirmation names it: names may repeat ("General" twice), handles do not. */
export function studioName(studio: { handle: string; name: string }): string {
  return `${studio.name} (${studio.handle})`;
}

export function studioCrumbs(studio: { handle: string; name: string }): Crumb[] {
  return [
    home,
    { label: "Studios", path: "/studios" },
    { label: studio.name, path: `/studios/${studio.handle}` },
  ];
}
