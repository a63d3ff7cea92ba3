// The newcomer's walk through webhooks and secrets (issue 30, items 6, 8 and 12), at a
// laptop's width and a phone's: a secret on a page of its own that fits the screen, with a
// Copy button; shown once; a test delivery; rotating asks first and keeps the old secret.
import { describe, expect, it } from "vitest";
import { makeAgent, runsOf } from "./helpers/agents.ts";
import { makeWorld, testPrisma } from "./helpers/app.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { confirmThrough, look, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-webhooks");

const db = testPrisma;

describe.each(WIDTHS)("a newcomer's walk at %i px: webhooks and their secrets", (width) => {
  it("creates a GitHub webhook: its secret once, on a page that fits, copied with a button; a test delivery; a rotation asked first", async () => {
    const w = await makeWorld("ww");
    const scout = await makeAgent(w, w.alice, "scout");
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
      await logIn(page, base, w.alice);
      await page.goto(`${base}/subagents/scout/webhooks`);
      const create = page.locator('form[data-action="create_webhook"]');
      await create.getByLabel("Name").fill("GitHub issues");
      await create.getByLabel("Signature").selectOption("github");
      await create.getByRole("button").click();

      // Post/redirect/get: the secret on a page of its own, with where it goes in GitHub.
      await page.locator(".secret code.token").waitFor();
      expect(new URL(page.url()).pathname).toMatch(/^\/secrets\/\w+$/);
      const secret = (await page.locator(".secret code.token").textContent())!;
      expect(secret).toMatch(/^whsec_/);
      expect(await contentText(page)).toContain("Copied it? Done, back to where you were.");
      const help = page.locator(".secret-help");
      expect(await help.textContent()).toContain("Settings → Webhooks → Add webhook");
      // Everything fits the screen (look checks it), and a Copy button copies it exactly.
      await look(walk, "webhook-secret");
      await page.locator(".secret button.copy").first().click();
      await page.locator(".secret button.copy", { hasText: "Copied" }).waitFor();
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(secret);
      const example = help.locator("pre").last();
      await help.locator("button.copy").last().click();
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(await example.textContent());
      // A reload shows it no more.
      await page.reload();
      await page.getByRole("heading", { name: "Shown once" }).waitFor();
      expect(await page.content()).not.toContain(secret);
      await look(walk, "webhook-secret-reloaded");

      // A test delivery, signed GitHub's way, starts a run, whose page opens.
      await page.goto(`${base}/subagents/scout/webhooks`);
      await look(walk, "webhooks");
      await page.getByRole("button", { name: "Send a test delivery" }).click();
      await page.locator(".notice", { hasText: "signed GitHub's way, accepted" }).waitFor();
      const [run] = await runsOf(scout.id);
      expect(new URL(page.url()).pathname).toBe(`/subagents/scout/runs/${run!.id}`);

      // Rotating asks first, saying the old secret keeps working a day; the new one, once.
      await page.goto(`${base}/subagents/scout/webhooks`);
      await confirmThrough(
        walk,
        page.getByRole("button", { name: "Rotate secret" }),
        "rotate-confirm",
        "Yes, rotate webhook secret",
      );
      await page.locator(".secret code.token").waitFor();
      const fresh = (await page.locator(".secret code.token").textContent())!;
      expect(fresh).not.toBe(secret);
      await look(walk, "webhook-rotated");
      const row = await db().agentWebhook.findFirstOrThrow({ where: { agentId: scout.id } });
      expect(row.previousSecretUntil!.getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);
    });
  }, 90_000);
});
