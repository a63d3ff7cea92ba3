// A waiting run keeps only what its prompts can show (memory.ts compact): the pages from the
// log's page start (page-log.ts) and the newest read whole, older paths as excerpts. The prompts must not
// change by a byte, whether the current page is the newest read or one no step read.
import { describe, expect, it } from "vitest";
import { compact, type Remembered } from "../src/services/agents/prompt/memory.ts";
import { MOST_STEPS, RECENT_PAGES } from "../src/services/agents/prompt/page-log.ts";
import { buildMessages, buildPrompt, type PromptInput } from "../src/services/agents/prompt/prompt.ts";

const page = (path: string, n: number) =>
  `[Home](/) › ${path}\n\n# Page ${path}\n\nRead at step ${n}. ${"Lorem ipsum dolor sit amet. ".repeat(40)}\n\n## Actions\n\n- \`add_comment\`(text) — Comment`;

/** Step i of a wandering run: navigations over a few paths, one failing, one action landing on a page. */
function stepOf(i: number): Remembered {
  const paths = ["/a", "/b", "/c", "/a", "/d", "/b", "/b", "/e", "/c", "/a"];
  const path = paths[i % paths.length]!;
  const number = i + 1;
  if (i === 4)
    return { number, type: "navigate", path: "/gone", detail: { ok: false, status: 404, page: "nope" } };
  if (i === 6)
    return {
      number,
      type: "execute",
      path,
      detail: { ok: true, action: "add_comment", resultPath: path, note: "did it" },
    };
  return {
    number,
    type: "navigate",
    path,
    detail: { ok: true, resultPath: path, page: page(path, number), note: `n${i}` },
  };
}

const input = (steps: Remembered[], current: string, markdown = page(current, 99)): PromptInput => ({
  agent: { name: "Scout", handle: "scout", identityPrompt: "" },
  owner: "Alice",
  workspace: "Acme",
  task: "Look around.",
  steps,
  page: { path: current, markdown },
  stepsLeft: 10,
  budget: 6000,
});

/** The run's records as its worker writes them: each keeps where its prompt's whole pages began. */
function walk(length: number): Remembered[] {
  const steps: Remembered[] = [];
  for (let i = 0; i < length; i++) {
    const step = stepOf(i);
    const before = steps.at(-1);
    const { logFrom } = buildPrompt(input(steps, before?.path ?? "/whoami"));
    steps.push(i === 0 ? step : { ...step, detail: { ...(step.detail as object), logFrom } });
  }
  return steps;
}

const prompt = (steps: Remembered[], current: string, markdown?: string) =>
  buildMessages(input(steps, current, markdown));

const wholePages = (steps: Remembered[]) =>
  steps.filter((s) => typeof (s.detail as { page?: unknown }).page === "string").length;

describe("a run's memory, compacted", () => {
  it("builds the same prompt at every step, from wherever the run is, holding the window's pages whole", () => {
    const kept: Remembered[] = [];
    const run = walk(30);
    for (const step of run) {
      kept.push(step);
      compact(kept);
      const full = run.slice(0, step.number);
      for (const current of ["/a", "/b", "/c", "/e", "/z"])
        expect(prompt(kept, current)).toEqual(prompt(full, current));
      // On the page its newest read shows, which the log holds.
      const newest = full.findLast((s) => typeof (s.detail as { page?: unknown }).page === "string")!;
      const read = [newest.path!, (newest.detail as { page: string }).page] as const;
      expect(JSON.stringify(prompt(kept, ...read))).not.toContain("After your last step");
      expect(prompt(kept, ...read)).toEqual(prompt(full, ...read));
      expect(wholePages(kept)).toBeLessThanOrEqual(MOST_STEPS + RECENT_PAGES);
    }
    // First reads show as excerpts in the log: there is something to compact, and it was.
    expect(JSON.stringify(prompt(kept, "/z"))).toContain(
      "1. navigate /a — ok\\n   your note: n0\\n   excerpt: Page /a — Read at step 1. ",
    );
    expect(wholePages(walk(30))).toBeGreaterThan(20);
  });

  it("leaves the records it was given alone: a step just written may still be on its way to Postgres", () => {
    const steps = walk(10);
    const details = steps.map((s) => s.detail);
    const before = JSON.stringify(details);
    compact(steps);
    expect(JSON.stringify(details)).toBe(before);
  });
});
