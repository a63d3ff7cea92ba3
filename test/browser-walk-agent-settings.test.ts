// Walked in Chromium at 1280 and 390 px: a workspace admin on /settings/agents (limits, the
// kill switch and its banner, the model catalogue, the trail of changes), a member reading it
// without forms, and an owner picking an agent's model and fallbacks from the catalogue.
import { describe, expect, it } from "vitest";
import { agentConfig, tenantSettings } from "../src/services/agents/core/settings.ts";
import { makeAgent } from "./helpers/agents.ts";
import { makeWorld, testPrisma } from "./helpers/app.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { fieldError, look, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-agent-settings");
const db = testPrisma;

describe.each(WIDTHS)("workspace agent settings at %i px", (width) => {
  it("an admin sets limits and switches agents off and on; a member only reads", async () => {
    const w = await makeWorld("was");
    await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/settings/agents`);
      await look(walk, "settings-agents");
      const limits = page.locator('form[data-action="set_agent_limits"]');
      // The default model is a select of the catalogue, grouped, priced.
      const groups = await limits
        .locator("select[name=default_model] optgroup")
        .evaluateAll((els) => els.map((e) => e.getAttribute("label")));
      expect(groups).toEqual(["Price list · OpenAI", "Price list · Anthropic"]);
      await limits.getByLabel("Default model").selectOption("claude-haiku-4-5");
      // The field carries the schema's range (max="20"): the browser holds the form back itself;
      // past it (an old form, a script), the server says the same at the field.
      const depth = limits.getByLabel("Chain depth");
      expect(await depth.getAttribute("max")).toBe("20");
      await depth.fill("25");
      await limits.getByRole("button", { name: "Save limits" }).click();
      expect(
        await depth.evaluate(
          (el) => (el as unknown as { validity: { rangeOverflow: boolean } }).validity.rangeOverflow,
        ),
      ).toBe(true);
      await depth.evaluate((el) => el.removeAttribute("max"));
      await limits.getByRole("button", { name: "Save limits" }).click();
      await page.locator(".field-error").first().waitFor();
      expect(await fieldError(limits, "Chain depth")).toBe("at most 20");
      await limits.getByLabel("Chain depth").fill("2");
      await limits.getByRole("button", { name: "Save limits" }).click();
      await page.locator(".notice", { hasText: "Saved" }).waitFor();
      const s = tenantSettings(await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } }));
      expect(s).toMatchObject({ default_model: "claude-haiku-4-5", chain_depth_limit: 2 });

      await page.getByRole("button", { name: "Switch all agents off" }).click();
      await page.locator(".agents-off").waitFor();
      expect(await contentText(page)).toContain("Off.");
      expect(await contentText(page)).toMatch(/@alice · Agents on: true → false/);
      await look(walk, "settings-agents-off");
      await page.goto(`${base}/studios`);
      expect(await page.locator(".agents-off").textContent()).toContain("Agents are switched off");
      await look(walk, "banner-agents-off");
      await page.goto(`${base}/settings/agents`);
      await page.getByRole("button", { name: "Switch agents on" }).click();
      await page.locator(".notice", { hasText: "Agents are on again" }).waitFor();
      expect(await page.locator(".agents-off").count()).toBe(0);
    });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.bob);
      await page.goto(`${base}/settings/agents`);
      expect(await contentText(page)).toContain("Only workspace admins change these");
      expect(await page.locator("form.action-form").count()).toBe(0);
      await look(walk, "settings-agents-member");
    });
  }, 90_000);

  it("an owner picks the agent's model and fallbacks from the catalogue", async () => {
    const w = await makeWorld("wam");
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o" });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/subagents/scout`);
      const edit = page.locator('form[data-action="update_subagent"]');
      expect(await edit.locator("select[name=model]").inputValue()).toBe("gpt-4o");
      const label = await edit.locator("select[name=model] option:checked").textContent();
      expect(label).toBe("gpt-4o — $2.50 in / $10.00 out per 1M tokens");
      await look(walk, "agent-model-select");
      await edit.locator("select[name=model]").selectOption("claude-sonnet-4-5");
      await edit.getByLabel("Fallback models").fill("gpt-4o-mini, claude-haku");
      await edit.getByRole("button", { name: "Save configuration" }).click();
      await page.locator(".field-error").first().waitFor();
      expect(await fieldError(edit, "Fallback models")).toMatch(
        /“claude-haku” is not in this workspace's model catalogue \(did you mean claude-haiku-4-5/,
      );
      await look(walk, "agent-model-error");
      await edit.getByLabel("Fallback models").fill("gpt-4o-mini, claude-haiku-4-5");
      await edit.getByRole("button", { name: "Save configuration" }).click();
      await page.locator(".notice", { hasText: "Saved" }).waitFor();
      expect(agentConfig(await db().user.findUniqueOrThrow({ where: { id: scout.id } }))).toMatchObject({
        model: "claude-sonnet-4-5",
        fallback_models: ["gpt-4o-mini", "claude-haiku-4-5"],
      });
      expect(await contentText(page)).toMatch(/fallback models\s+gpt-4o-mini, claude-haiku-4-5/);
    });
  }, 90_000);
});
