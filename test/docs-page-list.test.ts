// The markdown API's page list (docs/markdown-api.md, "## Pages") cannot drift from the registry:
// the check read from the registry fails on a page missing from the list, a line naming a page
// the registry does not serve, and a page listed twice; it passes on the project's own list.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { checkPageList } from "../scripts/check-docs.ts";
import { listedPatterns, pageListProblems } from "../scripts/page-list.ts";
import { registry } from "../src/services/catalog/catalog.ts";

const root = path.resolve(import.meta.dirname, "..");
const file = path.join(root, "docs", "markdown-api.md");
const markdown = readFileSync(file, "utf8");
const patterns = registry.pages.map((page) => page.pattern);

describe("the markdown API's page list", () => {
  it("lists every page pattern the registry serves, each once, and nothing else", async () => {
    expect(patterns.length).toBeGreaterThan(40);
    expect(await checkPageList(root)).toEqual([]);
    const listed = listedPatterns(markdown)!.map((entry) => entry.pattern);
    expect([...listed].sort()).toEqual([...patterns].sort());
  });

  it("fails naming a registry page whose line is missing", () => {
    const without = markdown.replace(/^- `\/subagents\/:handle\/memory` — .*\n/m, "");
    expect(without).not.toBe(markdown);
    const problems = pageListProblems(file, without, patterns);
    expect(problems.map((problem) => problem.message)).toEqual([
      expect.stringContaining(
        "page /subagents/:handle/memory is served by the registry but missing from the list",
      ),
    ]);
  });

  it("fails a page another engineer adds to the registry until it has its line", () => {
    const problems = pageListProblems(file, markdown, [...patterns, "/settings/not-yet-listed"]);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.message).toContain('add a line "- `/settings/not-yet-listed` — what it is"');
  });

  it("fails a line for a page the registry no longer serves, and a page listed twice, at their lines", () => {
    const section =
      "\n## Pages\n\n- `/` — home\n- `/gone` — removed long ago\n- `/` — home again\n\n## After\n";
    const problems = pageListProblems(file, section, ["/"]);
    expect(problems).toEqual([
      { file, line: 5, message: "page /gone is listed, but the registry serves no such page" },
      { file, line: 6, message: "page / is listed twice (first at line 4)" },
    ]);
  });

  it("fails a page without the section, and reads only the section (a pattern in prose elsewhere is no line)", () => {
    expect(pageListProblems(file, "# The markdown API\n\n- `/` — home\n", ["/"])[0]!.message).toContain(
      'no "## Pages" section',
    );
    const elsewhere = "## Actions\n\n- `/whoami` — not the list\n\n## Pages\n\n- `/` — home\n";
    expect(listedPatterns(elsewhere)).toEqual([{ pattern: "/", line: 7 }]);
  });
});
