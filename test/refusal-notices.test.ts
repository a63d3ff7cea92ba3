// A mention an agent will not answer is not met with silence: the person who mentioned it and
// the agent's owner each get one notice saying why, and mentioning it again while that notice
// is unread adds no more. Real worker (the events queue), real Postgres.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { processed } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents } from "./helpers/agents.ts";
import { act, buildTestApp, login, makeWorld, testPrisma } from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("refusals");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;

describe("a mention the agent will not answer", () => {
  it("tells the mentioner and the owner once why, at its cost limit; a second mention adds nothing", async () => {
    const w = await makeWorld("rf");
    const scout = await makeAgent(w, w.alice);
    await db().user.update({
      where: { id: scout.id },
      data: { pausedAt: new Date(), pausedKind: "cost_limit", pausedReason: "monthly cost limit reached" },
    });
    const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Plan", text: "Draft." });
    const mention = async (text: string) => {
      await act(w, w.bob, note.location, "add_comment", { text });
      const c = await db().comment.findFirstOrThrow({ where: { authorId: w.bob.id, text } });
      return processed(env, c.id);
    };
    await mention("@scout what do you think?");
    const skipped = await db().subagentTaskRun.findFirstOrThrow({ where: { agentId: scout.id } });
    expect(skipped).toMatchObject({ status: "skipped", stopReason: "paused" });
    const notices = async () =>
      (await db().notification.findMany({ where: { actorId: scout.id }, orderBy: { userId: "asc" } })).map(
        (n) => [
          n.userId === w.bob.id ? "bob" : n.userId === w.alice.id ? "alice" : n.userId,
          n.path,
          n.excerpt,
        ],
      );
    const expected = [
      [
        "alice",
        `/subagents/scout/runs/${skipped.id}`,
        "did not answer a mention: it is paused at its monthly cost limit. Its owner can raise the limit on its usage page, then retry.",
      ],
      [
        "bob",
        `/subagents/scout/runs/${skipped.id}`,
        "did not answer your mention: it is paused at its monthly cost limit. Its owner can raise the limit on its usage page, then retry.",
      ],
    ];
    expect((await notices()).sort()).toEqual(expected.sort());
    // Bob sees it, in words, with a link to the skipped run, which he may read (his own
    // mention, and why): not to the thread, which explains nothing.
    const bob = await login(app, w, w.bob);
    const page = (await bob.get("/notifications")).body;
    expect(page).toContain("did not answer your mention: it is paused at its monthly cost limit.");
    const open = /<a href="(\/notifications\/[a-z0-9]+\/open)">See why<\/a>/.exec(page)?.[1];
    expect(open).toBeDefined();
    const why = await bob.get(`/subagents/scout/runs/${skipped.id}`);
    expect(why.statusCode).toBe(200);
    expect(why.body).toContain("Why it did not run");
    expect(why.body).toContain("monthly cost limit reached");
    expect(why.body).not.toContain('data-action="retry_run"');
    // Only that run: the agent's other pages stay closed to him.
    expect((await bob.get("/subagents/scout/runs")).statusCode).toBe(404);

    await mention("@scout hello again?");
    expect(await db().subagentTaskRun.count({ where: { agentId: scout.id, status: "skipped" } })).toBe(2);
    expect((await notices()).sort()).toEqual(expected.sort());
    // Its link opens it (read from then on) and lands on the run.
    const opened = await bob.get(open!);
    expect([opened.statusCode, opened.headers.location]).toEqual([
      303,
      `/subagents/scout/runs/${skipped.id}`,
    ]);
  }, 30_000);
});
