// The newcomer's walk through a review in context (issue 30, items 7, 10 and 12), at a
// laptop's width and a phone's: a reply waits in its thread, is rejected there with a
// reason, and the thread and the run say what happened; the note form counts its limit; a
// wide table says it scrolls; the usage charts are drawn for the screen they are on.
import { describe, expect, it } from "vitest";
import { seedUsage } from "../src/dev/seed-usage.ts";
import { makeAgent, waitForRun } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";
import { planScript } from "./helpers/approvals.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { look, menuLink, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-review");

const db = testPrisma;
const REPLY = "Thursday suits everyone I asked.";
const REASON = "Ask the team before answering for them";

describe.each(WIDTHS)("a newcomer's walk at %i px: a review where the work is", (width) => {
  it("a reply waits in its thread; rejected there, with a reason, the thread and the run say what happened", async () => {
    const w = await makeWorld("wr");
    const scout = await makeAgent(w, w.alice, "scout", {
      requires_approval: ["add_comment"],
      approval_mode: "wait",
    });
    const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Retro", text: "When?" });
    suite.env.llm.setScript(
      planScript([{ path: note.location, action: "add_comment", params: { text: REPLY } }]),
    );
    await act(w, w.alice, note.location, "add_comment", { text: "@scout which day suits the retro?" });
    const run = await waitForRun(scout.id, (s) => s === "waiting", 15_000);
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}${note.location}`);
      const waiting = page.locator(".review-notice.waiting");
      await waiting.waitFor();
      expect((await waiting.textContent())!.replace(/\s+/g, " ")).toContain(
        `@scout's reply is waiting for approval (#`,
      );
      expect(await waiting.textContent()).toContain(REPLY);
      await look(walk, "thread-waiting");
      await page.getByRole("button", { name: "Reject", exact: true }).click();
      // Asked first: what exactly, and why.
      const ask = page.locator("section.confirm");
      await ask.waitFor();
      expect(await ask.locator(".confirm-what").textContent()).toBe(
        `@scout's reply (add_comment) on the note “Retro” in General: “${REPLY}”`,
      );
      await ask.getByLabel("Why (the agent reads this)").fill(REASON);
      await look(walk, "thread-reject-confirm");
      await ask.getByRole("button", { name: "Yes, reject action" }).click();
      await page.waitForURL(`${base}${note.location}`);
      await page.locator(".review-notice.refused").waitFor();
      expect(await contentText(page)).toContain(
        `Not posted: @scout's reply (add_comment) was rejected by Alice Adams (${REASON}).`,
      );
      await look(walk, "thread-rejected");
      // The run, resumed with the outcome, ends; its page says what really happened.
      await waitForRun(scout.id, (s) => s === "completed", 15_000);
      await page.goto(`${base}/subagents/scout/runs/${run.id}`);
      await page.getByText("What happened:").waitFor();
      expect(await contentText(page)).toContain(
        `its reply (add_comment, #${(await db().agentPendingAction.findFirstOrThrow({ where: { runId: run.id } })).id}) on the note “Retro” in General was not done: rejected by Alice Adams (${REASON}).`,
      );
      await look(walk, "run-rejected");

      // /runs: eight columns; on a phone the table says it scrolls.
      await (await menuLink(walk, "Runs")).click();
      await page.waitForURL(`${base}/runs`);
      const hint = page.locator(".scroll-hint");
      if (width === 390) await hint.first().waitFor();
      else expect(await hint.count()).toBe(0);
      await look(walk, "runs");

      // A limit named before it bites: the note form counts as it is typed.
      await page.goto(`${base}/studios/general`);
      const form = page.locator('form[data-action="create_note"]');
      const count = form.locator("small.count").first();
      expect(await count.textContent()).toBe("Up to 20,000 characters");
      await form.getByLabel("Text").fill("Twelve chars");
      expect(await count.textContent()).toBe("12 of 20,000 characters");
      expect(await form.getByLabel("Text").getAttribute("maxlength")).toBe("20000");
      await look(walk, "note-form-count");
    });
  }, 90_000);

  it("the usage charts are drawn for the screen they are on, and their tables say they scroll", async () => {
    const w = await makeWorld("wc");
    const scout = await makeAgent(w, w.alice, "scout");
    await seedUsage(db(), {
      tenantId: w.tenant.id,
      agents: [{ id: scout.id, ownerId: w.alice.id }],
      rows: 120,
      days: 30,
      seed: 0.7,
    });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/subagents/scout/usage`);
      const narrow = page.locator("svg.chart.narrow").first();
      const wide = page.locator("svg.chart.wide").first();
      expect([await narrow.isVisible(), await wide.isVisible()]).toEqual([width === 390, width === 1280]);
      // Drawn near its own size on both screens: an 11-unit label reads at about 11 px (5 px before).
      const shown = width === 390 ? narrow : wide;
      const scale = await shown.evaluate(
        (svg) => svg.getBoundingClientRect().width / Number(svg.getAttribute("viewBox")!.split(" ")[2]),
      );
      expect(scale).toBeGreaterThanOrEqual(width === 390 ? 0.95 : 0.8);
      if (width === 390) await page.locator(".scroll-hint:visible").first().waitFor();
      await look(walk, "usage-charts");
    });
  }, 90_000);
});
