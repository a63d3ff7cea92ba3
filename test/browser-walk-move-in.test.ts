// A team moves in (issue 43), in Chromium at a laptop's width and a phone's, from nothing: the
// operator's CLI (a real child process on this file's database) creates a workspace that holds
// no one yet; its admin opens the printed set-up link and chooses a password; she invites bob
// from the Invitations page; bob accepts from the mail as the SMTP server in this process
// received it, later forgets his password and resets it by mail; the admin finds him on the
// people page and deactivates him. Screenshots: tmp/walk/ (look()) and /tmp/shots-move-in/.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { mailTo } from "./helpers/account-mail.ts";
import { testPrisma } from "./helpers/app.ts";
import { contentText } from "./helpers/browser.ts";
import { cadre } from "./helpers/cadre-cli.ts";
import type { Inbox } from "./helpers/inbox.ts";
import { type MailWalk, startMailWalk } from "./helpers/mail-walk.ts";
import { type Walker, WIDTHS, walking } from "./helpers/walk.ts";

const ADMIN_PASSWORD = "lanterns drift over quiet harbours";
const BOB_PASSWORD = "marbles tumble down the orchard steps";
const BOB_NEW_PASSWORD = "copper swallows nest in autumn";
let stack: MailWalk;
let inbox: Inbox;
let browser: Browser;
let port = 0;
beforeAll(async () => {
  stack = await startMailWalk("walk-move-in", "/tmp/shots-move-in/");
  ({ inbox, browser, port } = stack);
});
afterAll(() => stack?.close());
const shot = (walk: Walker, name: string) => stack.shot(walk, name);

/** `bin/cadre workspace create`, as an operator types it: the set-up link it printed. */
async function createWorkspace(handle: string, adminEmail: string): Promise<string> {
  const { code, stdout, stderr } = await cadre(
    ["workspace", "create", "--handle", handle, "--name", "Harbour Works", "--admin-email", adminEmail],
    { PUBLIC_PORT: String(port) },
  );
  expect(code, stderr).toBe(0);
  const link = /https?:\/\/\S+\/setup\/[A-Za-z0-9_-]{20,}/.exec(stdout)?.[0];
  expect(link, stdout).toBeDefined();
  return link!;
}

async function signIn(page: Page, base: string, email: string, password: string, handle: string) {
  await page.goto(`${base}/login`);
  const form = page.locator('form[action="/login"]');
  await form.locator("#email").fill(email);
  await form.locator("#password").fill(password);
  await form.getByRole("button", { name: "Log in" }).click();
  await signedInAs(page, handle);
}

// Attached, not visible: on a phone the menu holding it is folded.
const signedInAs = (page: Page, handle: string) =>
  page.locator("a.me", { hasText: `@${handle}` }).waitFor({ state: "attached" });

describe.each(WIDTHS)("a team moves in at %i px", (width) => {
  it("the CLI makes the workspace; its admin sets up, invites bob, bob joins and resets; she lets him go", async () => {
    const handle = `harbour${newId(6)}`;
    const adminEmail = `alice@${handle}.test`;
    const bobEmail = `bob@${handle}.test`;
    const base = `http://${handle}.localhost:${port}`;
    const setupLink = await createWorkspace(handle, adminEmail);
    expect(setupLink.startsWith(`${base}/setup/`)).toBe(true);

    await walking(browser, width, async (walk) => {
      const { page } = walk;
      await page.goto(setupLink);
      await page.getByLabel("Your name").fill("Alice Admin");
      await page.getByLabel("Password").fill(ADMIN_PASSWORD);
      await shot(walk, "setup");
      await page.getByRole("button", { name: "Set up and sign in" }).click();
      await signedInAs(page, "alice");
      await shot(walk, "first-home");

      await page.goto(`${base}/settings/people`);
      await page.getByRole("link", { name: "Invite people" }).first().click();
      // The invite link's form asks for studios too: the invitation's own form, by its button.
      const form = page.locator("form", { has: page.getByRole("button", { name: "Send invitations" }) });
      await form.getByLabel("Email addresses").fill(bobEmail);
      await form.getByLabel("Studios to join").fill("general");
      await shot(walk, "invite-form");
      await form.getByRole("button", { name: "Send invitations" }).click();
      await page.getByText(bobEmail).first().waitFor();
      expect(await contentText(page)).toContain(bobEmail);
      await shot(walk, "invited");
    });

    const invitation = await mailTo(inbox, bobEmail, /invited you to Harbour Works/);
    await walking(browser, width, async (walk) => {
      const { page } = walk;
      await page.setContent(invitation.html);
      await shot(walk, "invitation-mail");
      const href = await page.getByRole("link", { name: "Accept the invitation" }).getAttribute("href");
      expect(href).toMatch(new RegExp(`^${base}/invite/[A-Za-z0-9_-]+$`));
      await page.goto(href!);
      await page.getByLabel("Your name").fill("Bob Brown");
      await page.getByLabel("Password").fill(BOB_PASSWORD);
      await shot(walk, "accept");
      await page.getByRole("button", { name: "Join and sign in" }).click();
      await signedInAs(page, "bob");
      await page.goto(`${base}/studios/general`);
      await shot(walk, "bob-in-general");
      // The link worked once.
      await page.goto(href!);
      await page.getByText("This link cannot be used").first().waitFor();
    });

    await walking(browser, width, async (walk) => {
      const { page } = walk;
      await page.goto(`${base}/login`);
      await page.getByRole("link", { name: "Forgot your password?" }).click();
      await page.getByLabel("Email").fill(bobEmail);
      await page.getByRole("button", { name: "Mail me a link" }).click();
      await page.getByText("a link to choose a new password is on its way").waitFor();
      const reset = await mailTo(inbox, bobEmail, /Choose a new Cadre password/);
      await page.setContent(reset.html);
      const href = await page.getByRole("link", { name: "Choose a new password" }).getAttribute("href");
      await page.goto(href!);
      await page.getByLabel("New password").fill(BOB_NEW_PASSWORD);
      await page.getByRole("button", { name: "Set password and log in" }).click();
      await signedInAs(page, "bob");
      await shot(walk, "bob-reset");
    });

    await walking(browser, width, async (walk) => {
      const { page } = walk;
      await signIn(page, base, adminEmail, ADMIN_PASSWORD, "alice");
      await page.goto(`${base}/settings/people`);
      expect(await contentText(page)).toContain("Bob Brown");
      await shot(walk, "people");
      await page.goto(`${base}/settings/people/bob`);
      await page.getByRole("button", { name: "Deactivate @bob…" }).click();
      await page.getByText("Deactivate Bob Brown (@bob)?").waitFor();
      await shot(walk, "deactivate-confirm");
      await page.getByRole("button", { name: /Deactivate person/i }).click();
      await page.getByText("Deactivated @bob").waitFor();
      await shot(walk, "deactivated");
    });

    const tenant = await testPrisma().tenant.findUniqueOrThrow({ where: { subdomain: handle } });
    const bob = await testPrisma().user.findFirstOrThrow({ where: { tenantId: tenant.id, handle: "bob" } });
    expect(bob.deactivatedAt).not.toBeNull();
    expect(await testPrisma().session.count({ where: { userId: bob.id } })).toBe(0);
    // Nothing else came to exist: the workspace holds the two people the walk made.
    expect(await testPrisma().user.count({ where: { tenantId: tenant.id } })).toBe(2);
  }, 180_000);
});
