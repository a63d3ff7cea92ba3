// The newcomer's walk through being reached (issue 31), at a laptop's width and a phone's:
// choosing how to hear of things, adding an outgoing webhook, then an approval mail, as the
// SMTP server in this process received it, opened as a mail client shows it, its Approve
// link followed and confirmed in Cadre (at each width, its own pending action).
import { afterAll, describe, expect, it } from "vitest";
import { makeAgent, waitForRun } from "./helpers/agents.ts";
import { makeWorld, md, testPrisma, waitFor } from "./helpers/app.ts";
import { noteStep, planScript } from "./helpers/approvals.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { type Inbox, startInbox } from "./helpers/inbox.ts";
import { look, WIDTHS, walking } from "./helpers/walk.ts";

let inbox: Inbox;
// Links in the mails point at the test's listener; mail goes to the SMTP server in this process.
const suite = browserWithAgents("walk-notified", async (port) => {
  inbox = await startInbox();
  return { PUBLIC_PORT: String(port), SMTP_URL: inbox.url };
});
afterAll(() => inbox?.close());
const db = testPrisma;

describe.each(WIDTHS)("a newcomer's walk at %i px: being reached", (width) => {
  it("sets how to hear of things, adds a webhook, and approves from the mail", async () => {
    const w = await makeWorld("wn");
    const scout = await makeAgent(w, w.alice, "scout", { requires_approval: ["create_note"] });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);

      await page.goto(`${base}/u/alice/settings/notifications`);
      await page.getByLabel("Runs that failed or timed out").selectOption("email");
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByText("Notification settings saved").waitFor();
      expect(await contentText(page)).toContain("Runs that failed or timed out: Email at once");
      await look(walk, "notifications");

      await page.getByRole("link", { name: "outgoing webhook" }).click();
      await page.getByLabel("Name").fill("Ops channel");
      await page.getByLabel("URL").fill("https://hooks.example.com/cadre");
      await page.getByLabel("Format").selectOption("slack");
      await page.getByRole("button", { name: "Add webhook" }).click();
      await page.getByRole("heading", { name: "Its signing secret" }).first().waitFor();
      await look(walk, "webhook-secret");
      const ep = await db().outboundEndpoint.findFirstOrThrow({ where: { tenantId: w.tenant.id } });
      expect(ep.events).toEqual(["approval.requested", "question.asked", "run.failed"]);
      await page.goto(`${base}/u/alice/settings/webhooks/${ep.id}`);
      await look(walk, "webhook");
    });

    // The mail: sent through the worker's SMTP server, the one in this test.
    suite.env.llm.setScript(planScript([noteStep]));
    const res = await md(suite.app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: "Post it",
    });
    expect(res.statusCode).toBe(201);
    await waitForRun(scout.id);
    // As the mail server received it (MIME, quoted-printable and all), not as the database holds it.
    const mail = await waitFor(async () => inbox.to(w.alice.email)[0], 15_000);
    expect(mail.subject).toBe("@scout wants your approval to post a note, in the studio General");
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      // As a mail client shows it: its HTML, its links to the workspace.
      await page.setContent(mail.html);
      await look(walk, "approval-mail");
      const approve = await page.getByRole("link", { name: "Approve…" }).getAttribute("href");
      expect(approve).toMatch(new RegExp(`^${base}/review/[A-Za-z0-9_-]+$`));
      await page.goto(approve!);
      // Signed out: the link asks to sign in first, then comes back to it.
      await page.getByLabel("Email").fill(w.alice.email);
      await page.getByLabel("Password").fill("correct horse battery staple");
      // "Log in" exactly: the page also offers "Sign in with a passkey".
      await page.getByRole("button", { name: "Log in", exact: true }).click();
      await page.waitForURL(approve!);
      await look(walk, "review-link");
      const pending = await db().agentPendingAction.findFirstOrThrow({ where: { agentId: scout.id } });
      await page.getByRole("button", { name: `Approve #${pending.id}` }).click();
      await page.getByText(`Approved #${pending.id}`).waitFor();
      await look(walk, "review-link-approved");
    });
    // Approved once: the note is written, once, by the agent.
    await waitFor(() => db().note.findFirst({ where: { authorId: scout.id } }), 10_000);
    expect(await db().note.count({ where: { authorId: scout.id } })).toBe(1);
  }, 60_000);
});
