// The markdown API's page list (docs/markdown-api.md, "## Pages") against the registry: every
// page pattern the registry serves has its line there, and no line names a page it no longer
// has. Read from the registry itself, so a page added anywhere fails the check until it is listed.
import type { Problem } from "./check-docs.ts";

export const PAGE_LIST_HEADING = "## Pages";

/** The patterns listed: a line `- \`/path/:part\` — what it is` under the heading, up to the next `## `. */
export function listedPatterns(markdown: string): { pattern: string; line: number }[] | null {
  const lines = markdown.split("\n");
  const start = lines.findIndex((text) => text.trim() === PAGE_LIST_HEADING);
  if (start < 0) return null;
  const listed: { pattern: string; line: number }[] = [];
  for (let index = start + 1; index < lines.length && !lines[index]!.startsWith("## "); index++) {
    const match = /^- `(\/[^`]*)` — \S/.exec(lines[index]!);
    if (match?.[1]) listed.push({ pattern: match[1], line: index + 1 });
  }
  return listed;
}

/** What is wrong with `file`'s page list, given the patterns the registry serves. */
export function pageListProblems(file: string, markdown: string, patterns: string[]): Problem[] {
  const listed = listedPatterns(markdown);
  if (!listed)
    return [{ file, line: 1, message: `no "${PAGE_LIST_HEADING}" section listing the registry's pages` }];
  const served = new Set(patterns);
  const seen = new Map<string, number>();
  const problems: Problem[] = [];
  for (const { pattern, line } of listed) {
    const before = seen.get(pattern);
    if (before)
      problems.push({ file, line, message: `page ${pattern} is listed twice (first at line ${before})` });
    else if (!served.has(pattern))
      problems.push({
        file,
        line,
        message: `page ${pattern} is listed, but the registry serves no such page`,
      });
    seen.set(pattern, before ?? line);
  }
  const headingLine = markdown.split("\n").findIndex((text) => text.trim() === PAGE_LIST_HEADING) + 1;
  for (const pattern of patterns)
    if (!seen.has(pattern))
      problems.push({
        file,
        line: headingLine,
        message: `page ${pattern} is served by the registry but missing from the list: add a line "- \`${pattern}\` — what it is"`,
      });
  return problems;
}
