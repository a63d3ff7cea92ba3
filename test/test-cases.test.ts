// Test cases (issue 47): "Save as a test case" on a run keeps its trigger and the expectations
// its managers pick or type, through the markdown API and the browser's form alike; a case's
// page says them in words and grades the run it came from; only its managers see or keep them.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

const db = testPrisma;

/** A finished run of `agentId` that commented, was refused a delete, and finished. */
async function finishedRun(w: World, agentId: string, initiatedById: string) {
  const run = await db().subagentTaskRun.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      agentId,
      initiatedById,
      triggerKind: "manual",
      task: "Thank the team on the launch note",
      label: [{ studio: w.studio.id }],
      maxSteps: 10,
      timeoutSeconds: 60,
      status: "completed",
      stopReason: "finished",
      finalMessage: "Done: thanked the team.",
      stepsCount: 3,
      costMicros: 20_000n,
    },
  });
  const step = { runId: run.id, tenantId: w.tenant.id, path: "/studios/general" };
  await db().subagentTaskRunStep.createMany({
    data: [
      {
        ...step,
        id: newId(),
        number: 1,
        type: "execute",
        detail: { ok: true, action: "add_comment", params: { text: "Thanks, all!" } },
      },
      {
        ...step,
        id: newId(),
        number: 2,
        type: "execute",
        detail: { ok: false, action: "create_note", params: { title: "x" }, error: "not allowed" },
      },
      { ...step, id: newId(), number: 3, type: "finish", detail: { message: "Done: thanked the team." } },
    ],
  });
  return run;
}

/** A world whose alice owns @scout (made through the registry) and one finished run of it. */
async function setup() {
  const w = await makeWorld();
  const created = await md(app, w, w.alice, "POST", "/subagents/actions/create_subagent", {
    name: "Scout",
    handle: "scout",
  });
  expect(created.statusCode).toBe(201);
  const agent = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "scout" } });
  const run = await finishedRun(w, agent.id, w.alice.id);
  const runPath = `/subagents/scout/runs/${run.id}`;
  return { w, agent, run, runPath };
}

const casesOf = (agentId: string) =>
  db().agentTestCase.findMany({ where: { agentId }, orderBy: { createdAt: "asc" } });

describe("save a run as a test case", () => {
  it("through the markdown API: its trigger, the expectations in words, the original graded", async () => {
    const { w, agent, run, runPath } = await setup();
    const page = (await md(app, w, w.alice, "GET", runPath)).body;
    expect(page).toContain("`save_test_case`");
    const res = await md(app, w, w.alice, "POST", `${runPath}/actions/save_test_case`, {
      name: "Thanks the team",
      must_take: "add_comment text=(?i)thanks",
      must_not_take: "create_note\ncreate_decision question=(?i)budget",
      max_steps: 5,
      max_cost_usd: 0.01,
      no_disclosure: true,
      reply_contains: "thanked",
      reply_lacks: "sorry",
    });
    expect(res.statusCode).toBe(201);
    expect(res.body).toContain("Saved test case “Thanks the team” with 9 expectations");
    const [saved] = await casesOf(agent.id);
    expect(saved).toMatchObject({
      tenantId: w.tenant.id,
      fromRunId: run.id,
      task: "Thank the team on the launch note",
      triggerKind: "manual",
      viewerIds: [],
      label: [{ studio: w.studio.id }],
      createdById: w.alice.id,
    });
    expect(saved!.expectations).toEqual([
      { kind: "action", must: true, action: "add_comment", params: { text: "(?i)thanks" } },
      { kind: "action", must: false, action: "create_note", params: {} },
      { kind: "action", must: false, action: "create_decision", params: { question: "(?i)budget" } },
      { kind: "finishes" },
      { kind: "max_steps", steps: 5 },
      { kind: "max_cost", usd: 0.01 },
      { kind: "no_disclosure" },
      { kind: "reply", contains: true, text: "thanked" },
      { kind: "reply", contains: false, text: "sorry" },
    ]);
    const events = await db().event.findMany({
      where: { tenantId: w.tenant.id, type: "subagent.test_case_saved" },
    });
    expect(events.map((e) => [e.actorId, e.subjectId, e.payload])).toEqual([
      [w.alice.id, agent.id, { case: saved!.id, run: run.id, expectations: 9 }],
    ]);

    const casePage = (await md(app, w, w.alice, "GET", `/subagents/scout/cases/${saved!.id}`)).body;
    expect(casePage).toContain("# Test case “Thanks the team” of Scout");
    expect(casePage).toContain("> Thank the team on the launch note");
    for (const line of [
      "- Takes `add_comment` with text ~ `/(?i)thanks/`",
      "- Never takes `create_note`",
      "- At most 5 steps",
      "- Costs at most $0.01",
      "- Its reply contains “thanked”",
    ])
      expect(casePage).toContain(line);
    expect(casePage).toContain(`[run ${run.id}](/subagents/scout/runs/${run.id}): passes 8 of 9.`);
    expect(casePage).toContain("✓ Never takes `create_note` — never took `create_note` (refused at step 2)");
    expect(casePage).toContain("✗ Costs at most $0.01 — it cost $0.0200");

    const list = (await md(app, w, w.alice, "GET", "/subagents/scout/cases")).body;
    expect(list).toContain("## Test cases (1)");
    expect(list).toContain(`[Thanks the team](/subagents/scout/cases/${saved!.id})`);
    expect((await md(app, w, w.alice, "GET", "/subagents/scout")).body).toContain(
      "[Test cases](/subagents/scout/cases)",
    );
  });

  it("from the browser's form on the run page, prefilled from what the run did", async () => {
    const { w, agent, runPath } = await setup();
    const browser = await login(app, w, w.alice);
    const html = (await browser.get(runPath)).body;
    expect(html).toContain("Save as a test case");
    // The action it took is offered as one it must take; the refused one is not.
    expect(html).toMatch(/name="must_take"[^>]*>add_comment<\/textarea>/);
    const res = await browser.post(`${runPath}/actions/save_test_case`, {
      name: "From the form",
      must_take: "add_comment",
      must_finish: "true",
      max_steps: "",
      max_cost_usd: "",
    });
    expect(res.statusCode).toBe(303);
    const [saved] = await casesOf(agent.id);
    expect(res.headers.location).toBe(`/subagents/scout/cases/${saved!.id}`);
    expect(saved!.expectations).toEqual([
      { kind: "action", must: true, action: "add_comment", params: {} },
      { kind: "finishes" },
    ]);
  });

  it("a pattern RE2 cannot run, an unknown action or param: a 400 naming the field by its label, nothing saved", async () => {
    const { w, agent, runPath } = await setup();
    const post = (body: Record<string, unknown>) =>
      md(app, w, w.alice, "POST", `${runPath}/actions/save_test_case`, { name: "Bad", ...body });
    const backref = await post({ must_take: "add_comment\nadd_comment text=(a)\\1" });
    expect(backref.statusCode).toBe(400);
    // Markdown names the param as it is sent; the browser's form, by its label (below).
    expect(issuesOf(backref.body).must_take).toContain("line 2: backreferences");
    const unknown = await post({ must_not_take: "fly_away" });
    expect(unknown.statusCode).toBe(400);
    expect(issuesOf(unknown.body).must_not_take).toBeDefined();
    expect(unknown.body).toContain("line 1: no action or connected tool is called “fly_away”");
    const param = await post({ must_take: "add_comment colour=red" });
    expect(param.statusCode).toBe(400);
    expect(param.body).toContain("`add_comment` has no param “colour”");
    const browser = await login(app, w, w.alice);
    const form = await browser.post(`${runPath}/actions/save_test_case`, {
      name: "Bad",
      must_take: "add_comment text=(?=x)",
    });
    expect(form.statusCode).toBe(400);
    expect(form.body).toContain("Actions it must take");
    expect(issuesOf(form.body).must_take).toContain("line 1: lookahead and lookbehind");
    expect(await casesOf(agent.id)).toEqual([]);
  });
  it("only once the run has ended: a waiting run offers no save, and refuses one", async () => {
    const { w, agent, run, runPath } = await setup();
    await db().subagentTaskRun.update({
      where: { id: run.id },
      data: { status: "waiting", stopReason: "asked_owner", question: "Which note?" },
    });
    expect((await md(app, w, w.alice, "GET", runPath)).body).not.toContain("`save_test_case`");
    const res = await md(app, w, w.alice, "POST", `${runPath}/actions/save_test_case`, { name: "Early" });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("only a run that has ended can be saved as a test case");
    expect(await casesOf(agent.id)).toEqual([]);
  });
});

describe("edit and delete", () => {
  it("replaces a case's expectations from its page, then deletes it; the run stays", async () => {
    const { w, agent, run, runPath } = await setup();
    await md(app, w, w.alice, "POST", `${runPath}/actions/save_test_case`, { name: "One", max_steps: 2 });
    const [saved] = await casesOf(agent.id);
    const path = `/subagents/scout/cases/${saved!.id}`;
    expect((await md(app, w, w.alice, "GET", path)).body).toContain("✗ At most 2 steps — it took 3 steps");
    const browser = await login(app, w, w.alice);
    expect((await browser.get(path)).body).toMatch(/name="max_steps" value="2"/);
    const edited = await browser.post(`${path}/actions/update_test_case_expectations`, {
      case: saved!.id,
      max_steps: "3",
      must_finish: "true",
    });
    expect(edited.statusCode).toBe(303);
    expect((await casesOf(agent.id))[0]!.expectations).toEqual([
      { kind: "finishes" },
      { kind: "max_steps", steps: 3 },
    ]);
    const gone = await md(app, w, w.alice, "POST", `${path}/actions/delete_test_case`, {
      case: saved!.id,
    });
    expect(gone.statusCode).toBe(200);
    expect(await casesOf(agent.id)).toEqual([]);
    expect(await db().subagentTaskRun.findUnique({ where: { id: run.id } })).not.toBeNull();
    expect((await md(app, w, w.alice, "GET", path)).statusCode).toBe(404);
    const types = await db().event.findMany({
      where: { tenantId: w.tenant.id, type: { startsWith: "subagent.test_case" } },
      orderBy: { createdAt: "asc" },
    });
    expect(types.map((e) => e.type)).toEqual([
      "subagent.test_case_saved",
      "subagent.test_case_updated",
      "subagent.test_case_deleted",
    ]);
  });
});

describe("only its managers", () => {
  it("another person gets 404 from its cases and may not save one; the agent itself may not either", async () => {
    const { w, agent, runPath } = await setup();
    await md(app, w, w.alice, "POST", `${runPath}/actions/save_test_case`, { name: "Mine", max_steps: 9 });
    const [saved] = await casesOf(agent.id);
    for (const who of [w.bob, w.carol]) {
      for (const path of ["/cases", `/cases/${saved!.id}`])
        expect((await md(app, w, who, "GET", `/subagents/scout${path}`)).statusCode).toBe(404);
      const res = await md(app, w, who, "POST", `${runPath}/actions/save_test_case`, { name: "Theirs" });
      expect(res.statusCode).toBe(404);
    }
    const token = await createApiToken(db(), w.tenant.id, agent.id, "self", { scope: "manage" });
    const self = { ...w.alice, id: agent.id, handle: "scout", token: token.token };
    const res = await md(app, w, self, "POST", `${runPath}/actions/save_test_case`, { name: "Self" });
    expect([403, 404]).toContain(res.statusCode);
    expect(await casesOf(agent.id)).toHaveLength(1);
  });

  it("a studio's agent: a plain member who gave it a task sees the run but gets 403 saving it, and its cases say who manages it", async () => {
    const w = await makeWorld();
    await md(app, w, w.alice, "POST", "/subagents/actions/create_subagent", {
      name: "Helper",
      handle: "helper",
      studio: "general",
    });
    const agent = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "helper" } });
    const allowed = await md(app, w, w.alice, "POST", "/subagents/helper/actions/set_member_runs", {
      members_may_run: true,
    });
    expect(allowed.statusCode).toBe(200);
    const run = await finishedRun(w, agent.id, w.bob.id);
    const runPath = `/subagents/helper/runs/${run.id}`;
    const page = await md(app, w, w.bob, "GET", runPath);
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain("`save_test_case`");
    const res = await md(app, w, w.bob, "POST", `${runPath}/actions/save_test_case`, { name: "Bob's" });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("only the agent's managers keep its test cases");
    const cases = await md(app, w, w.bob, "GET", "/subagents/helper/cases");
    expect(cases.statusCode).toBe(403);
    expect(cases.body).toContain("Only the admins of General manage @helper");
    expect(await casesOf(agent.id)).toEqual([]);
  });
});
