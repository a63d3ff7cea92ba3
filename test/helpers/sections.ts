// Reading a markdown page as the tests check it: one `## ` section, a section's table rows.
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";
import { md, type Person, type World } from "./app.ts";

/** The markdown between `## title` and the next `## ` heading. */
export function section(page: string, title: string): string {
  const start = page.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`no section "${title}" in:\n${page}`);
  const rest = page.slice(start + 1);
  const end = rest.indexOf("\n## ", 3);
  return end < 0 ? rest : rest.slice(0, end);
}

/** A section's table body rows. */
export const tableRows = (page: string, title: string) =>
  section(page, title)
    .split("\n")
    .filter((l) => l.startsWith("| ") && !l.startsWith("|---"))
    .slice(1);

/** A page's markdown as `who` reads it, which must answer 200. */
export async function pageBody(app: FastifyInstance, w: World, who: Person, url: string): Promise<string> {
  const res = await md(app, w, who, "GET", url);
  expect(res.statusCode, `${url}: ${res.body.slice(0, 200)}`).toBe(200);
  return res.body;
}
