// Watching agents work, in a real browser: Chromium (playwright-core, headless) against the
// app on a real port and a worker in this process. Alice mentions @scout in a note and, in
// the page the form led her to, without reloading, sees "@scout is working on this", then
// scout's reply with its AI badge. On a running run's page, steps appear as they are
// recorded, "thinking…" while the model is called, and Stop shows the outcome.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { respondScript, runIdOf } from "./helpers/agent-scripts.ts";
import { makeAgent, tool } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma, waitFor } from "./helpers/app.ts";
import { logIn, watchErrors } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";

const TMP = fileURLToPath(new URL("../tmp/", import.meta.url));

const suite = browserWithAgents("browser-live");

beforeAll(() => {
  mkdirSync(TMP, { recursive: true });
});

/** Marks the page, so a test can tell it was never reloaded: a reload forgets the mark. */
const mark = (page: Page) => page.evaluate("window.__notReloaded = true");
const stillMarked = (page: Page) => page.evaluate("window.__notReloaded === true");

/** How far the page runs past a phone's width (0: it does not). */
const overflow = (page: Page) =>
  page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");

describe("live pages in a browser", () => {
  it("a mention in a note: the agent is shown working, then its reply appears, without a reload", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    const reply = respondScript(() => "Lisbon has the best venues for us.");
    // The model takes its time, so there is a moment to see it working.
    suite.env.llm.setScript((req) => ({ ...reply(req), delayMs: 700 }));
    const context = await suite.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = watchErrors(page);
    const base = suite.baseOf(w);
    await logIn(page, base, w.alice);
    await page.goto(`${base}/studios/general`);
    const form = page.locator('form[data-action="create_note"]');
    await form.locator('[name="title"]').fill("Offsite");
    await form.locator('[name="text"]').fill("Where should we hold the offsite, @scout?");
    await form.getByRole("button").click();
    await page.waitForURL(/\/studios\/general\/notes\/\w+$/);
    await mark(page);

    const working = page.locator("ul.working");
    await working.waitFor({ timeout: 15_000 });
    expect(await working.textContent()).toMatch(/@scout is (about to work|working) on this — see its run/);
    await page.screenshot({ path: `${TMP}browser-live-working.png`, fullPage: true });

    await page.getByText("Lisbon has the best venues for us.").waitFor({ timeout: 15_000 });
    await working.waitFor({ state: "detached", timeout: 15_000 });
    const badge = page.locator("a.ai-badge");
    expect(await badge.textContent()).toBe("AI · its run");
    expect(await stillMarked(page)).toBe(true);
    await page.screenshot({ path: `${TMP}browser-live-reply.png`, fullPage: true });

    // The badge leads to the run that wrote the reply.
    await badge.click();
    await page.waitForURL(/\/subagents\/scout\/runs\/\w+$/);
    await page.locator("#run-progress", { hasText: "completed" }).waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    expect(errors).toEqual([]);
    await context.close();
    // A browser, a worker and the model on a loaded machine: each wait has its own bound.
  }, 90_000);

  it("a running run's page shows its steps as they are recorded, and Stop shows the outcome", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { max_steps: 60 });
    let calls = 0;
    suite.env.llm.setScript(() => {
      calls += 1;
      return {
        ...tool("navigate", { path: calls % 2 ? "/studios/general" : "/whoami", note: `page ${calls}` }),
        content: `Looking at page ${calls}.`,
        delayMs: 400,
      };
    });
    const { location } = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Keep reading" });
    const runId = runIdOf(location);
    await waitFor(
      async () =>
        (await testPrisma().subagentTaskRun.findUniqueOrThrow({ where: { id: runId } })).stepsCount >= 2,
      15_000,
    );

    const context = await suite.browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    const errors = watchErrors(page);
    const base = suite.baseOf(w);
    await logIn(page, base, w.alice);
    await page.goto(`${base}${location}`);
    await mark(page);
    const steps = page.locator("#run-steps > details.step");
    const before = await steps.count();
    await page.locator("p.thinking", { hasText: "Thinking…" }).waitFor({ timeout: 10_000 });
    await waitFor(async () => (await steps.count()) >= before + 2, 15_000);
    expect(await stillMarked(page)).toBe(true);
    // The live steps are the recorded ones, each once, in order.
    const shown = await steps.evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-step"))));
    expect(shown).toEqual(Array.from({ length: shown.length }, (_, i) => i + 1));
    await expect.poll(() => page.locator("#steps").textContent()).toMatch(/^Steps \(\d+\)$/);
    expect(await page.locator("#step-3").textContent()).toContain("Looking at page 2.");
    // A long run folds its steps as they come: past eight, all but the last three.
    await waitFor(async () => (await steps.count()) >= 10, 15_000);
    // The run goes on meanwhile: read the fold once the page has handled the step it last got.
    const folded = async () => {
      const open = await steps.evaluateAll((els) => els.map((e) => e.hasAttribute("open")));
      return { folded: open.slice(0, -3).some(Boolean) === false, lastThreeOpen: open.slice(-3) };
    };
    await expect
      .poll(folded, { timeout: 15_000 })
      .toEqual({ folded: true, lastThreeOpen: [true, true, true] });
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: `${TMP}browser-live-run-390.png`, fullPage: true });

    await page.getByRole("button", { name: "Stop this run" }).click();
    await page.locator("#run-progress", { hasText: /stopping…|cancelled/ }).waitFor();
    await page
      .locator("#run-progress", { hasText: "Status: cancelled (stopped_by_owner)" })
      .waitFor({ timeout: 15_000 });
    await page.getByRole("button", { name: "Stop this run" }).waitFor({ state: "detached" });
    const run = await testPrisma().subagentTaskRun.findUniqueOrThrow({ where: { id: runId } });
    expect(run.status).toBe("cancelled");
    // Every step the run recorded is on the page, once.
    await expect.poll(() => steps.count()).toBe(run.stepsCount);
    await page.screenshot({ path: `${TMP}browser-live-stopped-390.png`, fullPage: true });
    expect(errors).toEqual([]);
    expect(scout.id).toBe(run.agentId);
    await context.close();
  });
});
