// The docs check (scripts/check-docs.ts, `npm run check:docs`): fails on an unclosed code fence
// or a dead relative link, passes on good markdown and on the project's own tree.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { checkDocs, headingAnchors, projectMarkdown } from "../scripts/check-docs.ts";

const root = path.resolve(import.meta.dirname, "..");
const fixtures = path.join(root, "test/fixtures/docs");
const fixture = (name: string) => path.join(fixtures, name);
const run = promisify(execFile);

/** The script as npm runs it; resolves with its exit code and output, never rejects. */
async function runScript(files: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ["--import", "tsx", "scripts/check-docs.ts", ...files],
      {
        cwd: root,
      },
    );
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

describe("the docs check", () => {
  it("passes a good page: closed fences, a longer fence around a shown one, live links and anchors", () => {
    expect(checkDocs([fixture("good/README.md"), fixture("good/other.md")])).toEqual([]);
  });

  it("fails a fence that is never closed, at the line that opened it", () => {
    const problems = checkDocs([fixture("broken/unclosed-fence.md")]);
    expect(problems).toEqual([
      {
        file: fixture("broken/unclosed-fence.md"),
        line: 3,
        message: "code fence opened here is never closed",
      },
    ]);
  });

  it("fails a section pasted inside an example's fence (a fence with a language inside an open block)", () => {
    const problems = checkDocs([fixture("broken/fence-inside-fence.md")]);
    expect(problems.map((problem) => problem.line)).toEqual([8, 13]);
    expect(problems[0]?.message).toContain("inside the code block opened at line 5");
    expect(problems[1]?.message).toBe("code fence opened here is never closed");
  });

  it("fails a dead file link, a dead heading in another file and a dead heading in its own", () => {
    const messages = checkDocs([fixture("broken/dead-links.md")]).map((problem) => problem.message);
    expect(messages).toEqual([
      "dead link: missing.md (no missing.md)",
      "dead link: ../good/other.md#no-such-heading (no heading #no-such-heading in ../good/other.md)",
      "dead link: #nor-here (no heading #nor-here in this file)",
    ]);
  });

  it("makes anchors as GitHub does: punctuation and code marks dropped, repeats numbered", () => {
    const anchors = headingAnchors(
      "# Agent runs: `npx tsx bench/agent-runs.ts`\n\n## Results\n\n### Results\n",
    );
    expect([...anchors]).toEqual(["agent-runs-npx-tsx-benchagent-runsts", "results", "results-1"]);
  });

  it("exits 1 naming file and line on the broken fixtures, 0 on the good ones", async () => {
    const broken = await runScript([
      "test/fixtures/docs/broken/unclosed-fence.md",
      "test/fixtures/docs/broken/dead-links.md",
    ]);
    expect(broken.code).toBe(1);
    expect(broken.output).toContain("test/fixtures/docs/broken/unclosed-fence.md:3: code fence opened here");
    expect(broken.output).toContain("test/fixtures/docs/broken/dead-links.md:3: dead link: missing.md");
    const good = await runScript(["test/fixtures/docs/good/README.md", "test/fixtures/docs/good/other.md"]);
    expect(good).toEqual({ code: 0, output: expect.stringContaining("every fence closed") });
  });

  it("passes on the project's own tree: README, docs/, bench/ and every folder README under src/", async () => {
    const files = projectMarkdown(root).map((file) => path.relative(root, file));
    expect(files).toContain("README.md");
    expect(files).toContain("docs/README.md");
    expect(files).toContain("bench/HISTORY.md");
    expect(files).toContain("src/services/catalog/README.md");
    expect(checkDocs(projectMarkdown(root))).toEqual([]);
    expect((await runScript([])).code).toBe(0);
  });
});
