// An ordinary demo day asks for no disclosure decision (issue 42: "no new approvals in the
// demo"): the demo's own seed and scripted model, real workers, the tour's steps (a note that
// mentions @scout, bob's question on the note scout watches, scout's scheduled summary run by
// hand, bob asking @scribe for a note). Every run completes; the one approval is the one the
// demo asks for on purpose (@scribe's notes wait for an admin), and nothing is held because of
// what it would disclose.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_MODEL, demoScript } from "../src/dev/demo-script.ts";
import { seedDemo } from "../src/dev/demo-seed.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { type AgentEnv, startAgents } from "./helpers/agents.ts";
import { buildTestApp, md, type Person, testPrisma, type World, waitFor } from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("demo-unheld", { LLM_DEFAULT_MODEL: DEMO_MODEL }, demoScript);
});
afterAll(async () => {
  await env.close();
  await app.close();
});

/** The demo workspace as the test helpers name a world: its people with tokens of their own. */
async function demoWorld(): Promise<World> {
  await seedDemo(testPrisma());
  const db = testPrisma();
  const tenant = await db.tenant.findUniqueOrThrow({ where: { subdomain: "demo" } });
  const person = async (handle: string): Promise<Person> => {
    const user = await db.user.findFirstOrThrow({ where: { tenantId: tenant.id, handle } });
    const { token } = await createApiToken(db, tenant.id, user.id, "demo-unheld", { scope: "manage" });
    return { id: user.id, handle, name: user.name, email: user.email ?? "", token };
  };
  const studio = await db.studio.findFirstOrThrow({ where: { tenantId: tenant.id, handle: "general" } });
  const [alice, bob] = [await person("alice"), await person("bob")];
  return { tenant, host: "demo.localhost", alice, bob, carol: bob, studio };
}

const agentId = async (w: World, handle: string) =>
  (await testPrisma().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle } })).id;

describe("the demo's ordinary day", () => {
  it("runs every step of the tour unheld: no approval for a disclosure, only scribe's own", async () => {
    const w = await demoWorld();
    const db = testPrisma();
    const [scout, scribe] = [await agentId(w, "scout"), await agentId(w, "scribe")];
    const venue = await db.note.findFirstOrThrow({
      where: { tenantId: w.tenant.id, title: "Offsite venue shortlist" },
    });
    const post = (who: Person, url: string, body: Record<string, unknown>) =>
      md(app, w, who, "POST", url, body).then((res) => {
        expect(res.statusCode, `${url}: ${res.body}`).toBeLessThan(300);
      });
    await post(w.alice, "/studios/general/actions/create_note", {
      title: "Lunch on Friday",
      text: "@scout where should we go for lunch on Friday?",
    });
    await post(w.bob, `/studios/general/notes/${venue.id}/actions/add_comment`, {
      text: "@scout which of these is closest to the station?",
    });
    // A plain comment there wakes scout's subscription to the note (the demo's 30 s window).
    await post(w.alice, `/studios/general/notes/${venue.id}/actions/add_comment`, {
      text: "I would vote for the lake house.",
    });
    const schedule = await db.agentSchedule.findFirstOrThrow({ where: { agentId: scout } });
    await post(w.alice, "/subagents/scout/run/actions/run_task", { task: schedule.task });
    // In a thread of its own, so scout, reading the venue's thread, is not asked for a note too.
    await post(w.bob, "/studios/general/actions/create_note", {
      title: "Offsite choice",
      text: "We chose the lake house. @scribe please write a note of this",
    });
    // Each step's run, the subscription's included.
    const runs = await waitFor(async () => {
      const all = await db.subagentTaskRun.findMany({ where: { tenantId: w.tenant.id } });
      const ended = all.every((run) => !["queued", "running"].includes(run.status));
      const kinds = new Set(
        all.map((run) => `${run.agentId === scout ? "scout" : "scribe"} ${run.triggerKind}`),
      );
      const expected = ["scout mention", "scout manual", "scout subscription", "scribe mention"];
      return ended && expected.every((kind) => kinds.has(kind)) && all;
    }, 90_000);
    expect(runs.map((run) => [run.triggerKind, run.status, run.error])).toEqual(
      runs.map((run) => [run.triggerKind, "completed", null]),
    );
    const held = await db.agentPendingAction.findMany({ where: { tenantId: w.tenant.id } });
    expect(held.filter((row) => row.disclosure !== null)).toEqual([]);
    expect(held.map((row) => [row.agentId, row.actionName, row.status])).toEqual([
      [scribe, "create_note", "pending"],
    ]);
    // Scout did write in the threads (so "nothing held" is not "nothing done").
    const where = { tenantId: w.tenant.id, authorId: scout };
    expect((await db.comment.count({ where })) + (await db.note.count({ where }))).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
