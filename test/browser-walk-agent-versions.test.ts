// The owner's walk through an agent's versions (issue 47, versions), at a laptop's width and a
// phone's, in Chromium: a new identity prompt saved on the agent's page makes a version, its
// page shows what changed as words and a diff, and restoring the one before brings the old
// prompt back as a newer version. Screenshots: tmp/walk/ (look()).
import { describe, expect, it } from "vitest";
import { makeAgent } from "./helpers/agents.ts";
import { makeWorld, testPrisma } from "./helpers/app.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { look, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-agent-versions");

const promptOf = async (id: string) =>
  ((await testPrisma().user.findUniqueOrThrow({ where: { id } })).agentConfig as { identity_prompt?: string })
    .identity_prompt;

describe.each(WIDTHS)("an agent's versions at %i px", (width) => {
  it("a saved prompt makes a version with its diff; restoring the one before brings it back", async () => {
    const w = await makeWorld("wav");
    const scout = await makeAgent(w, w.alice, "scout", { identity_prompt: "You summarise threads." });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/subagents/scout`);
      const form = page.locator('form[data-action="update_subagent"]');
      await form.getByLabel("Identity prompt").fill("You summarise threads in three bullet points.");
      await form.getByRole("button", { name: "Save configuration" }).click();
      await page.waitForURL(/\/subagents\/scout/);
      expect(await promptOf(scout.id)).toBe("You summarise threads in three bullet points.");

      await page.goto(`${base}/subagents/scout/versions`);
      const list = await contentText(page);
      expect(list).toContain("Versions (2)");
      await look(walk, "agent-versions");
      await page.goto(`${base}/subagents/scout/versions/2`);
      const version = await contentText(page);
      expect(version).toContain("its current version");
      expect(version).toContain("+ identity_prompt: You summarise threads in three bullet points.");
      expect(version).toContain("- identity_prompt: You summarise threads.");
      await look(walk, "agent-version-diff");

      await page.goto(`${base}/subagents/scout/versions/1`);
      await page.getByRole("button", { name: "Restore version 1" }).click();
      await page.locator(".notice").first().waitFor();
      expect(await promptOf(scout.id)).toBe("You summarise threads.");
      await page.goto(`${base}/subagents/scout/versions`);
      expect(await contentText(page)).toContain("Versions (3)");
      expect(await contentText(page)).toContain("Restored version 1");
      await look(walk, "agent-versions-restored");
    });
  });
});
