// Re-running a finished run from a step, walked in Chromium at a laptop's width and a
// phone's: the step page offers "Re-run from here" with an optional model; the new run's
// page shows the copied steps, then the original and the replay side by side (columns on a
// laptop, stacked on a phone).
import { describe, expect, it } from "vitest";
import { makeAgent, waitForRun } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";
import { planScript } from "./helpers/approvals.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { look, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-replay");

describe.each(WIDTHS)("re-run from a step at %i px", (width) => {
  it("the step page's form starts the replay; its page shows the two runs from the branching step", async () => {
    const w = await makeWorld("wp");
    const scout = await makeAgent(w, w.alice, "scout");
    const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Retro", text: "When?" });
    const plan = (last: string) =>
      planScript([
        { path: note.location, action: "add_comment", params: { text: "Thursday?" } },
        { path: note.location, action: "add_comment", params: { text: last } },
      ]);
    const [mine, theirs] = [plan("Thursday it is."), plan("Friday would suit more people.")];
    suite.env.llm.setScript((req) => (req.model === "gpt-4o-mini" ? theirs(req) : mine(req)));
    await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Settle the retro's day" });
    const run = await waitForRun(scout.id);
    const steps = await testPrisma().subagentTaskRunStep.findMany({ where: { runId: run.id } });
    const branch = steps.find((s) => JSON.stringify(s.detail).includes("Thursday it is."))!;
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/subagents/scout/runs/${run.id}/steps/${branch.number}`);
      const form = page.locator('form[data-action="replay_run"]');
      await form.waitFor();
      await look(walk, "replay-step-page");
      await form.getByLabel("Model").selectOption("gpt-4o-mini");
      await form.getByRole("button").click();
      await page.waitForURL(/\/subagents\/scout\/runs\/(?!.*steps)/);
      const replayId = page.url().split("/").pop()!;
      expect(replayId).not.toBe(run.id);
      await expectCompleted(replayId);
      await page.reload();
      const text = await contentText(page);
      expect(text).toContain(`Side by side from step ${branch.number}`);
      expect(text).toContain("Friday would suit more people.");
      expect(text).toContain("replayed from the original run, not done again");
      const [left, right] = await page.locator(".side-by-side > section").all();
      const [l, r] = [await left!.boundingBox(), await right!.boundingBox()];
      // Side by side on a laptop; one above the other on a phone.
      if (width === 1280) expect(r!.x).toBeGreaterThan(l!.x + l!.width - 1);
      else expect(r!.y).toBeGreaterThanOrEqual(l!.y + l!.height - 1);
      await page.locator(".side-by-side").scrollIntoViewIfNeeded();
      await look(walk, "replay-side-by-side");
    });
  });
});

async function expectCompleted(runId: string) {
  for (let i = 0; i < 100; i++) {
    const r = await testPrisma().subagentTaskRun.findUniqueOrThrow({ where: { id: runId } });
    if (r.status === "completed") return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`run ${runId} did not complete`);
}
