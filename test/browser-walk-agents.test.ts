import { describe, expect, it } from "vitest";
import { agentConfig } from "../src/services/agents/core/settings.ts";
import { respondScript } from "./helpers/agent-scripts.ts";
import { makeAgent } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma, waitFor } from "./helpers/app.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { confirmThrough, fieldError, look, menuLink, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-agents");

const db = testPrisma;
const REPLY = "Thursday suits everyone I asked.";

describe.each(WIDTHS)("a newcomer's walk at %i px: people and agents", (width) => {
  it("logs in, mentions an agent and reads its reply; one notification for it", async () => {
    const w = await makeWorld("wa");
    await makeAgent(w, w.alice, "scout");
    suite.env.llm.setScript(respondScript(() => REPLY));
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await look(walk, "home");
      // The menu: folded behind one button on a phone, its links one tap away.
      await (await menuLink(walk, "Studios")).waitFor();
      if (width === 390) await look(walk, "menu-open");
      await (await menuLink(walk, "Studios")).click();
      await page.waitForURL(`${base}/studios`);
      await look(walk, "studios");

      await page.goto(`${base}/studios/general`);
      await look(walk, "studio");
      const form = page.locator('form[data-action="create_note"]');
      await form.locator('[name="title"]').fill("Retro day");
      await form.locator('[name="text"]').fill("Which day works for the retro, @scout?");
      await form.getByRole("button").click();
      await page.waitForURL(/\/studios\/general\/notes\/\w+$/);
      const notePath = new URL(page.url()).pathname;
      await page.getByText(REPLY).waitFor({ timeout: 20_000 });
      await look(walk, "note-with-reply");

      // The agent's reply is one notification for alice, a sentence with a link, no raw path.
      const comment = await db().comment.findFirstOrThrow({ where: { text: REPLY, tenantId: w.tenant.id } });
      await waitFor(() => db().notification.findFirst({ where: { userId: w.alice.id } }));
      const mine = await db().notification.findMany({ where: { userId: w.alice.id } });
      expect(mine.map((n) => [n.kind, n.path])).toEqual([["comment", notePath]]);
      await (await menuLink(walk, /^Notifications/)).click();
      await page.waitForURL(`${base}/notifications`);
      const text = await contentText(page);
      expect(text).toContain("1 unread notification.");
      expect(text).toContain("Agent scout (@scout) commented on the note “Retro day”");
      expect(text).not.toContain(notePath);
      expect(text).not.toContain(mine[0]!.id);
      expect(text).toContain(comment.text);
      await look(walk, "notifications");
    });
  }, 90_000);

  it("creates an agent, edits it from its current values, sets capabilities, archives it after confirming", async () => {
    const w = await makeWorld("wb");
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await (await menuLink(walk, "Subagents")).click();
      await page.waitForURL(`${base}/subagents`);
      const create = page.locator('form[data-action="create_subagent"]');
      await create.getByLabel("Name").fill("Helper");
      await create.getByLabel("Handle").fill("x");
      await create.getByRole("button", { name: "Create" }).click();
      // A mistake: the same page at its own address, the message at the field, the input kept.
      await page.locator(".field-error").first().waitFor();
      expect(new URL(page.url()).pathname).toBe("/subagents");
      expect(await fieldError(create, "Handle")).toMatch(/^2–32 characters/);
      expect(await create.getByLabel("Name").inputValue()).toBe("Helper");
      expect(await page.locator('form[data-action="create_subagent"]').count()).toBe(1);
      await look(walk, "create-agent-error");
      await create.getByLabel("Handle").fill("helper");
      await create.getByLabel("Identity prompt").fill("You keep notes tidy.");
      // The model is picked from the workspace's catalogue, each priced.
      await create.getByLabel("Model").selectOption("gpt-4o-mini");
      await create.getByRole("button", { name: "Create" }).click();
      await page.waitForURL(`${base}/subagents/helper`);
      await look(walk, "agent");

      // The edit form starts from what the agent is now.
      const edit = page.locator('form[data-action="update_subagent"]');
      expect(await edit.getByLabel("Name").inputValue()).toBe("Helper");
      expect(await edit.getByLabel("Identity prompt").inputValue()).toBe("You keep notes tidy.");
      expect(await edit.locator("select[name=model]").inputValue()).toBe("gpt-4o-mini");
      expect(await edit.getByLabel("Max steps").inputValue()).toBe("30");
      // Emptying the model goes back to the workspace default, as its hint says.
      await edit.locator("select[name=model]").selectOption("");
      await edit.getByRole("button").click();
      await page.waitForURL(`${base}/subagents/helper`);
      await page.locator(".notice", { hasText: "Saved" }).waitFor();
      const helper = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "helper" } });
      expect(agentConfig(helper).model).toBeUndefined();
      expect(agentConfig(helper).identity_prompt).toBe("You keep notes tidy.");
      expect(await contentText(page)).toContain("model workspace default");

      // Added to a studio from a select of hers: no handle to type.
      const add = page.locator('form[data-action="add_to_studio"]');
      expect(await add.locator("select[name=studio] option").allTextContents()).toEqual([
        "General (general)",
      ]);
      await add.getByRole("button", { name: "Add to studio" }).click();
      await page.locator(".notice", { hasText: "Added to General" }).waitFor();

      // What it may do: one form, grouped and labelled; choices in several sections (an
      // approval, two capabilities, how reviews work) are saved together by one Save.
      await page.getByRole("link", { name: "Capabilities, approvals and rules" }).click();
      await page.waitForURL(`${base}/subagents/helper/settings`);
      await look(walk, "capabilities");
      const caps = page.locator('form[data-action="set_capabilities"]');
      expect(await page.locator("form[data-action^=set_]").count()).toBe(1);
      // A new agent starts able to comment and confirm reads: grant it notes, after review.
      await caps.getByLabel("Post a note").selectOption({ label: "Allowed, after your approval" });
      await caps.getByLabel("Comment and reply").selectOption({ label: "Not allowed" });
      await caps.getByLabel("Vote on a decision").selectOption({ label: "Not allowed" });
      await caps.getByLabel("While an action waits for review").selectOption("wait");
      await caps.getByRole("button", { name: "Save what it may do" }).click();
      await page.locator(".notice", { hasText: "Saved: it may use 2 of 13" }).waitFor();
      const saved = agentConfig(await db().user.findUniqueOrThrow({ where: { id: helper.id } }));
      expect(saved.capabilities).not.toContain("vote");
      expect(saved.capabilities).not.toContain("add_comment");
      expect(saved.capabilities).toContain("create_note");
      expect(saved.requires_approval).toEqual(["create_note"]);
      expect(saved.approval_mode).toBe("wait");
      // The page shows what was saved, every section of it.
      expect(await caps.getByLabel("Post a note").inputValue()).toBe("approval");
      expect(await caps.getByLabel("Vote on a decision").inputValue()).toBe("off");
      expect(await contentText(page)).toContain("Waiting for your approval: Post a note (create_note).");
      await look(walk, "capabilities-saved");

      // Archiving asks first; Cancel leaves it as it was.
      await page.goto(`${base}/subagents/helper`);
      const archive = page.locator('form[data-action="archive_subagent"] button');
      expect(await archive.getAttribute("class")).toBe("danger");
      await archive.click();
      await page.locator("section.confirm").waitFor();
      await page.locator("section.confirm").getByRole("link", { name: "Cancel" }).click();
      expect((await db().user.findUniqueOrThrow({ where: { id: helper.id } })).archivedAt).toBeNull();
      await confirmThrough(
        walk,
        page.locator('form[data-action="archive_subagent"] button'),
        "archive-confirm",
        "Yes, archive subagent",
      );
      await page.locator(".notice", { hasText: "Archived" }).waitFor();
      expect((await db().user.findUniqueOrThrow({ where: { id: helper.id } })).archivedAt).not.toBeNull();
    });
  }, 90_000);

  it("changes a member's role and removes a member with buttons beside them, confirming the removal", async () => {
    const w = await makeWorld("wc");
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/studios/general/members`);
      await look(walk, "members");
      // No role select preset to admin, no handle to type: a button per member.
      expect(await page.locator('select[name="role"]').count()).toBe(0);
      expect(await page.locator('input[name="handle"]:not([type=hidden])').count()).toBe(0);
      const bob = page.locator(`input[name="handle"][value="bob"]`);
      await page.locator('form[data-action="update_member_role"]', { has: bob }).getByRole("button").click();
      await page.locator(".notice", { hasText: "@bob is now admin" }).waitFor();
      await confirmThrough(
        walk,
        page.locator('form[data-action="remove_member"]', { has: bob }).getByRole("button"),
        "remove-member-confirm",
        "Yes, remove member",
      );
      await page.locator(".notice", { hasText: "Removed @bob" }).waitFor();
      expect(await db().studioMember.count({ where: { studioId: w.studio.id, userId: w.bob.id } })).toBe(0);
      await look(walk, "members-after");
    });
  }, 60_000);

  it("every kind of page fits the screen: threads, decisions, commitments, runs, settings, agents' pages", async () => {
    const w = await makeWorld("wd");
    await testPrisma().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
    await makeAgent(w, w.alice, "scout");
    const note = await act(w, w.alice, "/studios/general", "create_note", {
      title: "A note with a long thread and a rather long title that has to wrap on a phone",
      text: "See https://example.com/a/really/long/address/that/does/not/break/easily/on/small/screens/at/all",
    });
    const noteId = note.location.split("/").pop()!;
    let parent: string | undefined;
    for (const text of ["First", "A reply", "A reply to the reply", "Deeper", "Deepest of all"]) {
      await act(w, w.bob, note.location, "add_comment", { text, ...(parent && { reply_to: parent }) });
      parent = (await db().comment.findFirstOrThrow({ where: { subjectId: noteId, text } })).id;
    }
    const decision = await act(w, w.alice, "/studios/general", "create_decision", {
      question: "Where do we meet?",
      options: "Lisbon\nA very long option title that goes on and on past the width of a phone screen",
    });
    const commitment = await act(w, w.alice, "/studios/general", "create_commitment", {
      title: "Run the 10k",
      critical_mass: 3,
    });
    await act(w, w.alice, "/subagents/scout/schedules", "add_schedule", {
      cron: "0 9 * * 1-5",
      task: "Standup",
    });
    await act(w, w.alice, "/subagents/scout/webhooks", "create_webhook", { name: "GitHub issues" });
    const run = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Say hello" });
    await walking(
      suite.browser,
      width,
      async (walk) => {
        const { page } = walk;
        const base = suite.baseOf(w);
        await logIn(page, base, w.alice);
        const pages: [string, string][] = [
          [note.location, "thread"],
          [decision.location, "decision"],
          ["/studios/general/decisions", "decisions"],
          [commitment.location, "commitment"],
          ["/studios/general/notes", "notes"],
          ["/runs", "runs-inbox"],
          [run.location, "run"],
          ["/subagents/scout/runs?status=failed", "runs-failed"],
          ["/subagents/scout/schedules", "schedules"],
          ["/subagents/scout/webhooks", "webhooks"],
          ["/subagents/scout/subscriptions", "subscriptions"],
          ["/subagents/scout/run", "run-form"],
          ["/u/alice", "profile"],
          ["/u/alice/settings", "settings"],
          ["/usage/pricing", "pricing"],
          ["/search?q=reply", "search"],
          ["/whoami", "whoami"],
          ["/nowhere", "not-found"],
        ];
        for (const [path, name] of pages) {
          await page.goto(`${base}${path}`);
          await look(walk, name);
        }
        // The reply to a reply sits further in than the reply it answers.
        await page.goto(`${base}${note.location}`);
        const left = async (text: string) =>
          (await page.locator(".comment", { hasText: text }).first().boundingBox())!.x;
        expect(await left("A reply to the reply")).toBeGreaterThan(await left("A reply"));
        expect(await left("A reply")).toBeGreaterThan(await left("First"));
        expect(await contentText(page)).not.toContain("↳");
      },
      /\/nowhere/,
    );
  }, 90_000);
});
