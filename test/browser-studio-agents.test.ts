// A studio's agent in a real browser: Chromium (playwright-core, headless) against the app on
// a real port, real workers and the fake LLM. Alice creates the agent for the studio and gives
// it a task; its note waits for approval; Dana, the studio's other admin, who did not create
// it, is told, approves it from her queue, and it executes once.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/dev/fake-llm.ts";
import { userPrompt } from "./helpers/agent-scripts.ts";
import { tool, waitForRun } from "./helpers/agents.ts";
import { act, addMember, makeWorld, testPrisma, waitFor } from "./helpers/app.ts";
import { contentText, logIn, watchErrors } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";

const TMP = fileURLToPath(new URL("../tmp/", import.meta.url));
const NOTE = { title: "Minutes of Monday", text: "We agreed to ship on Friday." };

const suite = browserWithAgents("browser-sa");
const db = testPrisma;

/** The model: opens the studio, writes the minutes (queued for approval), finishes. */
function minutesScript(req: ChatRequest) {
  const prompt = userPrompt(req);
  if (prompt.includes("execute create_note(")) return tool("finish", { message: "Minutes queued" });
  return /# Current page: \/studios\/general\b/.test(prompt)
    ? tool("execute_action", { action: "create_note", params: NOTE, reason: "The minutes" })
    : tool("navigate", { path: "/studios/general" });
}

describe("a studio's agent in the browser", () => {
  it("a second admin, not its creator, approves its queued action, which executes once", async () => {
    const w = await makeWorld("bsa");
    const dana = await addMember(w, "dana", "Dana Diaz", "admin");
    await act(w, w.alice, "/studios/general", "create_subagent", { name: "Scribe", handle: "scribe" });
    const scribe = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "scribe" } });
    expect(scribe.ownerStudioId).toBe(w.studio.id);
    await db().user.update({
      where: { id: scribe.id },
      data: {
        agentConfig: {
          ...(scribe.agentConfig as object),
          capabilities: ["create_note"],
          requires_approval: ["create_note"],
        },
      },
    });
    suite.env.llm.setScript(minutesScript);
    await act(w, w.alice, "/subagents/scribe/run", "run_task", { task: "Write the minutes" });
    expect(await waitForRun(scribe.id, undefined, 15_000)).toMatchObject({ status: "completed" });
    const pending = await db().agentPendingAction.findFirstOrThrow({ where: { agentId: scribe.id } });

    const context = await suite.browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      const errors = watchErrors(page);
      const base = suite.baseOf(w);
      await logIn(page, base, dana);
      // Her inbox tells her, as it tells alice: one notification each.
      await waitFor(() =>
        db().notification.findFirst({ where: { userId: dana.id, path: { contains: pending.id } } }),
      );
      await page.goto(`${base}/notifications`);
      await page.locator('article.content a[href^="/notifications/"]', { hasText: "Review" }).waitFor();
      await page.locator("header nav.nav").getByRole("link", { name: "Approvals 1" }).click();
      await page.getByRole("heading", { name: "Waiting for your review (1)" }).waitFor();
      mkdirSync(TMP, { recursive: true });
      await page.screenshot({ path: `${TMP}browser-studio-agent-approvals.png`, fullPage: true });
      await page.getByRole("button", { name: `Approve #${pending.id}` }).click();
      // The queue stays the queue.
      await page.locator(".notice", { hasText: `You approved #${pending.id}.` }).waitFor();
      expect(new URL(page.url()).pathname).toBe("/approvals");
      const executed = await waitFor(
        () => db().agentPendingAction.findFirst({ where: { id: pending.id, status: "executed" } }),
        15_000,
      );
      expect(executed).toMatchObject({ reviewedById: dana.id, result: expect.stringContaining("Note") });
      expect(await db().note.count({ where: { authorId: scribe.id, title: NOTE.title } })).toBe(1);
      await page.goto(`${base}/subagents/scribe/pending/${pending.id}`);
      expect(await contentText(page)).toMatch(/Reviewed by @dana/);
      // Settled for alice too: her notification of the request is done.
      const alices = await db().notification.findMany({
        where: { userId: w.alice.id, path: { contains: pending.id } },
      });
      expect(alices.map((n) => Boolean(n.dismissedAt))).toEqual([true]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
