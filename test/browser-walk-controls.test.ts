// Issue 32's controls walked in Chromium at 1280 and 390 px: an agent's memory page (edit its
// scratchpad), pause and resume on a running run's page, and a reply streaming in. The
// screenshots go to tmp/ for a person to look at.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { writeScratchpad } from "../src/services/scratchpad.ts";
import { runIdOf } from "./helpers/agent-scripts.ts";
import { makeAgent, tool } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";
import { logIn, watchErrors } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";

const TMP = fileURLToPath(new URL("../tmp/", import.meta.url));
const suite = browserWithAgents("browser-controls");
beforeAll(() => {
  mkdirSync(TMP, { recursive: true });
});

const overflow = (page: Page) =>
  page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");

async function shoot(page: Page, name: string) {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    expect(await overflow(page), `${name} at ${width}`).toBeLessThanOrEqual(0);
    await page.screenshot({ path: `${TMP}controls-${name}-${width}.png`, fullPage: true });
  }
}

describe("issue 32's controls in a browser", () => {
  it("the memory page: its history, and an edit by its owner", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    const { location } = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Remember Bob" });
    const runId = runIdOf(location);
    await testPrisma().subagentTaskRun.update({ where: { id: runId }, data: { status: "completed" } });
    const base = { tenantId: w.tenant.id, agentId: scout.id, authorId: scout.id, runId };
    await writeScratchpad(testPrisma(), {
      ...base,
      kind: "write",
      text: "Bob prefers Tuesdays for reviews.",
    });
    await writeScratchpad(
      testPrisma(),
      {
        ...base,
        kind: "write",
        text: "Bob prefers Tuesdays for reviews.\nThe offsite is in Lisbon, 12–14 May.",
      },
      [{ studio: w.studio.id }],
    );
    const context = await suite.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = watchErrors(page);
    const url = suite.baseOf(w);
    await logIn(page, url, w.alice);
    await page.goto(`${url}/subagents/scout/memory`);
    await page.getByRole("heading", { name: "History (2)" }).waitFor();
    await shoot(page, "memory");
    const form = page.locator('form[data-action="edit_scratchpad"]');
    await form.locator('[name="text"]').fill("Bob prefers Tuesdays for reviews.");
    await form.getByRole("button").click();
    await page.getByRole("heading", { name: "History (3)" }).waitFor();
    expect(await page.locator("article.content").textContent()).toMatch(/edited by Alice/);
    await shoot(page, "memory-edited");
    expect(errors).toEqual([]);
    await context.close();
  });

  it("pause and resume on a running run's page, with its reply streaming in", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice, "scout", { max_steps: 40 });
    let calls = 0;
    let finish = false;
    suite.env.llm.setScript(() => {
      calls += 1;
      if (finish)
        return {
          ...tool("finish", { message: "Read enough." }),
          content: "That is enough reading.",
          chunkDelayMs: 150,
        };
      return {
        ...tool("navigate", { path: calls % 2 ? "/studios/general" : "/whoami" }),
        content: `Reading page ${calls} to see what the team is planning for the offsite in May.`,
        chunkDelayMs: 180,
      };
    });
    const { location } = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Keep reading" });
    const context = await suite.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = watchErrors(page);
    const url = suite.baseOf(w);
    await logIn(page, url, w.alice);
    await page.goto(`${url}${location}`);
    // The reply, as it streams in, before its step is recorded.
    await page.locator("blockquote.streaming", { hasText: "Reading page" }).waitFor({ timeout: 15_000 });
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await overflow(page)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: `${TMP}controls-streaming-390.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.locator("blockquote.streaming", { hasText: "Reading page" }).waitFor({ timeout: 15_000 });
    await page.screenshot({ path: `${TMP}controls-streaming-1280.png`, fullPage: true });

    await page.locator('form[data-action="pause_run"]').getByRole("button").click();
    await page.locator("#run-progress", { hasText: "paused" }).waitFor({ timeout: 15_000 });
    await page.getByRole("heading", { name: "Paused by Alice" }).waitFor({ timeout: 15_000 });
    await shoot(page, "paused");
    finish = true;
    await page.locator('form[data-action="resume_run"]').getByRole("button").click();
    await page.locator("#run-progress", { hasText: "completed" }).waitFor({ timeout: 20_000 });
    await shoot(page, "resumed-completed");
    const run = await testPrisma().subagentTaskRun.findUniqueOrThrow({ where: { id: runIdOf(location) } });
    expect(run.status).toBe("completed");
    expect(errors).toEqual([]);
    await context.close();
  });
});
