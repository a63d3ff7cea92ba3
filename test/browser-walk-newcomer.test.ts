// Issue 46 walked in Chromium at 1280 and 390 px, as Bob (a member who asks) and as Alice (who
// owns the agent): the agent directory, @-autocomplete in a composer, the home page's "Waiting
// for you", a mention that gets no reply (the thread and Bob's notification say so, never the
// run's final message), a reply waiting for approval and approved from the queue, muting an
// agent's mentions, the notices after pause and stop beside the live status, and trying a rule
// then adding it from its result. Screenshots
// go to /tmp/shots/newcomer/ for a person to look at (test/helpers/walk.ts).
import { describe, expect, it } from "vitest";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { runIdOf } from "./helpers/agent-scripts.ts";
import { makeAgent, tool, waitForRun } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";
import { planScript } from "./helpers/approvals.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { look as lookInto, menuLink, type Walker, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-newcomer");
const db = testPrisma;
const SHOTS = "/tmp/shots/newcomer/";
/** As helpers/walk.ts looks, into SHOTS; and the header's links each on one line, its badges too. */
async function look(walk: Walker, name: string) {
  await lookInto(walk, name, SHOTS);
  if (walk.width !== 1280) return;
  const tall = await walk.page
    .locator("header nav.nav > a, header nav.nav button")
    .evaluateAll((links) =>
      links.filter((link) => link.getBoundingClientRect().height > 40).map((link) => link.textContent),
    );
  expect(tall, `${name}: header links wrapped`).toEqual([]);
}

/** What scout's run ends with when it answers nobody: only Alice, its owner, may read it. */
const SECRET = "Alice's salary review is on Friday";
const REPLY = "Thursday suits everyone I asked.";
const DOES = "Finds what the team already wrote about a topic and sums it up.";

/** Scout's model: first it looks and says nothing in the thread; asked again, it replies there. */
function scoutModel() {
  const state = { reply: null as string | null };
  const script = (req: ChatRequest): FakeReply =>
    state.reply
      ? planScript([{ path: state.reply, action: "add_comment", params: { text: REPLY } }])(req)
      : tool("finish", { message: SECRET });
  return { state, script };
}

describe.each(WIDTHS)("issue 46 walked at %i px", (width) => {
  it("bob finds scout, mentions it by autocomplete, is told it had nothing to add; alice approves its reply and mutes it", async () => {
    const w = await makeWorld("wq");
    const scout = await makeAgent(w, w.alice, "scout", {
      description: DOES,
      requires_approval: ["add_comment"],
      approval_mode: "wait",
    });
    const model = scoutModel();
    suite.env.llm.setScript(model.script);
    let notePath = "";
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.bob);
      expect(await contentText(page)).toContain("Nothing waits for you");
      await look(walk, "bob-home-empty");

      // Who can I ask? The directory, one tap from the menu.
      await (await menuLink(walk, /^Agents$/)).click();
      await page.waitForURL(`${base}/agents`);
      const directory = await contentText(page);
      expect(directory).toContain(`What it does: ${DOES}`);
      expect(directory).toContain("Works in General (general). Managed by Alice Adams (@alice).");
      await look(walk, "bob-agents");
      // Its profile says the same: what it does and how to ask it.
      await page.getByRole("link", { name: "Profile" }).click();
      await page.waitForURL(`${base}/u/scout`);
      expect(await contentText(page)).toContain(`What it does: ${DOES}`);
      await look(walk, "bob-scout-profile");

      // The composer offers scout as Bob types its handle's start; Enter puts it in.
      await page.goto(`${base}/studios/general`);
      const form = page.locator('form[data-action="create_note"]');
      await form.locator('[name="title"]').fill("Retro day");
      const text = form.locator('[name="text"]');
      await text.click();
      await page.keyboard.type("Which day works for the retro, @sc");
      const option = form.locator(".mention-list [role=option]", { hasText: "@scout" });
      await option.waitFor();
      expect(await option.textContent()).toContain(`Agent scout · AI agent — ${DOES}`);
      await look(walk, "bob-autocomplete");
      await page.keyboard.press("Enter");
      expect(await text.inputValue()).toBe("Which day works for the retro, @scout ");
      await form.getByRole("button").click();
      await page.waitForURL(/\/studios\/general\/notes\/\w+$/);
      notePath = new URL(page.url()).pathname;

      // No reply: the thread says so where "working on this" was, live, and never the final message.
      await page.getByText("@scout looked and had nothing to add").waitFor({ timeout: 20_000 });
      expect(await contentText(page)).not.toContain(SECRET);
      await look(walk, "bob-no-reply");

      // Bob is told, and opening the notification reads it.
      await (await menuLink(walk, /^Notifications/)).click();
      expect(await contentText(page)).toContain(
        "Agent scout (@scout) did not answer your mention: it looked and had nothing to add",
      );
      await look(walk, "bob-notified");
      await page.getByRole("link", { name: "Open the thread" }).click();
      await page.waitForURL(`${base}${notePath}`);
      expect(await db().notification.count({ where: { userId: w.bob.id, dismissedAt: null } })).toBe(0);

      // His home: the run he started and how it ended, in words he may read.
      await page.goto(`${base}/`);
      const home = await contentText(page);
      expect(home).toContain("Runs you started (1)");
      expect(home).toContain("looked and had nothing to add");
      expect(home).not.toContain(SECRET);
      await look(walk, "bob-home-run");

      // Asked again, its reply waits for Alice: the thread tells Bob that, not the reply.
      model.state.reply = notePath;
      await page.goto(`${base}${notePath}`);
      const comment = page.locator('form[data-action="add_comment"]');
      await comment.locator('[name="text"]').fill("@alice @scout which day suits the retro?");
      await comment.getByRole("button").click();
      // Said once, by the reply's review notice, in place of its run's line.
      await page.getByText("@scout's reply is waiting for approval").waitFor({ timeout: 20_000 });
      await page.locator("#working").waitFor({ state: "detached" });
      expect(await contentText(page)).not.toContain(REPLY);
      await look(walk, "bob-reply-waiting");
    });

    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      // Her home: the reply to decide and Bob's mention of her, each linked.
      const home = await contentText(page);
      expect(home).toContain("Waiting for you");
      expect(home).toMatch(/Approvals you can decide \(1\)/);
      expect(home).toMatch(/Unread mentions \(1\)/);
      await look(walk, "alice-home");

      const pending = await db().agentPendingAction.findFirstOrThrow({ where: { agentId: scout.id } });
      await (await menuLink(walk, /^Approvals/)).click();
      await page.getByRole("button", { name: `Approve #${pending.id}` }).click();
      // The notice says what she did; the status beside it is the live one.
      await page.locator(".notice", { hasText: `You approved #${pending.id}.` }).waitFor();
      await look(walk, "alice-approved");
      await page.goto(`${base}${notePath}`);
      await page.getByText(REPLY).waitFor({ timeout: 20_000 });
      expect(await contentText(page)).not.toContain("waiting for its owner's approval");
      await look(walk, "alice-thread-replied");

      // Quiet: scout's mentions of her notify her no more.
      await page.goto(`${base}/u/alice/settings/notifications`);
      const mute = page.locator('form[data-action="mute_agent_mentions"]');
      // Picked, not typed: the agents that can mention her, or every agent.
      await mute.getByLabel("Agent").selectOption("scout");
      await mute.getByRole("button", { name: "Mute" }).click();
      await page.getByText("Mentions by @scout muted").waitFor();
      expect(await contentText(page)).toContain("Muted: @scout.");
      await look(walk, "alice-muted");
    });
    const alice = await db().user.findUniqueOrThrow({ where: { id: w.alice.id } });
    expect(alice.mutedAgentIds).toEqual([scout.id]);
    await waitForRun(scout.id, (s) => s === "completed");
  }, 120_000);

  it("alice pauses, then stops a run (each notice says what she asked, the status what is), then tries a rule and adds it", async () => {
    const w = await makeWorld("wp");
    await makeAgent(w, w.alice, "scout", { max_steps: 40 });
    // Reads on until stopped, each reply streaming slowly: a step is always under way.
    suite.env.llm.setScript(() => ({
      ...tool("navigate", { path: "/studios/general" }),
      content: "Reading what the team wrote about the retro.",
      chunkDelayMs: 150,
    }));
    const { location } = await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Keep reading" });
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}${location}`);
      await page.locator("#run-progress", { hasText: "running" }).waitFor({ timeout: 15_000 });
      await page.locator('form[data-action="pause_run"]').getByRole("button").click();
      await page.getByRole("heading", { name: "Paused by Alice" }).waitFor({ timeout: 15_000 });
      const paused = await contentText(page);
      expect(paused).not.toMatch(/Pausing…/);
      await look(walk, "alice-paused");
      await page.locator('form[data-action="stop_run"]').getByRole("button").click();
      await page.locator("#run-progress", { hasText: "cancelled" }).waitFor({ timeout: 15_000 });
      expect(await contentText(page)).not.toMatch(/Stopping…|Paused by Alice/);
      await look(walk, "alice-stopped");

      // Try a rule: its result lands under its form, on screen, the form keeping what she typed;
      // "Add this rule" is that rule, only its name left to type.
      await page.goto(`${base}/subagents/scout/settings`);
      const tryForm = page.locator('form[data-action="try_rule"]');
      await tryForm.locator('[name="action"]').selectOption("add_comment");
      await tryForm.locator('[name="decision"]').selectOption("require_approval");
      await tryForm.locator('[name="param_patterns"]').fill("text=(?i)invoice");
      await tryForm.getByRole("button", { name: "Try it" }).click();
      const tried = page.locator("#tried");
      await tried.waitFor();
      expect(new URL(page.url()).hash).toBe("#tried");
      const box = (await tried.boundingBox())!;
      expect(box.y).toBeGreaterThan(-2); // scrolled to it, give or take a subpixel
      expect(box.y).toBeLessThan(page.viewportSize()!.height);
      expect(await tryForm.locator('[name="param_patterns"]').inputValue()).toBe("text=(?i)invoice");
      await page.screenshot({ path: `${SHOTS}${width}-alice-tried-rule-viewport.png` });
      const add = page.locator('form[data-action="add_rule"]');
      expect(await add.locator('[name="param_patterns"]').inputValue()).toBe("text=(?i)invoice");
      await add.locator('[name="name"]').fill("invoices wait");
      await add.getByRole("button", { name: "Add this rule" }).click();
      await page.getByText("invoices wait").first().waitFor();
      await look(walk, "alice-rule-added");
    });
    const run = await db().subagentTaskRun.findUniqueOrThrow({ where: { id: runIdOf(location) } });
    expect(run.status).toBe("cancelled");
    const scout = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "scout" } });
    expect((scout.agentConfig as { rules: unknown[] }).rules).toEqual([
      {
        name: "invoices wait",
        action: "add_comment",
        decision: "require_approval",
        params: { text: "(?i)invoice" },
      },
    ]);
  }, 90_000);
});
