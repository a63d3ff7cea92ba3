// Every run woken in a thread ends there with something its waker can read: the reply, or a
// notice in the run-endings words (nothing to add, a page it could not open, a reply waiting
// for approval) — never its final message, which only its owner may read — and the waker is
// told in the app when it did not answer.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Script } from "../src/dev/fake-llm.ts";
import { notifyWakerOfRun } from "../src/services/agents/triggers/unanswered.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, makeWorld, md, testPrisma, waitFor } from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("thread-answers");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;
const SECRET = "Alice's salary review is on Friday";

/** Bob asks @scout (alice's) in a comment on alice's note; `script` is the model's, given the note's path. */
async function bobAsks(script: (notePath: string) => Script, config: Record<string, unknown> = {}) {
  const w = await makeWorld();
  const scout = await makeAgent(w, w.alice, "scout", config);
  const note = await act(w, w.alice, "/studios/general", "create_note", {
    title: "Launch",
    text: "Plan it.",
  });
  env.llm.setScript(script(note.location));
  await act(w, w.bob, note.location, "add_comment", { text: "@scout can you check this?" });
  return { w, scout, notePath: note.location as string };
}

/** The model opens the note and comments there, then finishes with a message only its owner reads. */
const comment = (notePath: string, text: string): Script => [
  tool("navigate", { path: notePath }),
  tool("execute_action", { action: "add_comment", params: { text } }),
  tool("finish", { message: SECRET }),
];

const toldBob = (w: Awaited<ReturnType<typeof makeWorld>>, path: string) =>
  waitFor(() => db().notification.findFirst({ where: { userId: w.bob.id, path, kind: "agent" } }), 10_000);

describe("a mention that gets no reply", () => {
  it("finished with a message only its owner reads: bob sees a notice and is told, never the text", async () => {
    const { w, scout, notePath } = await bobAsks(() => [tool("finish", { message: SECRET })]);
    const run = await waitForRun(scout.id);
    expect(run.status).toBe("completed");
    expect(run.finalMessage).toBe(SECRET);
    const bob = (await md(app, w, w.bob, "GET", notePath)).body;
    expect(bob).toContain("@scout looked and had nothing to add");
    expect(bob).not.toContain("is working on this");
    expect(bob).not.toContain(SECRET);
    const told = await toldBob(w, notePath);
    expect(told.excerpt).toBe("did not answer your mention: it looked and had nothing to add");
    expect(told.excerpt).not.toContain(SECRET);
    const page = (await md(app, w, w.bob, "GET", "/notifications")).body;
    expect(page).toContain("did not answer your mention: it looked and had nothing to add");
    expect(page).not.toContain(SECRET);
    // Its owner reads the run; the thread links it for her.
    const alice = (await md(app, w, w.alice, "GET", notePath)).body;
    expect(alice).toContain(
      `@scout looked and had nothing to add — [see its run](/subagents/scout/runs/${run.id})`,
    );
  });

  it("could not open a page: says so", async () => {
    const { w, scout, notePath } = await bobAsks(() => [
      tool("navigate", { path: "/studios/nowhere-at-all" }),
      tool("finish", { message: SECRET }),
    ]);
    expect((await waitForRun(scout.id)).status).toBe("completed");
    expect((await md(app, w, w.bob, "GET", notePath)).body).toContain("@scout could not open that page");
    expect((await toldBob(w, notePath)).excerpt).toBe(
      "did not answer your mention: it could not open that page",
    );
  });

  it("its reply waits for its owner's approval: says so to bob, without the reply", async () => {
    const REPLY = "Here is what I found in the private studio";
    const { w, scout, notePath } = await bobAsks((notePath) => comment(notePath, REPLY), {
      requires_approval: ["add_comment"],
    });
    // Its owner's default lets a run carry on while its action waits: it ends with the reply unposted.
    expect((await waitForRun(scout.id)).status).toBe("completed");
    const bob = (await md(app, w, w.bob, "GET", notePath)).body;
    // Said once, by the reply's own review notice: its run's line would say it twice.
    expect(bob).toContain("**@scout's reply is waiting for approval** (`add_comment`) by its owner.");
    expect(bob).not.toContain("@scout's reply is waiting for its owner's approval");
    expect(bob).not.toContain(REPLY);
    expect((await toldBob(w, notePath)).excerpt).toBe(
      "did not answer your mention: its reply is waiting for its owner's approval",
    );
  });

  it("a reply in the thread is the answer: no notice, and nobody told it did not answer", async () => {
    const { w, scout, notePath } = await bobAsks((notePath) => comment(notePath, "@bob looks fine to me"));
    const run = await waitForRun(scout.id);
    expect(run.status).toBe("completed");
    const bob = (await md(app, w, w.bob, "GET", notePath)).body;
    expect(bob).toContain("looks fine to me");
    expect(bob).not.toContain("nothing to add");
    // The reply mentions its waker: that reaches bob (quoted handles of an agent's reach only him).
    const mention = await waitFor(
      () => db().notification.findFirst({ where: { userId: w.bob.id, actorId: scout.id, kind: "mention" } }),
      10_000,
    );
    expect(mention.path).toBe(notePath);
    // And its end tells him nothing more: asked directly, the notifier has nothing to say.
    const ended = await db().event.findFirstOrThrow({ where: { subjectId: run.id, type: "run.completed" } });
    expect(await notifyWakerOfRun(db(), ended)).toBe(0);
  });
});
