// Approvals end to end: ordered policy rules, actions queued from runs (continue and wait
// modes) and over HTTP, the owner's review (approve, edit, reject), expiry, capabilities
// checked again at execution, exactly-once execution, and who may review. Real Postgres,
// Redis, BullMQ workers and the fake LLM over HTTP.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { finishRun } from "../src/services/agents/core/runs.ts";
import { executeApproved } from "../src/services/agents/policy/approvals.ts";
import { GRANTABLE } from "../src/services/agents/policy/capabilities.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import { toActor } from "../src/services/registry/types.ts";
import { requestsFor, stepsOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, waitForRun } from "./helpers/agents.ts";
import {
  actionNames,
  buildTestApp,
  login,
  makeWorld,
  md,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import {
  eventsAbout,
  type Harness,
  NOTE,
  noteStep,
  notesBy,
  type PlanStep,
  pendingOf,
  pendingRow,
  permissions,
  queued,
  REASON,
  resumed,
  review,
  runTask,
  setupAgent,
  TASK,
  waitPending,
  waitStatus,
} from "./helpers/approvals.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("approvals");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;
const h: Harness = { app: () => app, env: () => env };
const setup = (config: Record<string, unknown>, plan: (notePath: string) => PlanStep[]) =>
  setupAgent(h, config, plan);
const settings = (w: World, action: string, body: Record<string, unknown>) =>
  md(app, w, w.alice, "POST", `/subagents/scout/settings/actions/${action}`, body);

describe("policy rules", () => {
  it("ordered rules with param patterns: the first match decides; deny names the rule; require_approval queues", async () => {
    const { w, scout, notePath } = await setup({}, (path) => [
      { path, action: "add_comment", params: { text: "our secret plan" } },
      { path, action: "add_comment", params: { text: "ok, secret is out" } },
      { path, action: "add_comment", params: { text: "Looks fine" } },
    ]);
    const rules = [
      { name: "no-secrets", action: "add_comment", decision: "deny", param_patterns: "text=secret" },
      { name: "review-all", action: "*", decision: "require_approval" },
      { name: "ok-first", action: "add_comment", decision: "allow", param_patterns: "text=^ok", position: 1 },
    ];
    for (const r of rules) expect((await settings(w, "add_rule", r)).statusCode).toBe(200);
    const runId = await runTask(h, w);
    expect((await waitForRun(scout.id)).status).toBe("completed");
    const executes = (await stepsOf(runId)).filter((s) => s.type === "execute").map((s) => s.detail);
    const byRule = expect.stringContaining("rule “no-secrets”");
    expect(executes).toEqual([
      expect.objectContaining({ ok: false, status: 403, error: byRule }),
      expect.objectContaining({ ok: true, notice: "Comment posted" }),
      expect.objectContaining({ ok: true, notice: expect.stringMatching(/^Queued for approval as #\w+/) }),
    ]);
    const comments = await db().comment.findMany({ where: { authorId: scout.id } });
    expect(comments.map((c) => c.text)).toEqual(["ok, secret is out"]);
    const [p, ...more] = await pendingOf(scout.id);
    expect(more).toEqual([]);
    expect(p).toMatchObject({ actionName: "add_comment", matchedRule: "review-all", pagePath: notePath });
    expect(p!.params).toEqual({ text: "Looks fine" });
    const prompts = requestsFor(env, w).map((r) => userPrompt(r.body));
    expect(prompts.some((x) => x.includes("`add_comment` is denied by the rule “no-secrets”"))).toBe(true);
  });

  it("no rule matches: the requires_approval list queues its actions, everything else granted runs", async () => {
    const { w, scout, notePath } = await setup({ requires_approval: ["create_note"] }, (path) => [
      noteStep,
      { path, action: "add_comment", params: { text: "Noted" } },
    ]);
    await runTask(h, w);
    expect((await waitForRun(scout.id)).status).toBe("completed");
    const [p] = await pendingOf(scout.id);
    expect(p).toMatchObject({
      actionName: "create_note",
      matchedRule: "requires_approval",
      status: "pending",
    });
    expect(await notesBy(scout.id)).toEqual([]);
    const comment = await db().comment.findFirstOrThrow({ where: { authorId: scout.id } });
    expect(comment.text).toBe("Noted");
    expect(notePath).toContain(comment.subjectId);
  });

  // Regression: the add_rule hint suggests `text=(?i)budget`, but JavaScript regexes reject
  // `(?i)` ("Invalid group"), so add_rule answered 400; rules are now RE2 patterns
  // (lib/rule-pattern.ts), which read a leading `(?i)` themselves, saving and matching.
  it("a case-insensitive pattern written (?i)secret is accepted and matches SECRET", async () => {
    const { w, scout } = await setup({}, (path) => [
      { path, action: "add_comment", params: { text: "The SECRET plan" } },
    ]);
    const rule = {
      name: "no-secrets",
      action: "add_comment",
      decision: "deny",
      param_patterns: "text=(?i)secret",
    };
    expect((await settings(w, "add_rule", rule)).statusCode).toBe(200);
    await runTask(h, w);
    await waitForRun(scout.id);
    expect(await db().comment.count({ where: { authorId: scout.id } })).toBe(0);
  });
});

describe("queued from a run", () => {
  it("continue mode: the run completes; the row keeps run, page, params, reason, context; the owner is notified", async () => {
    const { w, scout, run, p } = await queued(h);
    expect(run).toMatchObject({ status: "completed", finalMessage: "done" });
    expect(p).toMatchObject({ runId: run.id, actionName: "create_note", pagePath: "/studios/general" });
    expect(p).toMatchObject({ params: NOTE, reason: REASON, contextSummary: TASK, waits: false });
    expect(p.matchedRule).toBe("requires_approval");
    expect(Math.abs(p.expiresAt.getTime() - p.createdAt.getTime() - 24 * 3600_000)).toBeLessThan(10_000);
    const step = (await stepsOf(run.id)).find((s) => s.type === "execute")!;
    expect(step.detail).toMatchObject({ ok: true, pending: p.id, notice: expect.stringContaining(p.id) });
    expect(userPrompt(requestsFor(env, w).at(-1)!.body)).toContain(`Queued for approval as #${p.id}`);
    expect(await notesBy(scout.id)).toEqual([]);
    const n = await waitFor(() =>
      db().notification.findFirst({ where: { userId: w.alice.id, kind: "agent" } }),
    );
    expect(n).toMatchObject({ actorId: scout.id, path: `/subagents/scout/pending/${p.id}` });
    expect(n.excerpt).toBe(`wants your approval to create note: ${REASON}`);
    const list = (await md(app, w, w.alice, "GET", "/approvals")).body;
    expect(list).toContain("## Waiting for your review (1)");
    expect(list).toContain(
      `### #${p.id} · Post a note (\`create_note\`) by [Agent scout](/subagents/scout) · **pending**`,
    );
    // The page by its title, each param by its label: no raw path, no JSON.
    expect(list).toContain("on [the studio General](/studios/general) · run");
    expect(list).toContain("**Text**: All good\n\n**Title**: Findings");
    expect((await md(app, w, w.alice, "GET", "/subagents/scout/pending")).body).toContain(`#${p.id}`);
    const detail = (await md(app, w, w.alice, "GET", `/subagents/scout/pending/${p.id}`)).body;
    expect(detail).toContain(`run [${run.id}](/subagents/scout/runs/${run.id}) (manual)`);
    expect(detail).toContain("because of the approval list");
    expect(detail).toContain(`The agent's reason:\n\n> ${REASON}`);
    expect(detail).toContain(`What it was working on:\n\n> ${TASK}`);
    expect(detail).toContain("**Title**: Findings");
  });

  it("wait mode: the run waits (awaiting_approval), and resumes with the outcome once approved", async () => {
    const { w, scout, run, p } = await queued(h, { approval_mode: "wait" });
    expect(run).toMatchObject({ status: "waiting", stopReason: "awaiting_approval", leaseOwner: null });
    expect(run.question).toContain(`#${p.id}`);
    expect(p).toMatchObject({ runId: run.id, waits: true });
    expect(requestsFor(env, w)).toHaveLength(2);
    expect((await review(app, w, w.alice, "approve_action", { id: p.id })).statusCode).toBe(200);
    const { run: done, prompts } = await resumed(h, w, scout.id);
    const [note] = await notesBy(scout.id);
    expect(done).toMatchObject({ id: run.id, status: "completed" });
    expect(done.finalMessage).toBe(`your owner's review of #${p.id} (create_note): executed — Note posted`);
    expect(prompts).toHaveLength(3);
    expect(prompts[2]).toContain(`your owner's review of #${p.id} (create_note): executed`);
    const steps = await stepsOf(run.id);
    expect(steps.map((s) => s.type)).toEqual(["navigate", "navigate", "execute", "approval", "finish"]);
    const path = `/studios/general/notes/${note!.id}`;
    expect(steps[3]!.detail).toMatchObject({ pending: p.id, status: "executed", path });
  });
  it("a run awaiting approval points to the review and cannot be resumed with answer_question", async () => {
    const { w, run, p } = await queued(h, { approval_mode: "wait" });
    const url = `/subagents/scout/runs/${run.id}`;
    const page = (await md(app, w, w.alice, "GET", url)).body;
    expect(page).toContain(
      `[\\#${p.id}](/subagents/scout/pending/${p.id}) Post a note (\`create_note\`) on [the studio General](/studios/general) — **pending**`,
    );
    expect(page).toContain("The run waits for your review.");
    expect(page).not.toContain("## Waiting for your answer");
    expect(actionNames(page)).not.toContain("answer_question");
    const res = await md(app, w, w.alice, "POST", `${url}/actions/answer_question`, { answer: "go on" });
    expect(res.statusCode).toBe(403);
    expect((await waitForRun(run.agentId, (s) => s === "waiting")).id).toBe(run.id);
    expect((await pendingRow(p.id)).status).toBe("pending");
  });
});

describe("review", () => {
  it("approve: exactly one of five concurrent approvals wins; redelivered jobs never execute it twice", async () => {
    const { w, scout, run, p } = await queued(h);
    const tries = await Promise.all(
      [1, 2, 3, 4, 5].map(() => review(app, w, w.alice, "approve_action", { id: p.id })),
    );
    expect(tries.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(tries.find((r) => r.statusCode === 409)!.body).toMatch(/is already (approved|executed)/);
    const done = await waitStatus(p.id, "executed");
    const q = env.runtime.queues["approved-actions"];
    const jobs = await Promise.all(
      [1, 2, 3].map((i) => q.add("execute", { pendingId: p.id }, { jobId: `again-${i}-${p.id}` })),
    );
    expect(await Promise.all([1, 2].map(() => executeApproved(registry, db(), p.id)))).toEqual([null, null]);
    await waitFor(async () => (await Promise.all(jobs.map((j) => j.isCompleted()))).every(Boolean));
    const notes = await notesBy(scout.id);
    expect(notes).toHaveLength(1);
    const path = `/studios/general/notes/${notes[0]!.id}`;
    expect(done).toMatchObject({ result: "Note posted", resultPath: path, reviewedById: w.alice.id });
    await waitFor(async () => (await eventsAbout(p.id, "approval.executed")) === 1);
    const detail = (await md(app, w, w.alice, "GET", `/subagents/scout/pending/${p.id}`)).body;
    expect(detail).toContain(`Executed: Note posted → [the note “Findings” in General](${path})`);
    const runPage = (await md(app, w, w.alice, "GET", `/subagents/scout/runs/${run.id}`)).body;
    expect(runPage).toContain(`- note \`${notes[0]!.id}\` — note.created at step 3 — [${path}](${path})`);
    const asked = `[\\#${p.id}](/subagents/scout/pending/${p.id}) Post a note (\`create_note\`) on [the studio General](/studios/general)`;
    expect(runPage).toContain(
      `- ${asked} — **executed** by Alice Adams → [the note “Findings” in General](${path})`,
    );
  });

  it("the execution claim: approved once, executed once, however many workers race for it", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { requires_approval: ["create_note"] });
    const res = await md(app, w, scout, "POST", "/studios/general/actions/create_note", NOTE);
    expect(res.statusCode).toBe(202);
    const p = await waitPending(scout.id);
    // Approved without the event, so nothing runs it until the racers below do.
    await db().agentPendingAction.update({ where: { id: p.id }, data: { status: "approved" } });
    const q = env.runtime.queues["approved-actions"];
    const racers = [1, 2, 3, 4, 5].map(() => executeApproved(registry, db(), p.id));
    const jobs = await Promise.all(
      [1, 2, 3].map((i) => q.add("execute", { pendingId: p.id }, { jobId: `race-${i}-${p.id}` })),
    );
    const outcomes = await Promise.all(racers);
    expect(outcomes.filter((o) => o !== null).length).toBeLessThanOrEqual(1);
    await waitFor(async () => (await Promise.all(jobs.map((j) => j.isCompleted()))).every(Boolean));
    await waitStatus(p.id, "executed");
    await waitFor(async () => (await eventsAbout(p.id, "approval.executed")) >= 1);
    expect(await notesBy(scout.id)).toHaveLength(1);
    expect(await eventsAbout(p.id, "approval.executed")).toBe(1);
  });

  it("edit then approve: bad edits are 400s naming the field and change nothing; a good edit, a field each, executes as edited", async () => {
    const { w, scout, p } = await queued(h);
    const bad = async (params: unknown, field: string) => {
      const res = await review(app, w, w.alice, "approve_action", { id: p.id, params });
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain(`\`${field}\``);
    };
    await bad("{not json", "params");
    await bad([1], "params");
    await bad({ title: "No text" }, "params.text");
    await bad({ text: "ok", colour: "red" }, "params.colour");
    const untouched = { status: "pending", editedParams: null, reviewedById: null };
    expect(await pendingRow(p.id)).toMatchObject(untouched);
    expect(await eventsAbout(p.id, "approval.approved")).toBe(0);
    const browser = await login(app, w, w.alice);
    const page = `/subagents/scout/pending/${p.id}`;
    // A field per param, labelled from the action's own schema, filled with what the agent asked.
    const html = (await browser.get(page)).body;
    expect(html).toMatch(
      /<label for="[^"]*params\.title">Title <span class="optional">optional<\/span><\/label><input type="text" [^>]*name="params\.title" value="Findings"/,
    );
    expect(html).toMatch(/<textarea [^>]*name="params\.text"[^>]*>All good<\/textarea>/);
    expect(html).not.toContain("&quot;title&quot;");
    // A field the form leaves empty is a 400 at that field, on the same page.
    const empty = await browser.post(page, {
      _action: "approve_action",
      id: p.id,
      "params.title": "x",
      "params.text": "",
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toMatch(/<p class="field-error" id="[^"]*params\.text-error">must not be empty<\/p>/);
    const res = await browser.post(page, {
      _action: "approve_action",
      id: p.id,
      "params.title": "Edited",
      "params.text": "Better",
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(page);
    const done = await waitStatus(p.id, "executed");
    expect(done.editedParams).toEqual({ title: "Edited", text: "Better" });
    const notes = await notesBy(scout.id);
    expect(notes.map((n) => [n.title, n.text])).toEqual([["Edited", "Better"]]);
    expect(done.resultSubjectId).toBe(notes[0]!.id);
    expect((await md(app, w, w.alice, "GET", page)).body).toContain(
      "Edited by @alice before approval: **Text** (it asked for “All good”), **Title** (it asked for “Findings”).",
    );
    // The note says so too, for everyone who reads it.
    const note = (await md(app, w, w.bob, "GET", `/studios/general/notes/${notes[0]!.id}`)).body;
    expect(note).toContain("edited by [@alice](/u/alice) before approval");
  });

  it("reject with a reason (wait mode): never executes; the reason reaches the run, which completes", async () => {
    const { w, scout, run, p } = await queued(h, { approval_mode: "wait" });
    const reason = "Not before Monday's meeting";
    const at = "/subagents/scout/pending";
    expect((await review(app, w, w.alice, "reject_action", { id: p.id, reason }, at)).statusCode).toBe(200);
    const { run: done, prompts } = await resumed(h, w, scout.id);
    expect(done).toMatchObject({ id: run.id, status: "completed" });
    expect(prompts.at(-1)).toContain(`your owner's review of #${p.id} (create_note): rejected — ${reason}`);
    const rejected = { status: "rejected", reviewNote: reason, executedAt: null };
    expect(await pendingRow(p.id)).toMatchObject(rejected);
    expect((await review(app, w, w.alice, "approve_action", { id: p.id })).statusCode).toBe(409);
    expect(await executeApproved(registry, db(), p.id)).toBeNull();
    expect(await notesBy(scout.id)).toEqual([]);
    const list = (await md(app, w, w.alice, "GET", "/approvals")).body;
    expect(list).toContain(
      `\`create_note\` by @scout on [the studio General](/studios/general) — **rejected** by @alice: ${reason}`,
    );
    const runPage = (await md(app, w, w.alice, "GET", `/subagents/scout/runs/${run.id}`)).body;
    expect(runPage).toContain(`Review of #${p.id} (\`create_note\`): **rejected** — ${reason}`);
  });

  it("expiry: an unreviewed action expires and never executes; a waiting run resumes with “expired”", async () => {
    const { w, scout } = await setup({ requires_approval: ["create_note"] }, () => [noteStep]);
    const reviews = permissions([...GRANTABLE], { approval: ["create_note"], mode: "wait", expiry: 1 });
    expect((await settings(w, "set_capabilities", reviews)).statusCode).toBe(200);
    await runTask(h, w);
    await waitForRun(scout.id, (s) => s === "waiting");
    const p = await waitPending(scout.id);
    expect(Math.abs(p.expiresAt.getTime() - p.createdAt.getTime() - 3600_000)).toBeLessThan(10_000);
    const expiresAt = new Date(Date.now() - 1000);
    await db().agentPendingAction.update({ where: { id: p.id }, data: { expiresAt } });
    await waitStatus(p.id, "expired");
    const { run, prompts } = await resumed(h, w, scout.id);
    expect(run.status).toBe("completed");
    expect(prompts.at(-1)).toContain(
      `review of #${p.id} (create_note): expired — Nobody reviewed it before it expired.`,
    );
    expect((await review(app, w, w.alice, "approve_action", { id: p.id })).statusCode).toBe(409);
    expect(await notesBy(scout.id)).toEqual([]);
  });

  it("a capability revoked before approval: approving leads to `failed` with the capability error, nothing written", async () => {
    const { w, scout, p } = await queued(h);
    expect((await settings(w, "set_capabilities", permissions(["add_comment"]))).statusCode).toBe(200);
    expect((await review(app, w, w.alice, "approve_action", { id: p.id })).statusCode).toBe(200);
    const failed = await waitStatus(p.id, "failed");
    expect(failed.error).toContain("capability `create_note` is not granted to this agent");
    expect(failed.result).toBeNull();
    expect(await notesBy(scout.id)).toEqual([]);
    await waitFor(async () => (await eventsAbout(p.id, "approval.failed")) === 1);
    const detail = (await md(app, w, w.alice, "GET", `/subagents/scout/pending/${p.id}`)).body;
    expect(detail).toContain("Failed: You cannot use \\`create\\_note\\` here: capability");
  });
});

describe("who reviews", () => {
  it("only the owner: bob (same tenant), the agent itself and another tenant get 404/401/403 and change nothing", async () => {
    const { w, scout, p } = await queued(h);
    const other = await makeWorld();
    const pages = ["/subagents/scout/pending", `/subagents/scout/pending/${p.id}`];
    for (const url of pages) expect((await md(app, w, w.bob, "GET", url)).statusCode).toBe(404);
    expect((await md(app, w, w.bob, "GET", "/approvals")).body).not.toContain(p.id);
    const bobB = await login(app, w, w.bob);
    expect((await bobB.get(pages[1]!)).statusCode).toBe(404);
    for (const at of ["/approvals", ...pages]) {
      expect((await review(app, w, w.bob, "approve_action", { id: p.id }, at)).statusCode).toBe(404);
      expect((await review(app, w, w.bob, "reject_action", { id: p.id, reason: "no" }, at)).statusCode).toBe(
        404,
      );
    }
    const form = await bobB.post("/approvals/actions/approve_action", { id: p.id });
    expect(form.statusCode).toBe(404);
    expect((await review(app, w, scout, "approve_action", { id: p.id })).statusCode).toBe(403);
    const foreign = { ...other, host: w.host };
    expect((await review(app, foreign, other.alice, "approve_action", { id: p.id })).statusCode).toBe(401);
    expect((await review(app, other, other.alice, "approve_action", { id: p.id })).statusCode).toBe(404);
    expect((await md(app, other, other.alice, "GET", pages[1]!)).statusCode).toBe(404);
    expect(await pendingRow(p.id)).toMatchObject({ status: "pending", reviewedById: null });
  });
});

describe("over HTTP", () => {
  it("an agent with its own token: 202 and a pending row outside a run; a deny rule is a 403 naming it", async () => {
    const w = await makeWorld();
    const rule = { name: "no-decisions", action: "create_decision", params: {}, decision: "deny" };
    const scout = await makeAgent(w, w.alice, "scout", {
      requires_approval: ["create_note"],
      approval_mode: "wait",
      rules: [rule],
    });
    const res = await md(app, w, scout, "POST", "/studios/general/actions/create_note", NOTE);
    expect(res.statusCode).toBe(202);
    const p = await waitPending(scout.id);
    expect(res.body).toContain(`**Queued for approval as #${p.id}: your owner reviews it.**`);
    expect(p).toMatchObject({ runId: null, waits: false, params: NOTE, pagePath: "/studios/general" });
    expect(p.contextSummary).toBe("Called with the agent's API token, outside a run.");
    const denied = await md(app, w, scout, "POST", "/studios/general/actions/create_decision", {
      question: "Why?",
    });
    expect(denied.statusCode).toBe(403);
    expect(denied.body).toContain("denied by the rule “no-decisions”");
    expect(await notesBy(scout.id)).toEqual([]);
    expect((await review(app, w, w.alice, "approve_action", { id: p.id })).statusCode).toBe(200);
    expect((await waitStatus(p.id, "executed")).resultPath).toMatch(/^\/studios\/general\/notes\/\w+$/);
  });
});

describe("regressions", () => {
  // Regression: a lost wakeup in wait mode. The pending row commits inside the action's
  // transaction, but the run is marked `waiting` only afterwards, by finishRun. A review
  // landing in between found the run still `running`, resumeWaitingRun did nothing, and the
  // run waited forever; resumeSettled (maintenance job) now closes the gap. Reproduced
  // deterministically by doing the worker's steps in that order around the review.
  it("a review that lands before the run is marked waiting still resumes the run", async () => {
    const { w, scout } = await setup({ requires_approval: ["create_note"], approval_mode: "wait" }, () => []);
    const lease = { leaseOwner: "test-worker", leaseExpiresAt: new Date(Date.now() + 60_000) };
    const run = await db().subagentTaskRun.create({
      data: {
        ...{ id: newId(), tenantId: w.tenant.id, agentId: scout.id, initiatedById: w.alice.id, task: TASK },
        ...{ triggerKind: "manual", maxSteps: 10, timeoutSeconds: 60, status: "running", ...lease },
      },
    });
    const tenant = await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
    const actor = toActor(await db().user.findUniqueOrThrow({ where: { id: scout.id } }));
    const ctx = { db: db(), tenant, actor, run: { id: run.id, chainDepth: 0 } };
    const out = await registry.run(ctx, "/studios/general", "create_note", NOTE, { form: false });
    expect(out.pending?.waits).toBe(true);
    const res = await review(app, w, w.alice, "reject_action", { id: out.pending!.id, reason: "No" });
    expect(res.statusCode).toBe(200);
    expect(
      await finishRun(db(), run, "test-worker", { status: "waiting", stopReason: "awaiting_approval" }),
    ).toBe(true);
    expect((await waitForRun(scout.id, undefined, 5000)).status).toBe("completed");
  });

  // Regression: executeApproved commits `executed` in the action's transaction, but emits
  // `approval.executed` and resumes the waiting run in a second one. When that one failed (a
  // crash, a dropped connection), the job's retry found the row `executed` and returned null:
  // the run waited forever. Here that insert fails (a trigger in this file's database) until
  // the job has failed once; resumeSettled must still hand the outcome to the run.
  it("an outcome whose event failed to commit once still reaches the waiting run", async () => {
    const { w, scout, p } = await queued(h, { approval_mode: "wait" });
    const fn = `fail_${p.id}`;
    await db().$executeRawUnsafe(`CREATE FUNCTION ${fn}() RETURNS trigger AS $$ BEGIN
      IF NEW.type = 'approval.executed' AND NEW.subject_id = '${p.id}' THEN RAISE EXCEPTION 'connection lost'; END IF;
      RETURN NEW; END $$ LANGUAGE plpgsql`);
    await db().$executeRawUnsafe(
      `CREATE TRIGGER ${fn} BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
    );
    try {
      expect((await review(h.app(), w, w.alice, "approve_action", { id: p.id })).statusCode).toBe(200);
      const job = await waitFor(async () => {
        const j = await env.runtime.queues["approved-actions"].getJob(`approved-${p.id}`);
        return j && j.attemptsMade >= 1 && j;
      });
      expect(job.failedReason).toContain("connection lost");
    } finally {
      await db().$executeRawUnsafe(`DROP TRIGGER ${fn} ON events`);
      await db().$executeRawUnsafe(`DROP FUNCTION ${fn}()`);
    }
    expect((await pendingRow(p.id)).status).toBe("executed");
    expect((await waitForRun(scout.id, undefined, 6000)).status).toBe("completed");
  });
});
