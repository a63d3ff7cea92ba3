// Approvals where the work is (issue 30, item 7): a reply waiting in its thread with Approve
// and Reject for whoever may review it, "not posted" when refused, the run's final message
// set right, an edit marked on what it changed, and archiving an agent ending what it asked.
// Real workers and the fake LLM.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_ARCHIVED, executeApproved } from "../src/services/agents/policy/approvals.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import { type AgentEnv, startAgents, waitForRun } from "./helpers/agents.ts";
import { act, actionNames, buildTestApp, login, md, testPrisma, type World } from "./helpers/app.ts";
import {
  type Harness,
  notesBy,
  pendingRow,
  queued,
  review,
  setupAgent,
  waitPending,
  waitStatus,
} from "./helpers/approvals.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("approvals-context");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;
const h: Harness = { app: () => app, env: () => env };
const REPLY = "Thursday suits everyone I asked.";
const REASON = "Ask the team before answering for them";

/** @scout, asked in a note's thread, replies there; its reply needs alice's approval. */
async function waitingReply(mode: "wait" | "continue" = "wait") {
  const { w, scout, notePath } = await setupAgent(
    h,
    { requires_approval: ["add_comment"], approval_mode: mode },
    (path) => [{ path, action: "add_comment", params: { text: REPLY } }],
  );
  await act(w, w.alice, notePath, "add_comment", { text: "@scout which day suits the retro?" });
  const run = await waitForRun(scout.id, mode === "wait" ? (s) => s === "waiting" : undefined, 15_000);
  expect(run.threadId).toBe(notePath.split("/").pop());
  return { w, scout, notePath, run, p: await waitPending(scout.id) };
}

const page = (w: World, who: World["alice"], path: string) => md(app, w, who, "GET", path);

describe("the thread", () => {
  it("shows a reply waiting for approval: its text and Approve/Reject for its owner, only that it waits for others", async () => {
    const { w, notePath, p } = await waitingReply();
    const mine = (await page(w, w.alice, notePath)).body;
    expect(mine).toContain(
      `**@scout's reply is waiting for approval** ([\\#${p.id}](/subagents/scout/pending/${p.id}), \`add_comment\`).\n\n> ${REPLY}`,
    );
    expect(actionNames(mine)).toEqual(expect.arrayContaining(["approve_action", "reject_action"]));
    const html = (await (await login(app, w, w.alice)).get(notePath)).body;
    expect(html).toContain('<div class="review-notice waiting">');
    expect(html).toMatch(
      new RegExp(`<form method="post" action="${notePath}"[^>]*data-action="approve_action"`),
    );
    // Bob reads the thread: it waits, but what it would say is its reviewer's to see first.
    const bobs = (await page(w, w.bob, notePath)).body;
    expect(bobs).toContain("**@scout's reply is waiting for approval** (`add_comment`) by its owner.");
    expect(bobs).not.toContain(REPLY);
    expect(actionNames(bobs)).not.toContain("approve_action");
    // A thread with nothing waiting offers no review.
    const other = await act(w, w.alice, "/studios/general", "create_note", { title: "Quiet", text: "None" });
    expect(actionNames((await page(w, w.alice, other.location)).body)).not.toContain("approve_action");
  });

  it("rejected from the thread (asked first, with the reason): 'not posted' there, and the run says what happened", async () => {
    const { w, scout, notePath, run, p } = await waitingReply();
    const b = await login(app, w, w.alice);
    const ask = await b.post(notePath, { _action: "reject_action", id: p.id });
    expect(ask.statusCode).toBe(200);
    expect(ask.body).toContain(
      `<p class="confirm-what">@scout&#39;s reply (add_comment) on the note “Plan” in General: “${REPLY}”</p>`,
    );
    expect(ask.body).toMatch(
      /<label for="confirm-reject_action-reason">Why \(the agent reads this\)<\/label><textarea/,
    );
    expect((await pendingRow(p.id)).status).toBe("pending");
    const done = await b.post(notePath, {
      _action: "reject_action",
      id: p.id,
      reason: REASON,
      _confirm: "yes",
    });
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe(notePath);
    const thread = (await page(w, w.bob, notePath)).body;
    expect(thread).toContain(
      `**Not posted**: @scout's reply (\`add_comment\`) was rejected by Alice Adams (${REASON}).`,
    );
    // The run resumes with the outcome, told plainly it did not happen, and ends.
    const ended = await waitForRun(scout.id, (s) => s === "completed", 15_000);
    expect(ended.finalMessage).toContain("rejected");
    expect(ended.finalMessage).toContain("(so it was NOT done: do not report it as done)");
    const runPage = (await page(w, w.alice, `/subagents/scout/runs/${run.id}`)).body;
    expect(runPage).toContain(
      `_Those are the agent's words. What happened:_ its reply (\`add_comment\`, #${p.id}) on the note “Plan” in General was **not done**: rejected by Alice Adams (${REASON}).`,
    );
    expect(await db().comment.count({ where: { authorId: scout.id } })).toBe(0);
  });

  it("approved from the run page: back to the run; edited on its own page first: the comment says so", async () => {
    const first = await waitingReply("continue");
    const b = await login(app, first.w, first.w.alice);
    const runPath = `/subagents/scout/runs/${first.run.id}`;
    expect((await b.get(runPath)).body).toContain(`>Approve #${first.p.id}</button>`);
    const approved = await b.post(runPath, { _action: "approve_action", id: first.p.id });
    expect([approved.statusCode, approved.headers.location]).toEqual([303, runPath]);
    await waitStatus(first.p.id, "executed");
    expect((await page(first.w, first.w.bob, first.notePath)).body).not.toContain("edited by");

    const { w, scout, notePath, p } = await waitingReply("continue");
    const alice = await login(app, w, w.alice);
    const pendingPage = `/subagents/scout/pending/${p.id}`;
    const edited = "Thursday, once the team confirms.";
    const res = await alice.post(pendingPage, { _action: "approve_action", id: p.id, "params.text": edited });
    expect(res.statusCode).toBe(303);
    await waitStatus(p.id, "executed");
    const comment = await db().comment.findFirstOrThrow({ where: { authorId: scout.id } });
    expect(comment.text).toBe(edited);
    const thread = (await page(w, w.bob, notePath)).body;
    expect(thread).toMatch(
      new RegExp(`edited by \\[@alice\\]\\(/u/alice\\) before approval · comment \`${comment.id}\``),
    );
  });
});

describe("the queue", () => {
  it("approving on /approvals comes back to /approvals", async () => {
    const { w, p } = await queued(h);
    const b = await login(app, w, w.alice);
    const res = await b.post("/approvals", { _action: "approve_action", id: p.id });
    expect([res.statusCode, res.headers.location]).toEqual([303, "/approvals"]);
    expect((await b.get("/approvals")).body).toContain(`You approved #${p.id}.`);
  });
});

describe("archiving an agent", () => {
  // Regression (issue 30): approving an archived agent's pending action made it post.
  it("expires its pending and approved-but-unrun actions: approving one after does nothing", async () => {
    const { w, scout, p } = await queued(h);
    const second = await db().agentPendingAction.create({
      data: {
        ...{
          id: `${p.id.slice(0, 10)}zz`,
          tenantId: w.tenant.id,
          agentId: scout.id,
          actionName: "create_note",
        },
        ...{ params: { text: "Late" }, pagePath: "/studios/general", matchedRule: "requires_approval" },
        // Approved, its job not yet run by the worker.
        ...{ status: "approved", reviewedById: w.alice.id, reviewedAt: new Date() },
        expiresAt: new Date(Date.now() + 3600_000),
      },
    });
    const archived = await md(app, w, w.alice, "POST", "/subagents/scout/actions/archive_subagent", {});
    expect(archived.statusCode).toBe(200);
    for (const id of [p.id, second.id])
      expect(await pendingRow(id)).toMatchObject({ status: "expired", error: AGENT_ARCHIVED });
    const late = await review(app, w, w.alice, "approve_action", { id: p.id });
    expect(late.statusCode).toBe(409);
    expect(late.body).toContain(`#${p.id} expired: ${AGENT_ARCHIVED}`);
    expect(await executeApproved(registry, db(), second.id)).toBeNull();
    expect(await notesBy(scout.id)).toEqual([]);
    expect((await md(app, w, w.alice, "GET", "/approvals")).body).toContain("## Waiting for your review (0)");
  });
});
