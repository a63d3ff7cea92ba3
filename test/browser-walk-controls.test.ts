// Issue 32's controls walked in Chromium at 1280 and 390 px, each journey acted out at each
// width (test/helpers/walk.ts): an agent's memory page (its history, an edit by its owner),
// and pause and resume on a running run's page with its reply streaming in. Screenshots go
// to tmp/walk/ for a person to look at.
import { describe, expect, it } from "vitest";
import { writeScratchpad } from "../src/services/scratchpad.ts";
import { runIdOf } from "./helpers/agent-scripts.ts";
import { makeAgent, tool } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";
import { logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { look, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("browser-controls");
const db = testPrisma;

/** A world where @scout's scratchpad was written twice by one of its runs (the second time labelled). */
async function rememberingWorld() {
  const w = await makeWorld();
  const scout = await makeAgent(w, w.alice);
  const { location } = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Remember Bob" });
  const runId = runIdOf(location);
  await db().subagentTaskRun.update({ where: { id: runId }, data: { status: "completed" } });
  const base = { tenantId: w.tenant.id, agentId: scout.id, authorId: scout.id, runId };
  await writeScratchpad(db(), { ...base, kind: "write", text: "Bob prefers Tuesdays for reviews." });
  await writeScratchpad(
    db(),
    {
      ...base,
      kind: "write",
      text: "Bob prefers Tuesdays for reviews.\nThe offsite is in Lisbon, 12–14 May.",
    },
    [{ studio: w.studio.id }],
  );
  return w;
}

/** A model that keeps reading, its text streaming slowly, until told to finish. */
function readingScript() {
  const state = { calls: 0, finish: false };
  const script = () => {
    state.calls += 1;
    if (state.finish)
      return {
        ...tool("finish", { message: "Read enough." }),
        content: "That is enough reading.",
        chunkDelayMs: 150,
      };
    return {
      ...tool("navigate", { path: state.calls % 2 ? "/studios/general" : "/whoami" }),
      content: `Reading page ${state.calls} to see what the team is planning for the offsite in May.`,
      chunkDelayMs: 180,
    };
  };
  return { state, script };
}

describe.each(WIDTHS)("issue 32's controls at %i px", (width) => {
  it("the memory page: its history, and an edit by its owner", async () => {
    const w = await rememberingWorld();
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/subagents/scout/memory`);
      await page.getByRole("heading", { name: "History (2)" }).waitFor();
      await look(walk, "controls-memory");
      const form = page.locator('form[data-action="edit_scratchpad"]');
      await form.locator('[name="text"]').fill("Bob prefers Tuesdays for reviews.");
      await form.getByRole("button").click();
      await page.getByRole("heading", { name: "History (3)" }).waitFor();
      expect(await page.locator("article.content").textContent()).toMatch(/edited by Alice/);
      await look(walk, "controls-memory-edited");
    });
  });

  it("pause and resume on a running run's page, with its reply streaming in", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice, "scout", { max_steps: 40 });
    const model = readingScript();
    suite.env.llm.setScript(model.script);
    const { location } = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Keep reading" });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}${location}`);
      // The reply, as it streams in, before its step is recorded.
      await page.locator("blockquote.streaming", { hasText: "Reading page" }).waitFor({ timeout: 15_000 });
      await look(walk, "controls-streaming");
      await page.locator('form[data-action="pause_run"]').getByRole("button").click();
      await page.locator("#run-progress", { hasText: "paused" }).waitFor({ timeout: 15_000 });
      await page.getByRole("heading", { name: "Paused by Alice" }).waitFor({ timeout: 15_000 });
      await look(walk, "controls-paused");
      model.state.finish = true;
      await page.locator('form[data-action="resume_run"]').getByRole("button").click();
      await page.locator("#run-progress", { hasText: "completed" }).waitFor({ timeout: 20_000 });
      await look(walk, "controls-resumed-completed");
    });
    const run = await db().subagentTaskRun.findUniqueOrThrow({ where: { id: runIdOf(location) } });
    expect(run.status).toBe("completed");
  }, 60_000);
});
