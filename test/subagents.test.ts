// Pages `/subagents`, `/subagents/:handle`, `…/run`, `…/runs`, `…/runs/:run` and their
// actions, in markdown (Bearer token) and HTML (browser session); a subagent's own
// `/whoami` and scratchpad; subagents never log in with a password.
//
// No worker runs here, but other files' runtimes share this database and claim any
// queued run they see. Each agent therefore holds a "blocker": a run with a live lease
// no worker owns. Claims and the sweeper skip an agent with a live lease, so its other
// runs stay exactly as the test left them.
import type { FastifyInstance, LightMyRequestResponse as Res } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { hashPassword } from "../src/services/passwords.ts";
import { type Agent, makeAgent } from "./helpers/agents.ts";
import {
  act,
  actionNames as actions,
  type Browser,
  buildTestApp,
  login,
  makeWorld,
  md,
  PASSWORD,
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

const db = testPrisma();
let app: FastifyInstance;
let w: World;
let aliceB: Browser;
let bobB: Browser;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("sa");
  [aliceB, bobB] = await Promise.all([login(app, w, w.alice), login(app, w, w.bob)]);
});
afterAll(async () => app.close());

const go = (world: World, who: Person, url: string, body?: unknown) =>
  md(app, world, who, body === undefined ? "GET" : "POST", url, body);
/** Markdown as alice: a POST when there is a body. */
const A = (url: string, body?: unknown) => go(w, w.alice, url, body);
/** Asserts the status and that the body contains each text; returns the body. */
function check(res: Res, status: number, ...texts: string[]): string {
  expect(res.statusCode, res.body.slice(0, 400)).toBe(status);
  for (const t of texts) expect(res.body).toContain(t);
  return res.body;
}
/** The `- \`field\`: message` lines of a markdown 400, as a map. */
const issues = (res: Res) => {
  expect(res.statusCode).toBe(400);
  return Object.fromEntries([...res.body.matchAll(/^- `([^`]*)`: (.*)$/gm)].map((m) => [m[1], m[2]]));
};
const user = (id: string) => db.user.findUniqueOrThrow({ where: { id } });
const run = (id: string) => db.subagentTaskRun.findUniqueOrThrow({ where: { id } });
const last = (location: unknown) => String(location).split("/").pop()!;
const runTask = async (handle: string, task: string) =>
  last((await act(w, w.alice, `/subagents/${handle}/run`, "run_task", { task })).location);
const count = (type: string, ids: string[]) => db.event.count({ where: { type, subjectId: { in: ids } } });

async function newRun(world: World, a: Agent, status: "queued" | "running" | "waiting", extra = {}) {
  const id = newId();
  const asked = status === "waiting" && { question: "Which studio?", stopReason: "asked_owner" };
  const data = { id, tenantId: world.tenant.id, agentId: a.id, initiatedById: a.ownerId, status };
  const rest = { triggerKind: "manual", task: `task ${id}`, maxSteps: 10, timeoutSeconds: 300 };
  await db.subagentTaskRun.create({ data: { ...data, ...rest, ...asked, ...extra } });
  return id;
}

/** An agent of `owner` (in studio general) holding a blocker run: see the header. */
async function agent(world: World, owner: Person, handle: string) {
  const a = await makeAgent(world, owner, handle);
  const lease = { leaseOwner: "blocker", leaseExpiresAt: new Date(Date.now() + 86_400_000), attempts: 1 };
  return { ...a, blocker: await newRun(world, a, "running", lease) };
}

describe("/subagents: create_subagent", () => {
  const CS = "/subagents/actions/create_subagent";

  it("creates a subagent I own (201 + Location, 303 in HTML), without a password", async () => {
    const cfg = { identity_prompt: "Be kind.", model: "gpt-5-mini", max_steps: 7 };
    const res = await A(CS, { name: "Helper", handle: " Helper-1 ", ...cfg });
    check(res, 201, "# Helper\n", "**Created @helper-1**");
    expect(res.headers.location).toBe("/subagents/helper-1");
    const a = await db.user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "helper-1" } });
    expect(a).toMatchObject({ kind: "subagent", parentId: w.alice.id, passwordHash: null, email: null });
    expect(a.agentConfig).toEqual(cfg);
    expect(await count("subagent.created", [a.id])).toBe(1);
    const mine = check(await A("/subagents"), 200, "- [Helper](/subagents/helper-1) (`@helper-1`)");
    expect(actions(mine)).toEqual(["create_subagent"]);
    expect(check(await bobB.get("/subagents"), 200, "no subagents yet")).not.toContain("helper-1");
    const form = { name: "Form", handle: "form-bot", identity_prompt: "", model: "", max_steps: "" };
    const html = await aliceB.post(CS, form);
    check(html, 303);
    expect(html.headers.location).toBe("/subagents/form-bot");
    check(await aliceB.get("/subagents/form-bot"), 200, "Created @form-bot");
    const f = await db.user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "form-bot" } });
    expect(f.agentConfig).toEqual({ identity_prompt: "", max_steps: 30 });
  });

  it("rejects bad input naming every field (400) in both formats, and writes nothing", async () => {
    const before = await db.user.count({ where: { tenantId: w.tenant.id } });
    const long = "x".repeat(10_001);
    const bad = { name: " ", handle: "A", identity_prompt: long, model: "a b", max_steps: 0, x: 1 };
    const handle = "2–32 characters: letters, digits, - and _, starting with a letter or digit";
    const x = "unknown parameter (expected: name, handle, studio, identity_prompt, model, max_steps)";
    const why = { name: "must not be empty", identity_prompt: "at most 10000 characters", handle, x };
    const model = "letters, digits and . / : @ - _ only";
    expect(issues(await A(CS, bad))).toEqual({ ...why, model, max_steps: "at least 1" });
    expect(issues(await A(CS, {}))).toEqual({ name: "required", handle: "required" });
    const more = issues(await A(CS, { name: "n".repeat(81), handle: "actions", max_steps: 1.5 }));
    expect(more).toMatchObject({ name: "at most 80 characters", handle: "this handle is reserved" });
    expect(more).toMatchObject({ max_steps: "a whole number" });
    const tooMany = issues(await A(CS, { name: "n", handle: "nn", max_steps: 201 }));
    expect(tooMany).toEqual({ max_steps: "at most 200" });
    const html = await aliceB.post(CS, { name: "<b>Bot</b>", handle: "b", max_steps: "x" });
    check(html, 400);
    expect(issuesOf(html.body).handle).toMatch(/^2–32 characters/);
    expect(issuesOf(html.body)).toHaveProperty("max_steps");
    expect(html.body).toContain('value="&lt;b&gt;Bot&lt;/b&gt;"');
    expect(await db.user.count({ where: { tenantId: w.tenant.id } })).toBe(before);
  });

  it("answers 409 for a handle taken by an agent or by a person, in both formats", async () => {
    check(await A(CS, { name: "Dup", handle: "dup-bot" }), 201);
    check(await go(w, w.bob, CS, { name: "Dup 2", handle: "DUP-BOT" }), 409, "The handle @dup-bot is taken");
    check(await aliceB.post(CS, { name: "Bob 2", handle: "bob" }), 409, "The handle @bob is taken");
    const names = { in: ["Dup 2", "Bob 2"] };
    expect(await db.user.count({ where: { tenantId: w.tenant.id, name: names } })).toBe(0);
  });

  // BUG (src/services/actions/subagents.ts, createSubagent): the handle is checked, then
  // inserted; a concurrent insert of the same handle makes the insert throw P2002 → 500.
  it("answers 409, not 500, when the same handle is inserted concurrently", async () => {
    let release: (() => void) | undefined;
    const row = { id: newId(), tenantId: w.tenant.id, handle: "racer", name: "R", kind: "person" as const };
    const held = db.$transaction(
      async (tx) => {
        await tx.user.create({ data: row });
        await new Promise<void>((r) => (release = r));
      },
      { timeout: 20_000 },
    );
    const pending = go(w, w.carol, CS, { name: "Racer bot", handle: "racer" });
    // Commit the row once the action's own insert waits behind it.
    let waited = false;
    for (let i = 0; i < 200 && !waited; i++) {
      const [blocked] = await db.$queryRaw<{ n: number }[]>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()
        AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO "public"."users"%'`;
      waited = blocked!.n > 0;
      if (!waited) await new Promise((r) => setTimeout(r, 25));
    }
    // The row may be in before this process has run past its insert (a loaded machine).
    while (!release) await new Promise((r) => setTimeout(r, 5));
    release();
    expect(waited).toBe(true);
    await held;
    check(await pending, 409, "The handle @racer is taken");
  });

  it("is refused to a subagent (403 with the reason) and to a bad token (401)", async () => {
    const bot = await agent(w, w.alice, "maker");
    const reason =
      "You cannot use `create_subagent` here: capability `create_subagent` is never available to agents";
    check(await go(w, bot, CS, { name: "Child", handle: "child-bot" }), 403, reason);
    expect(actions(check(await go(w, bot, "/subagents"), 200))).toEqual([]);
    const headers = { host: w.host, accept: "text/markdown", authorization: "Bearer nope" };
    check(await app.inject({ method: "POST", url: CS, headers, payload: { name: "C", handle: "cc" } }), 401);
    const handles = { in: ["child-bot", "cc"] };
    expect(await db.user.count({ where: { tenantId: w.tenant.id, handle: handles } })).toBe(0);
  });
});

describe("/subagents/:handle", () => {
  it("shows the configuration and updates it (update_subagent) in both formats", async () => {
    const a = await agent(w, w.alice, "editor");
    const page = check(await A("/subagents/editor"), 200, "| max steps per run | 10 |");
    expect(page).toContain("> You help the team.");
    expect(page).toContain("- [General](/studios/general) (`general`)");
    expect(actions(page)).toEqual(expect.arrayContaining(["update_subagent", "archive_subagent"]));
    const U = "/subagents/editor/actions/update_subagent";
    const cfg = { identity_prompt: "Edit things.", model: "gpt-4o", max_steps: 5, timeout_seconds: 60 };
    check(await A(U, { name: "Ed", ...cfg }), 200, "**Saved**", "| model | `gpt-4o` |", "# Ed\n");
    expect((await user(a.id)).agentConfig).toMatchObject(cfg);
    check(await A(U, { model: "" }), 200, "| model | workspace default |");
    expect((await user(a.id)).agentConfig).not.toHaveProperty("model");
    // The browser's form starts from the current values; a field emptied there clears it.
    const form = (await aliceB.get("/subagents/editor")).body;
    expect(form).toMatch(/name="identity_prompt"[^>]*>Edit things\.<\/textarea>/);
    expect(form).toMatch(/name="max_steps" value="5"/);
    await A(U, { model: "gpt-4o-mini" });
    // The model is a select of the workspace's catalogue, grouped by where each comes from, priced.
    const select = (await aliceB.get("/subagents/editor")).body;
    expect(select).toMatch(/<select id="[^"]*-model" name="model">/);
    expect(select).toContain('<optgroup label="Price list · OpenAI">');
    expect(select).toMatch(
      /<option value="gpt-4o-mini" selected>gpt-4o-mini — \$0\.15 in \/ \$0\.60 out per 1M tokens<\/option>/,
    );
    const html = await aliceB.post(U, { name: "Ed 2", identity_prompt: "", model: "", max_steps: "9" });
    check(html, 303);
    expect(html.headers.location).toBe("/subagents/editor");
    const after = await user(a.id);
    expect(after.name).toBe("Ed 2");
    expect(after.agentConfig).toMatchObject({ identity_prompt: "", max_steps: 9 });
    expect(after.agentConfig).not.toHaveProperty("model");
  });

  it("rejects bad update_subagent input naming each field, in both formats", async () => {
    const a = await agent(w, w.alice, "bad-ed");
    const U = "/subagents/bad-ed/actions/update_subagent";
    const before = await user(a.id);
    const long = "x".repeat(10_001);
    const body = { identity_prompt: long, model: "a b", max_steps: 201, timeout_seconds: 5, y: 1 };
    const bad = issues(await A(U, body));
    expect(Object.keys(bad).sort()).toEqual(Object.keys(body).sort());
    expect(bad).toMatchObject({ max_steps: "at most 200", timeout_seconds: "at least 10" });
    expect(issues(await A(U, { name: "" }))).toEqual({ name: "must not be empty" });
    check(await A(U, {}), 400, "- nothing to change");
    const html = await aliceB.post(U, { timeout_seconds: "3601" });
    check(html, 400);
    expect(issuesOf(html.body).timeout_seconds).toBe("at most 3600");
    expect(await user(a.id)).toEqual(before);
  });

  it("add_to_studio: only studios the owner is in (400); twice is 409; both formats", async () => {
    const a = await agent(w, w.alice, "joiner");
    await db.studioMember.deleteMany({ where: { userId: a.id } });
    await act(w, w.bob, "/studios", "create_studio", { name: "Bobs", handle: "bobs" });
    await act(w, w.alice, "/studios", "create_studio", { name: "Alices", handle: "alices" });
    const ADD = "/subagents/joiner/actions/add_to_studio";
    check(await A(ADD, { studio: "general" }), 200, "**Added to General**");
    expect(await count("studio.joined", [a.id])).toBe(1);
    check(await A(ADD, { studio: "general" }), 409, "@joiner is already in General");
    const notMember = { studio: "you are not a member of a studio with this handle" };
    for (const studio of ["bobs", "nowhere"]) expect(issues(await A(ADD, { studio }))).toEqual(notMember);
    expect(issues(await A(ADD, {}))).toEqual({ studio: "required" });
    check(await aliceB.post(ADD, { studio: "alices" }), 303);
    check(await aliceB.post(ADD, { studio: "alices" }), 409, "@joiner is already in Alices");
    const studios = await db.studioMember.findMany({ where: { userId: a.id }, include: { studio: true } });
    expect(studios.map((m) => m.studio.handle).sort()).toEqual(["alices", "general"]);
  });

  it("remove_from_studio: removes, and is 404 when not in it, in both formats", async () => {
    const a = await agent(w, w.alice, "leaver");
    const R = "/subagents/leaver/actions/remove_from_studio";
    check(await A(R, { studio: "general" }), 200, "**Removed from general**", "Not in any studio yet");
    check(await A(R, { studio: "general" }), 404, "@leaver is not in a studio `general`");
    await act(w, w.alice, "/subagents/leaver", "add_to_studio", { studio: "general" });
    check(await aliceB.post(R, { studio: "general" }), 303);
    check(await aliceB.post(R, { studio: "general" }), 404, "@leaver is not in a studio `general`");
    expect(await db.studioMember.count({ where: { userId: a.id } })).toBe(0);
  });

  // BUG (src/services/pages/subagents.ts, subagentPage.actions): pause_subagent and
  // resume_subagent are not listed on /subagents/:handle, so both answer 404.
  it("pause_subagent and resume_subagent work in both formats", async () => {
    const a = await agent(w, w.alice, "pauser");
    const P = "/subagents/pauser/actions";
    const paused = check(await A(`${P}/pause_subagent`, { reason: "holiday" }), 200, "**Paused**");
    expect(paused).toContain("(holiday)");
    expect(actions(paused)).toContain("resume_subagent");
    expect(await user(a.id)).toMatchObject({ pausedReason: "holiday" });
    check(await A(`${P}/pause_subagent`, {}), 403, "already paused");
    check(await aliceB.post(`${P}/resume_subagent`, {}), 303);
    expect(await user(a.id)).toMatchObject({ pausedAt: null, pausedReason: null });
    check(await A(`${P}/resume_subagent`, {}), 403, "not paused");
    check(await aliceB.post(`${P}/pause_subagent`, { reason: "" }), 303);
    expect(await user(a.id)).toMatchObject({ pausedReason: "paused by its owner" });
  });

  it("archive_subagent cancels queued and waiting runs; unarchive restores; both formats", async () => {
    const a = await agent(w, w.alice, "archie");
    const [queued, waiting] = [await runTask("archie", "Do it"), await newRun(w, a, "waiting")];
    const P = "/subagents/archie/actions";
    const archived = check(await A(`${P}/archive_subagent`, {}), 200, "**Archived**");
    expect(actions(archived)).toContain("unarchive_subagent");
    expect(actions(archived)).not.toContain("archive_subagent");
    expect((await user(a.id)).archivedAt).not.toBeNull();
    const cancelled = { status: "cancelled", stopReason: "archived" };
    for (const id of [queued, waiting]) expect(await run(id)).toMatchObject(cancelled);
    check(await aliceB.post(`${P}/archive_subagent`, {}), 403, "already archived");
    check(await aliceB.post(`${P}/unarchive_subagent`, {}), 303);
    expect((await user(a.id)).archivedAt).toBeNull();
    const again = "You cannot use `unarchive_subagent` here: not archived";
    check(await A(`${P}/unarchive_subagent`, {}), 403, again);
    check(await aliceB.post(`${P}/archive_subagent`, {}), 303);
    check(await A(`${P}/unarchive_subagent`, {}), 200, "**Restored**");
  });
});

describe("/subagents/:handle/run: run_task", () => {
  it("queues a run (201 + Location, run.queued event) in both formats", async () => {
    const a = await agent(w, w.alice, "runner");
    const page = check(await A("/subagents/runner/run"), 200, "# Run a task with Agent runner");
    expect(actions(page)).toEqual(["run_task"]);
    const T = "/subagents/runner/run/actions/run_task";
    const res = await A(T, { task: " Summarize the week ", max_steps: 3 });
    check(res, 201, "**You gave @runner this task.**", "Status: **queued**", "> Summarize the week");
    expect(res.headers.location).toMatch(/^\/subagents\/runner\/runs\/\w+$/);
    const r = await run(last(res.headers.location));
    const want = { agentId: a.id, initiatedById: w.alice.id, triggerKind: "manual", status: "queued" };
    expect(r).toMatchObject({ ...want, task: "Summarize the week", maxSteps: 3 });
    expect(await count("run.queued", [r.id])).toBe(1);
    const html = await aliceB.post(T, { task: "From the form", max_steps: "" });
    check(html, 303);
    expect(await run(last(html.headers.location))).toMatchObject({ task: "From the form", maxSteps: 10 });
  });

  it("rejects bad input naming each field, in both formats", async () => {
    const a = await agent(w, w.alice, "bad-run");
    const T = "/subagents/bad-run/run/actions/run_task";
    const unknown = "unknown parameter (expected: task, max_steps, dry)";
    const bad = issues(await A(T, { task: " ", max_steps: 0, z: true }));
    expect(bad).toEqual({ z: unknown, task: "must not be empty", max_steps: "at least 1" });
    expect(issues(await A(T, { max_steps: 201 }))).toEqual({ task: "required", max_steps: "at most 200" });
    const html = await aliceB.post(T, { task: "t".repeat(10_001) });
    check(html, 400);
    expect(issuesOf(html.body).task).toBe("at most 10000 characters");
    expect(await db.subagentTaskRun.count({ where: { agentId: a.id } })).toBe(1);
  });

  it("is refused (403 with the reason) for an archived or a paused agent", async () => {
    const a = await agent(w, w.alice, "sleeper");
    const T = "/subagents/sleeper/run/actions/run_task";
    await act(w, w.alice, "/subagents/sleeper", "archive_subagent", {});
    check(await A(T, { task: "x" }), 403, "You cannot use `run_task` here: the subagent is archived");
    expect(actions(check(await A("/subagents/sleeper/run"), 200))).toEqual([]);
    await act(w, w.alice, "/subagents/sleeper", "unarchive_subagent", {});
    await db.user.update({ where: { id: a.id }, data: { pausedAt: new Date(), pausedReason: "test" } });
    check(await aliceB.post(T, { task: "x" }), 403, "the subagent is paused; resume it first");
    check(await A(T, { task: "x" }), 403, "the subagent is paused; resume it first");
    expect(await db.subagentTaskRun.count({ where: { agentId: a.id } })).toBe(1);
  });
});

describe("/subagents/:handle/runs and /subagents/:handle/runs/:run", () => {
  it("paginates the runs, newest first (?page=2), in both formats", async () => {
    const a = await agent(w, w.alice, "busy");
    const ids = Array.from({ length: 24 }, () => newId());
    const t0 = Date.now() - 3_600_000;
    const row = { tenantId: w.tenant.id, agentId: a.id, status: "completed" as const, triggerKind: "manual" };
    const data = ids.map((id) => ({ ...row, id, task: "old", maxSteps: 10, timeoutSeconds: 300 }));
    const dated = data.map((r, i) => ({ ...r, createdAt: new Date(t0 + i * 1e3) }));
    await db.subagentTaskRun.createMany({ data: dated });
    const listed = (body: string) => [...body.matchAll(/\/subagents\/busy\/runs\/(\w+)\)/g)].map((m) => m[1]);
    const one = check(await A("/subagents/busy/runs"), 200, "Page 1 of 2 (25 in all) · [Next]");
    expect(listed(one)).toEqual([a.blocker, ...ids.slice(5).reverse()]);
    const two = check(await A("/subagents/busy/runs?page=2"), 200, "Page 2 of 2 (25 in all) · [Previous]");
    expect(listed(two)).toEqual(ids.slice(0, 5).reverse());
    const html = check(await aliceB.get("/subagents/busy/runs?page=2"), 200, `runs/${ids[0]}"`);
    expect(html).not.toContain(`runs/${ids[5]}"`);
  });

  it("stop_run cancels a queued run, asks a running one to stop, and refuses an ended one", async () => {
    const a = await agent(w, w.alice, "stopper");
    const S = (id: string) => `/subagents/stopper/runs/${id}/actions/stop_run`;
    const [q1, q2] = [await runTask("stopper", "one"), await runTask("stopper", "two")];
    expect(actions(check(await A(`/subagents/stopper/runs/${q1}`), 200, "> one"))).toEqual([
      "pause_run",
      "stop_run",
    ]);
    check(await A(S(q1), {}), 200, "**Run cancelled**");
    expect(await run(q1)).toMatchObject({ status: "cancelled", stopReason: "stopped_by_owner" });
    check(await aliceB.post(S(q2), {}), 303);
    expect((await run(q2)).status).toBe("cancelled");
    check(await A(S(q1), {}), 403, "You cannot use `stop_run` here: the run is not active");
    check(await aliceB.post(S(q2), {}), 403, "the run is not active");
    check(await A(S(a.blocker), {}), 200, "**You asked it to stop after the step it was on.**");
    expect(await run(a.blocker)).toMatchObject({ status: "running", stopRequestedAt: expect.any(Date) });
  });

  it("answer_question is 403 unless the run waits; an answer requeues it, in both formats", async () => {
    const a = await agent(w, w.alice, "asker");
    const AQ = (id: string) => `/subagents/asker/runs/${id}/actions/answer_question`;
    const reason = "You cannot use `answer_question` here: the run is not waiting for an answer";
    check(await A(AQ(await newRun(w, a, "queued")), { answer: "yes" }), 403, reason);
    check(await aliceB.post(AQ(a.blocker), { answer: "yes" }), 403, "the run is not waiting for an answer");
    const waiting = await newRun(w, a, "waiting");
    const page = check(await A(`/subagents/asker/runs/${waiting}`), 200, "## Waiting for your answer");
    expect(page).toContain("> Which studio?");
    expect(actions(page)).toEqual(["answer_question", "stop_run"]);
    expect(issues(await A(AQ(waiting), { answer: "" }))).toEqual({ answer: "must not be empty" });
    check(await A(AQ(waiting), { answer: "General" }), 200, "**Answer sent; the run resumes**");
    expect(await run(waiting)).toMatchObject({ status: "queued", answer: "General", stepsCount: 1 });
    const steps = await db.subagentTaskRunStep.findMany({ where: { runId: waiting } });
    expect(steps).toEqual([expect.objectContaining({ number: 1, type: "answer" })]);
    const other = await newRun(w, a, "waiting");
    check(await aliceB.post(AQ(other), { answer: "Ops" }), 303);
    expect(await run(other)).toMatchObject({ status: "queued", answer: "Ops" });
    expect(await count("run.queued", [waiting, other])).toBe(2);
  });
});

describe("ownership", () => {
  it("is a 404 on every page and action for anyone but the owner, in both formats", async () => {
    const a = await agent(w, w.alice, "private");
    const waiting = await newRun(w, a, "waiting");
    const other = await makeWorld("sx");
    const theirs = await agent(other, other.alice, "theirs");
    const [base, runUrl] = ["/subagents/private", `/subagents/private/runs/${waiting}`];
    const pages = [base, `${base}/run`, `${base}/runs`, runUrl, `${base}/usage`];
    const posts: (readonly [string, string, Record<string, string>])[] = [
      [base, "update_subagent", { name: "Mine" }],
      [base, "set_agent_api_key", { api_key: "shared" }],
      [`${base}/usage`, "set_cost_limit", { monthly_limit_usd: "1" }],
      [base, "add_to_studio", { studio: "general" }],
      [base, "remove_from_studio", { studio: "general" }],
      [base, "pause_subagent", { reason: "x" }],
      ...["resume_subagent", "archive_subagent", "unarchive_subagent"].map((n) => [base, n, {}] as const),
      [`${base}/run`, "run_task", { task: "steal" }],
      [runUrl, "stop_run", {}],
      [runUrl, "answer_question", { answer: "steal" }],
    ];
    const snapshot = async () =>
      JSON.stringify(
        [
          await user(a.id),
          await db.subagentTaskRun.findMany({ where: { agentId: a.id }, orderBy: { id: "asc" } }),
          await db.studioMember.findMany({ where: { userId: a.id } }),
        ],
        (_k, v) => (typeof v === "bigint" ? v.toString() : v),
      );
    const before = await snapshot();
    // The owner gets every page: the 404s below are about who asks.
    for (const url of pages) check(await A(url), 200);
    const callers: [string, World, Person, Browser | null][] = [
      ["bob", w, w.bob, bobB],
      ["the agent itself", w, a, null],
      ["another tenant", other, other.alice, await login(app, other, other.alice)],
    ];
    const seen: string[] = [];
    for (const [label, world, who, browser] of callers) {
      for (const url of pages) {
        seen.push(`${label} GET ${url} md ${(await go(world, who, url)).statusCode}`);
        if (browser) seen.push(`${label} GET ${url} html ${(await browser.get(url)).statusCode}`);
      }
      for (const [page, action, body] of posts) {
        const url = `${page}/actions/${action}`;
        seen.push(`${label} GET ${url} md ${(await go(world, who, url)).statusCode}`);
        seen.push(`${label} POST ${url} md ${(await go(world, who, url, body)).statusCode}`);
        if (browser) seen.push(`${label} POST ${url} html ${(await browser.post(url, body)).statusCode}`);
      }
    }
    // The other tenant's alice asks for A's run under her own agent `theirs`.
    const foreign = `/subagents/theirs/runs/${waiting}`;
    seen.push(`theirs GET ${(await go(other, other.alice, foreign)).statusCode}`);
    const stop = await go(other, other.alice, `${foreign}/actions/stop_run`, {});
    seen.push(`theirs stop_run ${stop.statusCode}`);
    expect(seen.filter((s) => !s.endsWith(" 404"))).toEqual([]);
    expect(seen).toHaveLength(2 * (5 * 2 + 12 * 3) + (5 + 12 * 2) + 2);
    // A token is valid on its own tenant's host only.
    const headers = { host: w.host, accept: "text/markdown", authorization: `Bearer ${other.alice.token}` };
    check(await app.inject({ url: base, headers }), 401);
    expect(await snapshot()).toBe(before);
    expect((await user(theirs.id)).name).toBe("Agent theirs");
  });
});

describe("a subagent's own /whoami and its scratchpad", () => {
  const S = "/whoami/actions/update_scratchpad";

  it("shows its identity and scratchpad, and update_scratchpad works for it", async () => {
    const a = await agent(w, w.alice, "diary");
    const page = check(await go(w, a, "/whoami"), 200, "You are Agent diary ([@diary](/u/diary))");
    expect(page).toContain("a subagent in the");
    expect(page).toContain("Your owner is Alice Adams ([@alice](/u/alice)).");
    expect(page).toContain("## Your identity\n\n> You help the team.");
    expect(page).toContain("(update them with `update_scratchpad`):\n\n_Empty._");
    expect(actions(page)).toEqual(["update_scratchpad"]);
    const saved = await go(w, a, S, { text: "  Bob likes tea.\nAsk Carol first.  " });
    check(saved, 200, "**Scratchpad saved**", "> Bob likes tea.\n> Ask Carol first.");
    expect((await user(a.id)).scratchpad).toBe("Bob likes tea.\nAsk Carol first.");
    const long = issues(await go(w, a, S, { text: "x".repeat(4001) }));
    expect(long).toEqual({ text: "at most 4000 characters" });
    expect((await user(a.id)).scratchpad).toBe("Bob likes tea.\nAsk Carol first.");
  });

  it("is not available to people, in either format", async () => {
    const mine = check(await A("/whoami"), 200, "You are Alice Adams");
    expect(mine).not.toContain("## Your scratchpad");
    expect(actions(mine)).toEqual([]);
    const reason = "You cannot use `update_scratchpad` here: only subagents have a scratchpad";
    check(await A(S, { text: "mine" }), 403, reason);
    check(await aliceB.post(S, { text: "mine" }), 403, "only subagents have a scratchpad");
    expect((await user(w.alice.id)).scratchpad).toBe("");
  });
});

describe("subagents and passwords", () => {
  it("a subagent cannot log in with a password, even with an email and a hash set", async () => {
    const a = await agent(w, w.alice, "no-login");
    const email = `no-login@${w.tenant.subdomain}.test`;
    await db.user.update({ where: { id: a.id }, data: { email } });
    await expect(login(app, w, { ...a, email })).rejects.toThrow("login failed: 401");
    await db.user.update({ where: { id: a.id }, data: { passwordHash: await hashPassword(PASSWORD) } });
    await expect(login(app, w, { ...a, email })).rejects.toThrow("login failed: 401");
    expect(await db.session.count({ where: { userId: a.id } })).toBe(0);
  });
});
