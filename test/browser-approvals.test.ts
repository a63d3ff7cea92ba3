// Approvals in a real browser: Chromium (playwright-core, headless) against the app on a
// real port, real workers and the fake LLM. An agent queues two actions for its owner's
// approval; the owner logs in through the form, opens the queue, approves one and rejects
// the other, and the pending pages, the run page and the database all agree on the outcome.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/dev/fake-llm.ts";
import { when } from "../src/services/pages/format.ts";
import { runIdOf, userPrompt } from "./helpers/agent-scripts.ts";
import { makeAgent, tool, waitForRun } from "./helpers/agents.ts";
import { act, makeWorld, md, testPrisma, waitFor } from "./helpers/app.ts";
import { contentText, logIn, watchErrors } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";

const TMP = fileURLToPath(new URL("../tmp/", import.meta.url));

const suite = browserWithAgents("browser");

const db = testPrisma;
const COMMENT = "Friday works for me: the checklist is done.";
const NOTE = { title: "Second launch plan", text: "A competing plan nobody asked for." };
const REJECTION = "We already have a plan; comment on it instead";

/**
 * The model: opens the note and comments on it (queued), then goes to the studio and
 * writes a note (queued), then finishes. Each step follows from what the prompt says it has done.
 */
function reviewScript(notePath: string) {
  return (req: ChatRequest) => {
    const prompt = userPrompt(req);
    const page = /# Current page: (\S+)/.exec(prompt)?.[1];
    if (!prompt.includes("execute add_comment("))
      return page === notePath
        ? tool("execute_action", {
            action: "add_comment",
            params: { text: COMMENT },
            reason: "Confirming the launch date",
          })
        : tool("navigate", { path: notePath });
    if (!prompt.includes("execute create_note("))
      return page === "/studios/general"
        ? tool("execute_action", { action: "create_note", params: NOTE, reason: "An alternative plan" })
        : tool("navigate", { path: "/studios/general" });
    return tool("finish", { message: "Queued a comment and a note for review" });
  };
}

/** Waits until the page's heading for pending action `id` shows `status` (pages reload themselves while approved). */
async function statusShown(page: Page, id: string, status: string, timeout = 15_000) {
  await page
    .locator("article.content h3", { hasText: `#${id}` })
    .locator("strong", { hasText: new RegExp(`^${status}$`) })
    .waitFor({ timeout });
}

describe("approvals in the browser", () => {
  let context: BrowserContext | undefined;
  afterAll(async () => {
    await context?.close();
  });

  it("the owner logs in, approves one queued action and rejects another; pages, run page and DB agree", async () => {
    const w = await makeWorld("b");
    const scout = await makeAgent(w, w.alice, "scout", {
      requires_approval: ["add_comment", "create_note"],
      approval_mode: "continue",
    });
    const made = await act(w, w.alice, "/studios/general", "create_note", {
      title: "Launch plan",
      text: "We ship on Friday.",
    });
    const notePath = made.location;
    const noteId = notePath.split("/").pop()!;
    suite.env.llm.setScript(reviewScript(notePath));

    // The run: both actions are queued (202), the run carries on and completes.
    const res = await md(suite.app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: "Confirm the launch date",
    });
    expect(res.statusCode).toBe(201);
    const runId = runIdOf(String(res.headers.location));
    const run = await waitForRun(scout.id, undefined, 15_000);
    expect(run).toMatchObject({ id: runId, status: "completed", stepsCount: 6 });
    const queued = await db().agentPendingAction.findMany({
      where: { agentId: scout.id },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    });
    expect(queued.map((p) => [p.actionName, p.pagePath, p.status, p.runId, p.waits])).toEqual([
      ["add_comment", notePath, "pending", runId, false],
      ["create_note", "/studios/general", "pending", runId, false],
    ]);
    const [c, n] = queued as [(typeof queued)[0], (typeof queued)[0]];
    expect(await db().comment.count({ where: { authorId: scout.id } })).toBe(0);

    // Log in through the form; the nav leads to the queue.
    context = await suite.browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors = watchErrors(page);
    const base = suite.baseOf(w);
    await logIn(page, base, w.alice);
    // The menu counts what waits for her.
    await page.locator("header nav.nav").getByRole("link", { name: "Approvals 2" }).click();
    await page.waitForURL(`${base}/approvals`);
    await page.getByRole("heading", { name: "Waiting for your review (2)" }).waitFor();
    for (const p of [c, n]) {
      const head = page.locator("article.content h3", { hasText: `#${p.id}` });
      const doing = p.actionName === "add_comment" ? "Comment and reply" : "Post a note";
      expect(await head.textContent()).toBe(`#${p.id} · ${doing} (${p.actionName}) by Agent scout · pending`);
      await page.getByRole("button", { name: `Approve #${p.id}` }).waitFor();
      await page.getByRole("button", { name: `Reject #${p.id}` }).waitFor();
    }

    // From the approvals page to the agent's own queue, by links.
    await page
      .locator("article.content h3", { hasText: `#${c.id}` })
      .getByRole("link", { name: "Agent scout" })
      .click();
    await page.waitForURL(`${base}/subagents/scout`);
    await page.getByRole("link", { name: "Actions to review" }).click();
    await page.waitForURL(`${base}/subagents/scout/pending`);
    await page.getByRole("heading", { name: "Agent scout: actions to review", level: 1 }).waitFor();
    await page.getByRole("heading", { name: "Waiting for your review (2)" }).waitFor();

    // Each item: agent, run link, page, params, reason, expiry, approve and reject.
    const text = await contentText(page);
    const content = page.locator("article.content");
    const runPath = `/subagents/scout/runs/${runId}`;
    expect(await content.locator(`a[href="${runPath}"]`).count()).toBe(2);
    expect(await content.locator(`a[href="${notePath}"]`).count()).toBe(1);
    expect(await content.locator('a[href="/studios/general"]').count()).toBe(1);
    expect(await content.locator('a[href="/subagents/scout"]').count()).toBe(2);
    // Params by their labels, not JSON; pages by their titles, not paths.
    expect(await content.locator("pre code").count()).toBe(0);
    expect(text).toContain(`Text: ${COMMENT}`);
    expect(text).toContain(`Text: ${NOTE.text} Title: ${NOTE.title}`);
    for (const [p, reason, where] of [
      [c, "Confirming the launch date", "the note “Launch plan” in General"],
      [n, "An alternative plan", "the studio General"],
    ] as const) {
      expect(text).toContain(
        `on ${where} · run ${runId} (manual) · asked ${when(p.createdAt)} · expires ${when(p.expiresAt)} · because of the approval list`,
      );
      expect(text).toContain(`The agent's reason: ${reason}`);
      expect(await content.locator(`a[href="/subagents/scout/pending/${p.id}"]`).count()).toBe(1);
      const reject = content.locator(`form#f-reject_action-${p.id}`);
      expect(await reject.getAttribute("action")).toBe("/subagents/scout/pending");
      expect(await reject.getAttribute("data-action")).toBe("reject_action");
      // Its reason is asked when the rejection is confirmed.
      expect(await reject.getByRole("textbox").count()).toBe(0);
    }
    expect(
      await content.getByRole("link", { name: "Review in detail, or edit the params first" }).count(),
    ).toBe(2);
    mkdirSync(TMP, { recursive: true });
    await page.screenshot({ path: `${TMP}browser-approvals-pending.png`, fullPage: true });

    // Approve the comment: the queue stays the queue, and says so; its page then shows it executed.
    await page.getByRole("button", { name: `Approve #${c.id}` }).click();
    await page.locator(".notice", { hasText: `You approved #${c.id}.` }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/subagents/scout/pending");
    await page.goto(`${base}/subagents/scout/pending/${c.id}`);
    const executed = await waitFor(
      () => db().agentPendingAction.findFirst({ where: { id: c.id, status: "executed" } }),
      15_000,
    );
    expect(executed).toMatchObject({
      result: "Comment posted",
      resultPath: notePath,
      reviewedById: w.alice.id,
    });
    await statusShown(page, c.id, "executed");
    const detail = await contentText(page);
    expect(detail).toContain("Executed: Comment posted → the note “Launch plan” in General");
    expect(detail).toMatch(/Reviewed by @alice \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    expect(detail).toContain("What it was working on: Confirm the launch date");
    expect(await page.getByRole("button", { name: `Approve #${c.id}` }).count()).toBe(0);
    expect(await page.getByRole("button", { name: `Reject #${c.id}` }).count()).toBe(0);

    // Its link leads to the note, which now carries the agent's comment.
    await page
      .locator("article.content p", { hasText: "Executed:" })
      .getByRole("link", { name: "the note “Launch plan” in General" })
      .click();
    await page.waitForURL(`${base}${notePath}`);
    await page.getByText(COMMENT).waitFor();

    // Reject the note from the queue, saying why.
    await page.goto(`${base}/subagents/scout/pending`);
    await page.getByRole("heading", { name: "Waiting for your review (1)" }).waitFor();
    expect(await page.getByRole("button", { name: `Approve #${c.id}` }).count()).toBe(0);
    const reject = page.locator(`form#f-reject_action-${n.id}`);
    await reject.getByRole("button", { name: `Reject #${n.id}` }).click();
    // Rejecting cannot be taken back: the page asks first, naming what, and asks why; nothing is decided yet.
    const ask = page.locator("section.confirm");
    await ask.getByRole("heading", { name: "Reject action?" }).waitFor();
    expect(await ask.locator(".confirm-what").textContent()).toBe(
      `@scout's note (create_note) on the studio General: “${NOTE.text}”`,
    );
    expect(await db().agentPendingAction.count({ where: { id: n.id, status: "pending" } })).toBe(1);
    await ask.getByRole("textbox", { name: "Why (the agent reads this)" }).fill(REJECTION);
    await ask.getByRole("button", { name: "Yes, reject action" }).click();
    await page.locator(".notice", { hasText: `Rejected #${n.id}` }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/subagents/scout/pending");
    await page.goto(`${base}/subagents/scout/pending/${n.id}`);
    await statusShown(page, n.id, "rejected", 5000);
    const rejected = await contentText(page);
    expect(rejected).toMatch(
      new RegExp(`Reviewed by @alice \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC: ${REJECTION}`),
    );
    expect(rejected).not.toContain("Executed:");
    expect(await page.getByRole("button", { name: `Approve #${n.id}` }).count()).toBe(0);

    // The queue is empty; both appear under recently reviewed, here and on /approvals.
    for (const path of ["/subagents/scout/pending", "/approvals"]) {
      await page.goto(`${base}${path}`);
      await page.getByRole("heading", { name: "Waiting for your review (0)" }).waitFor();
      const list = await contentText(page);
      expect(list).toContain("Nothing to review.");
      expect(list).toContain(
        `#${n.id} create_note by @scout on the studio General — rejected by @alice: ${REJECTION}`,
      );
      expect(list).toContain(
        `#${c.id} add_comment by @scout on the note “Launch plan” in General — executed by @alice`,
      );
    }

    // The run page: every step, both queued actions, and the comment as a resource of the run.
    const comment = await db().comment.findFirstOrThrow({ where: { authorId: scout.id } });
    await page.goto(`${base}${runPath}`);
    await page.getByRole("heading", { name: "Steps (6)" }).waitFor();
    const steps = await page.locator("#run-steps > details.step > summary").allInnerTexts();
    expect(steps.map((s) => s.replace(/ · \d+ in \/ \d+ out tokens · \d+ ms$/, ""))).toEqual([
      "1 · navigate /whoami",
      `2 · navigate ${notePath}`,
      `3 · execute ${notePath}`,
      "4 · navigate /studios/general",
      "5 · execute /studios/general",
      "6 · finish /studios/general",
    ]);
    const runText = await contentText(page);
    expect(runText).toContain("Status: completed");
    expect(runText).toContain("Queued a comment and a note for review");
    // Under the agent's words, what really happened.
    expect(runText).toContain(
      `Those are the agent's words. What happened: its note (create_note, #${n.id}) on the studio General was not done: rejected by Alice Adams (${REJECTION}).`,
    );
    expect(runText).toContain(
      `Result: Queued for approval as #${c.id}: your owner reviews it. → ${notePath}`,
    );
    expect(runText).toContain(
      `Result: Queued for approval as #${n.id}: your owner reviews it. → /studios/general`,
    );
    await page.getByRole("heading", { name: "Actions it asked you to approve (2)" }).waitFor();
    const asked = page.locator("article.content li", { hasText: `#${c.id}` });
    expect(await asked.textContent()).toBe(
      `#${c.id} Comment and reply (add_comment) on the note “Launch plan” in General — executed by Alice Adams → the note “Launch plan” in General`,
    );
    expect(await asked.getByRole("link", { name: `#${c.id}` }).getAttribute("href")).toBe(
      `/subagents/scout/pending/${c.id}`,
    );
    expect(await page.locator("article.content li", { hasText: `#${n.id}` }).textContent()).toBe(
      `#${n.id} Post a note (create_note) on the studio General — rejected by Alice Adams: ${REJECTION}`,
    );
    const resources = page.locator("article.content li", { hasText: `comment ${comment.id}` });
    expect(await resources.textContent()).toBe(
      `comment ${comment.id} — comment.created at step 3 — ${notePath}`,
    );
    expect(await resources.getByRole("link", { name: notePath }).getAttribute("href")).toBe(notePath);

    // The database: the comment exists exactly once, the rejected note not at all.
    const comments = await db().comment.findMany({ where: { authorId: scout.id } });
    expect(comments.map((x) => [x.text, x.subjectType, x.subjectId])).toEqual([[COMMENT, "note", noteId]]);
    expect(await db().note.count({ where: { authorId: scout.id } })).toBe(0);
    expect(await db().note.count({ where: { tenantId: w.tenant.id, title: NOTE.title } })).toBe(0);
    expect(await db().agentPendingAction.findUniqueOrThrow({ where: { id: n.id } })).toMatchObject({
      status: "rejected",
      reviewNote: REJECTION,
      reviewedById: w.alice.id,
      executedAt: null,
    });
    const runResources = await db().subagentTaskRunResource.findMany({
      where: { runId, resourceType: "comment" },
    });
    expect(runResources.map((r) => [r.resourceId, r.action, r.path])).toEqual([
      [comment.id, "comment.created", notePath],
    ]);
    expect(errors).toEqual([]);
  }, 90_000);
});
