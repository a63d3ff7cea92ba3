// The newcomer's walk through passwords, sessions and letting go (issue 43, part B), at a
// laptop's width and a phone's, in Chromium: bob forgets his password, asks for a link, opens
// the mail as the SMTP server in this process received it, follows its link, sets a new
// password and finds his sessions on his security page; then alice, a workspace admin,
// deactivates him from his person page, through the confirmation that names what happens.
// Screenshots: tmp/walk/ (look()) and /tmp/shots-accounts/.
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mailTo } from "./helpers/account-mail.ts";
import { makeAgent } from "./helpers/agents.ts";
import { makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import type { Inbox } from "./helpers/inbox.ts";
import { type MailWalk, startMailWalk } from "./helpers/mail-walk.ts";
import { type Walker, WIDTHS, walking } from "./helpers/walk.ts";

let stack: MailWalk;
let app: FastifyInstance;
let inbox: Inbox;
let browser: Browser;
let port = 0;
beforeAll(async () => {
  stack = await startMailWalk("walk-accounts", "/tmp/shots-accounts/");
  ({ app, inbox, browser, port } = stack);
});
afterAll(() => stack?.close());
const shot = (walk: Walker, name: string) => stack.shot(walk, name);
const baseOf = (w: World) => `http://${w.tenant.subdomain}.localhost:${port}`;

const NEW_PASSWORD = "copper swallows nest in autumn";

describe.each(WIDTHS)("a newcomer's walk at %i px: passwords, sessions, letting go", (width) => {
  it("bob resets his password from the mail, sees his sessions; the admin deactivates him", async () => {
    const w = await makeWorld("wa");
    await testPrisma().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
    const scout = await makeAgent(w, w.bob, "scout");
    const base = baseOf(w);

    await walking(browser, width, async (walk) => {
      const { page } = walk;
      await page.goto(`${base}/login`);
      await page.getByRole("link", { name: "Forgot your password?" }).click();
      await page.getByLabel("Email").fill(w.bob.email);
      await shot(walk, "forgot-password");
      await page.getByRole("button", { name: "Mail me a link" }).click();
      await page.getByText("a link to choose a new password is on its way").waitFor();
      await shot(walk, "check-your-mail");
    });

    const mail = await mailTo(inbox, w.bob.email, /Choose a new Cadre password/);
    await walking(browser, width, async (walk) => {
      const { page } = walk;
      // As a mail client shows it, then its button followed.
      await page.setContent(mail.html);
      await shot(walk, "reset-mail");
      const href = await page.getByRole("link", { name: "Choose a new password" }).getAttribute("href");
      expect(href).toMatch(new RegExp(`^${base}/reset-password/[A-Za-z0-9_-]+$`));
      await page.goto(href!);
      await page.getByLabel("New password").fill("password1234");
      await page.getByRole("button", { name: "Set password and log in" }).click();
      await page.getByRole("alert").waitFor();
      await shot(walk, "reset-weak");
      await page.getByLabel("New password").fill(NEW_PASSWORD);
      await page.getByRole("button", { name: "Set password and log in" }).click();
      await page.locator("a.me", { hasText: "@bob" }).waitFor({ state: "attached" });
      await page.goto(`${base}/u/bob/settings/security`);
      expect(await contentText(page)).toContain("(this session)");
      await shot(walk, "security");
      // The link worked once.
      await page.goto(href!);
      await page.getByText("already used").waitFor();
      await shot(walk, "reset-used");
    });

    await walking(browser, width, async (walk) => {
      const { page } = walk;
      await logIn(page, base, w.alice);
      await page.goto(`${base}/settings/people/bob`);
      await shot(walk, "person");
      await page.getByLabel("Hand their agents to").selectOption("");
      await page.getByRole("button", { name: "Deactivate @bob…" }).click();
      await page.getByText("Deactivate Bob Brown (@bob)?").waitFor();
      await shot(walk, "deactivate-confirm");
      await page.getByRole("button", { name: /Deactivate person/i }).click();
      await page.getByText("Deactivated @bob").waitFor();
      await shot(walk, "deactivated");
    });
    expect((await md(app, w, w.bob, "GET", "/whoami")).statusCode).toBe(401);
    expect((await testPrisma().user.findUniqueOrThrow({ where: { id: scout.id } })).pausedAt).not.toBeNull();
  }, 120_000);
});
