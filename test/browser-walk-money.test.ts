import { describe, expect, it } from "vitest";
import { seedUsage } from "../src/dev/seed-usage.ts";
import { makeAgent } from "./helpers/agents.ts";
import { makeWorld, md, testPrisma, waitFor } from "./helpers/app.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { confirmThrough, fieldError, look, menuLink, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-money");

const db = testPrisma;

describe.each(WIDTHS)("a newcomer's walk at %i px: reviews, keys and money", (width) => {
  it("approves one queued action unchanged and rejects another after confirming; one notification each", async () => {
    const w = await makeWorld("wm");
    const scout = await makeAgent(w, w.alice, "scout", { requires_approval: ["create_note", "add_comment"] });
    for (const [title, text] of [
      ["Agenda", "Topics for Monday."],
      ["Second agenda", "A competing agenda."],
    ]) {
      const res = await md(suite.app, w, scout, "POST", "/studios/general/actions/create_note", {
        title,
        text,
      });
      expect(res.statusCode).toBe(202);
    }
    const [first, second] = await db().agentPendingAction.findMany({
      where: { agentId: scout.id },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });
    // The events worker tells alice once per request, no more.
    await waitFor(async () =>
      (await db().notification.count({ where: { userId: w.alice.id } })) >= 2 ? true : null,
    );
    const notes = await db().notification.findMany({ where: { userId: w.alice.id } });
    expect(notes.map((n) => n.path).sort()).toEqual(
      [first!, second!].map((p) => `/subagents/scout/pending/${p.id}`).sort(),
    );

    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await (await menuLink(walk, /^Notifications/)).click();
      const text = await contentText(page);
      expect(text).toContain("Agent scout (@scout) wants your approval to create note");
      expect(text).not.toContain("/subagents/scout/pending/");
      await look(walk, "notifications-approvals");
      await (await menuLink(walk, "Approvals 2")).click();
      await page.waitForURL(`${base}/approvals`);
      // No panel asking for an action's id: each item carries its own buttons.
      expect(await page.locator("aside.actions").count()).toBe(0);
      await look(walk, "approvals");

      // The detail page's params start as asked; approving them unchanged is not an edit.
      await page.goto(`${base}/subagents/scout/pending/${first!.id}`);
      await look(walk, "review");
      await page.getByRole("button", { name: `Approve #${first!.id}` }).click();
      await page.locator(".notice").waitFor();
      expect(await page.locator(".notice").textContent()).toBe(`You approved #${first!.id}.`);
      expect(await contentText(page)).not.toContain("as you edited them");

      await page.goto(`${base}/approvals`);
      const reject = page.locator(`form#f-reject_action-${second!.id}`);
      expect(await reject.getByRole("button").getAttribute("class")).toBe("danger");
      // The confirmation names what is rejected and asks why.
      await reject.getByRole("button").click();
      const ask = page.locator("section.confirm");
      await ask.getByLabel("Why (the agent reads this)").fill("One agenda is enough");
      expect(await ask.locator(".confirm-what").textContent()).toBe(
        "@scout's note (create_note) on the studio General: “A competing agenda.”",
      );
      await look(walk, "reject-confirm");
      await ask.getByRole("button", { name: "Yes, reject action" }).click();
      await page.locator(".notice", { hasText: `Rejected #${second!.id}` }).waitFor();
      expect(await db().agentPendingAction.findUniqueOrThrow({ where: { id: second!.id } })).toMatchObject({
        status: "rejected",
        reviewNote: "One agenda is enough",
      });
      await page.goto(`${base}/approvals`);
      await page.getByRole("heading", { name: "Waiting for your review (0)" }).waitFor();
      expect(await page.locator("header nav.nav a", { hasText: "Approvals" }).textContent()).toBe(
        "Approvals",
      );
      expect(await page.locator("aside.actions").count()).toBe(0);
      await look(walk, "approvals-empty");
    });
  }, 90_000);

  it("adds a key (a mistake at its field), tests it, revokes it and a token after confirming", async () => {
    const w = await makeWorld("wk");
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/u/alice/settings/api-keys`);
      await look(walk, "keys");
      const form = page.locator('form[data-action="add_api_key"]');
      await form.getByLabel("Label").fill("Lab key");
      await form.getByLabel("Provider").selectOption("openai_compatible");
      await form.getByLabel("API key").fill("sk-walk-test-9876wxyz");
      await form.getByRole("button").click();
      await page.locator(".field-error").first().waitFor();
      expect(new URL(page.url()).pathname).toBe("/u/alice/settings/api-keys");
      expect(await fieldError(form, "Base URL")).toBe("needed for an OpenAI-compatible provider");
      await look(walk, "keys-error");
      await form.getByLabel("Base URL").fill("http://127.0.0.1:9/v1");
      await form.getByLabel("API key").fill("sk-walk-test-9876wxyz");
      await form.getByRole("button").click();
      await page.locator(".notice", { hasText: "Added “Lab key”" }).waitFor();
      await page.getByRole("button", { name: "Test", exact: true }).click();
      await page.locator(".notice.warning").waitFor();
      const revoke = page.locator('form[data-action="revoke_api_key"] button');
      expect(await revoke.getAttribute("class")).toBe("danger");
      await confirmThrough(walk, revoke, "revoke-key-confirm", "Yes, revoke API key");
      await page.locator(".notice", { hasText: "Revoked “Lab key”" }).waitFor();
      expect(await db().agentApiKey.count({ where: { ownerId: w.alice.id, revokedAt: { not: null } } })).toBe(
        1,
      );
      await look(walk, "keys-revoked");

      await page.goto(`${base}/u/alice/settings/tokens`);
      const create = page.locator('form[data-action="create_api_token"]');
      await create.getByLabel("Name").fill("laptop script");
      await create.getByRole("button").click();
      // Post/redirect/get: the token on a page of its own, once; a reload shows it no more.
      await page.locator(".secret").waitFor();
      expect(new URL(page.url()).pathname).toMatch(/^\/secrets\/\w+$/);
      const token = (await page.locator(".secret code.token").textContent())!;
      expect(token).toMatch(/^cadre_/);
      await look(walk, "token-created");
      await page.reload();
      await page.getByRole("heading", { name: "Shown once" }).waitFor();
      expect(await page.content()).not.toContain(token);
      await look(walk, "token-shown-once");
      await page.locator("article.content").getByRole("link", { name: "Back" }).click();
      await page.waitForURL(`${base}/u/alice/settings/tokens`);
      const before = await db().apiToken.count({ where: { userId: w.alice.id, revokedAt: null } });
      await confirmThrough(
        walk,
        page.getByRole("button", { name: "Revoke “laptop script”" }),
        "revoke-token-confirm",
        "Yes, revoke API token",
      );
      await page.locator(".notice").waitFor();
      expect(await db().apiToken.count({ where: { userId: w.alice.id, revokedAt: null } })).toBe(before - 1);
    });
  }, 90_000);

  it("reads the usage pages; a bad limit is shown once, at its field, on the same page", async () => {
    const w = await makeWorld("wu");
    const scout = await makeAgent(w, w.alice, "scout", { cost_limit_usd: 100 });
    await seedUsage(db(), {
      tenantId: w.tenant.id,
      agents: [{ id: scout.id, ownerId: w.alice.id }],
      rows: 200,
      days: 30,
      seed: 0.3,
    });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await (await menuLink(walk, "Usage")).click();
      await page.waitForURL(`${base}/usage`);
      await look(walk, "usage");
      await page.goto(`${base}/subagents/scout/usage`);
      await look(walk, "agent-usage");
      const limit = () => page.locator('form[data-action="set_cost_limit"]');
      // The field carries the schema's range (min="0"): the browser holds the form back itself.
      const input = limit().getByLabel("Monthly limit (USD)");
      expect(await input.getAttribute("min")).toBe("0");
      await input.fill("-5");
      await limit().getByRole("button").click();
      expect(
        await input.evaluate(
          (el) => (el as unknown as { validity: { rangeUnderflow: boolean } }).validity.rangeUnderflow,
        ),
      ).toBe(true);
      expect(new URL(page.url()).pathname).toBe("/subagents/scout/usage");
      // Past the browser (no min: an old form, a script), the server says the same at the field.
      await input.evaluate((el) => el.removeAttribute("min"));
      await limit().getByRole("button").click();
      await page.locator(".field-error").first().waitFor();
      expect(await limit().count()).toBe(1);
      expect(await fieldError(limit(), "Monthly limit (USD)")).toBe("at least 0");
      expect(await limit().getByLabel("Monthly limit (USD)").inputValue()).toBe("-5");
      await look(walk, "agent-usage-error");
      await limit().getByLabel("Monthly limit (USD)").fill("250");
      await limit().getByRole("button").click();
      await page.locator(".notice").waitFor();
      expect(await contentText(page)).toContain("$250.00");
    });
  }, 90_000);
});
