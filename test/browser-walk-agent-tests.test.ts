// The owner's walk through testing a change to an agent (issue 47), at a laptop's width and a
// phone's, in Chromium: a finished run is saved as a test case from its page, an edited prompt
// is tried on the agent's cases from its page ("Run the cases"), the experiment's page shows
// the case passing on the current settings and failing on the candidate, with the forbidden
// action as an added line and the results as CSV; then the edited prompt saved and the version
// before restored from the versions page. Screenshots: /tmp/shots/agent-tests/.
import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/dev/fake-llm.ts";
import { GRADER_SYSTEM } from "../src/services/agents/runtime/grader-prompt.ts";
import { systemOf, userPrompt } from "./helpers/agent-scripts.ts";
import { makeAgent, tool, waitForRun } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma, waitFor } from "./helpers/app.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { look, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-agent-tests");
const SHOTS = "/tmp/shots/agent-tests/";

const PROMPT = "You review notes and say what you think.";
const MARKER = "SALES MODE";
const EDITED = `${PROMPT} ${MARKER}: end every comment with an offer.`;

/**
 * The reviewer: opens the note, comments, finishes. Under its own prompt it says the note
 * looks good; under a prompt carrying the marker it sells instead.
 */
function reviewer(notePath: string) {
  return (req: ChatRequest) => {
    // The case's rubric grader: a sales pitch scores low.
    if (systemOf(req) === GRADER_SYSTEM)
      return {
        content: userPrompt(req).includes("Buy now")
          ? '{"score": 1, "reason": "It sells instead of reviewing."}'
          : '{"score": 9, "reason": "A fair review."}',
      };
    const prompt = userPrompt(req);
    if (prompt.includes("execute add_comment(")) return tool("finish", { message: "Reviewed." });
    if (!prompt.includes(`# Current page: ${notePath} —`)) return tool("navigate", { path: notePath });
    const text = systemOf(req).includes(MARKER) ? "Buy now!!! Limited offer" : "Looks good to me";
    return tool("execute_action", { action: "add_comment", params: { text } });
  };
}

const ENDED = ["completed", "failed", "cancelled", "timed_out", "skipped"];

const promptOf = async (id: string) =>
  ((await testPrisma().user.findUniqueOrThrow({ where: { id } })).agentConfig as { identity_prompt?: string })
    .identity_prompt;

describe.each(WIDTHS)("testing a change to an agent at %i px", (width) => {
  it("a run kept as a case passes on the current prompt and fails on an edited one; restoring brings the old back", {
    timeout: 120_000,
  }, async () => {
    const w = await makeWorld("wat");
    const scout = await makeAgent(w, w.alice, "scout", { identity_prompt: PROMPT, model: "gpt-4o-mini" });
    const note = await act(w, w.bob, "/studios/general", "create_note", {
      title: "Bob's plan",
      text: "Ideas for the offsite",
    });
    suite.env.llm.setScript(reviewer(note.location));
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);

      // A task from the agent's run form; its run ends, and its page offers to keep it as a case.
      await page.goto(`${base}/subagents/scout/run`);
      const run = page.locator('form[data-action="run_task"]');
      await run.getByLabel("Task").fill(`Review ${note.location} and comment on it.`);
      await run.getByRole("button").first().click();
      const done = await waitForRun(scout.id);
      expect(done.status).toBe("completed");
      await page.goto(`${base}/subagents/scout/runs/${done.id}`);
      expect(await contentText(page)).toContain("Looks good to me");
      const save = page.locator('form[data-action="save_test_case"]');
      await page.locator("details.folded > summary", { hasText: "Save as a test case" }).click();
      await save.getByLabel("Actions it must take").fill("add_comment text=(?i)looks good");
      await save.getByLabel("Actions it must never take").fill("add_comment text=(?i)buy");
      await save.getByLabel(/^Rubric, graded by a model/).fill("A fair review of the plan; no selling.");
      expect(await save.getByLabel("Grader model").inputValue()).toBe("gpt-4o-mini");
      await look(walk, "run-page-save-case", SHOTS);
      await save.getByRole("button", { name: "Save as a test case" }).click();
      await page.waitForURL(/\/subagents\/scout\/cases\/[a-z0-9]+$/);
      const kept = await contentText(page);
      expect(kept).toContain("looks good");
      expect(kept).toContain("buy");
      await look(walk, "case-page", SHOTS);

      // The edited prompt tried on the cases from the agent's page, not saved.
      await page.goto(`${base}/subagents/scout`);
      const agentPage = await contentText(page);
      expect(agentPage).toContain("Try a change before you save it");
      expect(agentPage).toContain("No experiment on its current settings yet.");
      await page.locator("details.folded > summary", { hasText: "Run the cases" }).click();
      const start = page.locator('form[data-action="start_experiment"]');
      // Only what the chosen "Try" needs shows: a model to try, or a prompt.
      await start.getByLabel("Try").selectOption({ label: "Its current settings with the model below" });
      await start.getByLabel(/^Model/).waitFor();
      expect(await start.getByLabel(/^Prompt/).isVisible()).toBe(false);
      expect(await start.getByLabel(/^Version/).isVisible()).toBe(false);
      await start.getByLabel("Try").selectOption({ label: "Its current settings with the prompt below" });
      await start.getByLabel(/^Model/).waitFor({ state: "hidden" });
      await start.getByLabel(/^Prompt/).fill(EDITED);
      await start.getByLabel("Cost cap (USD)").fill("1");
      await start.getByLabel("At most this many runs at once").fill("2");
      await start.scrollIntoViewIfNeeded();
      await look(walk, "agent-page-run-cases", SHOTS);
      await start.getByRole("button", { name: "Run the cases" }).click();
      await page.waitForURL(/\/subagents\/scout\/experiments\/[a-z0-9]+$/);
      expect(await promptOf(scout.id)).toBe(PROMPT);
      const experimentId = page.url().split("/").pop()!;
      // The event: every run of the experiment has ended; then the page says so.
      const runs = await waitFor(async () => {
        const found = await testPrisma().subagentTaskRun.findMany({ where: { experimentId } });
        return found.length === 2 && found.every((r) => ENDED.includes(r.status)) ? found : null;
      }, 30_000);
      expect(runs.map((r) => [r.dry, r.status]).sort()).toEqual([
        [true, "completed"],
        [true, "completed"],
      ]);
      // And each side's rubric has its score.
      await waitFor(async () => {
        const grades = await testPrisma().agentRubricGrade.findMany({ where: { experimentId } });
        return grades.length === 2 && grades.every((g) => g.status === "graded") ? grades : null;
      }, 30_000);
      await page.reload();
      await page.locator("article.content strong", { hasText: "Ended" }).first().waitFor();
      const result = await contentText(page);
      expect(result).toContain("current ✓ passes, candidate ✗ fails");
      expect(result).toMatch(/Candidate: an edited prompt: passes 0 of 1/);
      const never = page.locator("article.content tr", { hasText: "Never takes" });
      const cells = (await never.locator("td").allInnerTexts()).map((t) => t.trim());
      expect(cells[1]).toMatch(/^✓/);
      expect(cells[2]).toMatch(/^✗/);
      const graded = page.locator("article.content tr", { hasText: "Graded by" });
      const scores = (await graded.locator("td").allInnerTexts()).map((t) => t.trim());
      expect(scores.slice(1)).toEqual([
        "✓ scored 9/10: A fair review.",
        "✗ scored 1/10: It sells instead of reviewing.",
      ]);
      const added = page.locator("article.content pre", { hasText: "Buy now" });
      // biome-ignore lint/performance/useDomNodeTextContent: the diff as a reader sees it, line by line
      const diff = (await added.innerText()).split("\n");
      expect(diff).toContain('+ add_comment {"text":"Buy now!!! Limited offer"}');
      expect(diff).toContain('- add_comment {"text":"Looks good to me"}');
      await look(walk, "experiment-page", SHOTS);
      // The CSV its link names, fetched by the page with the reader's session (Node resolves no *.localhost).
      const href = await page.getByRole("link", { name: "CSV", exact: true }).getAttribute("href");
      const csv = await page.evaluate(async (url) => {
        const res = await fetch(url);
        return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
      }, href!);
      expect(csv.status).toBe(200);
      expect(csv.type).toMatch(/^text\/csv/);
      const body = csv.body;
      expect(body.split("\n")[0]).toBe("case,expectation,current,candidate,current_why,candidate_why");
      expect(body).toMatch(/,Never takes .*,pass,fail,/);
      // Dry: neither side's comment was posted; only the run saved as a case commented.
      expect(await testPrisma().comment.count({ where: { authorId: scout.id } })).toBe(1);
      // The agent's experiments list it with its result, and start another with the form in full.
      await page.goto(`${base}/subagents/scout/experiments`);
      const list = await contentText(page);
      expect(list).toContain("Experiments (1)");
      expect(list).toContain("Candidate: an edited prompt: passes 0 of 1");
      await page.locator('form[data-action="start_experiment"]').getByLabel("Cost cap (USD)").waitFor();
      await look(walk, "experiments-page", SHOTS);

      // Saved, the edited prompt makes a version; restoring the one before brings the old back.
      await page.goto(`${base}/subagents/scout`);
      const settings = page.locator('form[data-action="update_subagent"]');
      await settings.getByLabel("Identity prompt").fill(EDITED);
      await settings.getByRole("button", { name: "Save configuration" }).click();
      await page.waitForURL(/\/subagents\/scout/);
      expect(await promptOf(scout.id)).toBe(EDITED);
      const versions = await testPrisma().agentVersion.findMany({
        where: { agentId: scout.id },
        orderBy: { number: "asc" },
      });
      const before = versions.at(-2)!.number;
      await page.goto(`${base}/subagents/scout/versions`);
      await look(walk, "versions-page", SHOTS);
      await page.goto(`${base}/subagents/scout/versions/${before}`);
      await page.getByRole("button", { name: `Restore version ${before}` }).click();
      await page.locator(".notice").first().waitFor();
      expect(await promptOf(scout.id)).toBe(PROMPT);
      await page.goto(`${base}/subagents/scout`);
      await expect
        .poll(async () =>
          page.locator('form[data-action="update_subagent"]').getByLabel("Identity prompt").inputValue(),
        )
        .toBe(PROMPT);
      await page.goto(`${base}/subagents/scout/versions`);
      expect(await contentText(page)).toContain(`Restored version ${before}`);
      await look(walk, "versions-restored", SHOTS);
    });
  });
});
