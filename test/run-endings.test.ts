// A run woken in a thread that does not finish says so where its "working on this" line was:
// once, in words the thread's readers may read (never its error), with a link to the run
// for its managers only (stopped, failed or timed out); the agent's managers hear of a
// failure in the app.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, makeWorld, md, testPrisma, waitFor } from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("run-endings", { LLM_MAX_RETRIES: "0" });
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;

/** Bob asks @scout (alice's) for help in a comment on alice's note: the run is woken in its thread. */
async function wokenInThread(config: Record<string, unknown> = {}) {
  const w = await makeWorld();
  const scout = await makeAgent(w, w.alice, "scout", config);
  const note = await act(w, w.alice, "/studios/general", "create_note", {
    title: "Launch",
    text: "Plan it.",
  });
  await act(w, w.bob, note.location, "add_comment", { text: "@scout can you check this?" });
  const run = await waitFor(() => db().subagentTaskRun.findFirst({ where: { agentId: scout.id } }), 10_000);
  expect(run.threadId).toBeTruthy();
  return { w, scout, notePath: note.location, run };
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

describe("a run that does not finish, in its thread", () => {
  it("stopped by its owner: one notice, for every reader, the run linked for its owner only", async () => {
    env.llm.setScript([{ ...tool("navigate", { path: "/studios/general" }), delayMs: 3000 }]);
    const { w, scout, notePath, run } = await wokenInThread();
    await waitForRun(scout.id, (s) => s === "running");
    const stop = await md(app, w, w.alice, "POST", `/subagents/scout/runs/${run.id}/actions/stop_run`, {});
    expect(stop.statusCode).toBe(200);
    expect((await waitForRun(scout.id)).status).toBe("cancelled");
    const bob = (await md(app, w, w.bob, "GET", notePath)).body;
    expect(count(bob, "@scout stopped: its owner stopped the run")).toBe(1);
    expect(bob).not.toContain("is working on this");
    expect(bob).not.toContain(`/runs/${run.id}`);
    const alice = (await md(app, w, w.alice, "GET", notePath)).body;
    expect(alice).toContain(
      `@scout stopped: its owner stopped the run — [see its run](/subagents/scout/runs/${run.id})`,
    );
  });

  it("stopped by the workspace's kill switch: says so, not just that it was stopped", async () => {
    env.llm.setScript([{ ...tool("navigate", { path: "/studios/general" }), delayMs: 1500 }]);
    const { w, scout, notePath } = await wokenInThread();
    await waitForRun(scout.id, (s) => s === "running");
    const tenant = await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
    await db().tenant.update({
      where: { id: w.tenant.id },
      data: { settings: { ...(tenant.settings as object), agents_enabled: false } },
    });
    expect((await waitForRun(scout.id)).status).toBe("cancelled");
    const bob = (await md(app, w, w.bob, "GET", notePath)).body;
    expect(count(bob, "@scout stopped: agents were switched off in this workspace")).toBe(1);
  });

  it("failed: says why in words, never the provider's error; its owner is told; the next run takes its place", async () => {
    env.llm.setScript([{ status: 400, content: "model gpt-secret-internal not found for org-xyz" }]);
    const { w, scout, notePath, run } = await wokenInThread();
    expect((await waitForRun(scout.id)).status).toBe("failed");
    const bob = (await md(app, w, w.bob, "GET", notePath)).body;
    expect(count(bob, "@scout could not finish: the model was unavailable")).toBe(1);
    expect(bob).not.toContain("gpt-secret-internal");
    const told = await waitFor(
      () =>
        db().notification.findFirst({
          where: { userId: w.alice.id, path: `/subagents/scout/runs/${run.id}` },
        }),
      10_000,
    );
    expect(told.excerpt).toBe("could not finish: the model was unavailable");
    expect(await db().notification.count({ where: { userId: w.bob.id, path: { contains: "/runs/" } } })).toBe(
      0,
    );

    // The next run in the thread replaces the notice.
    env.llm.setScript([tool("finish", { message: "All fine now" })]);
    await act(w, w.bob, notePath, "add_comment", { text: "@scout try again?" });
    await waitFor(
      async () =>
        (await db().subagentTaskRun.count({ where: { agentId: scout.id, status: "completed" } }))
          ? true
          : null,
      10_000,
    );
    expect((await md(app, w, w.bob, "GET", notePath)).body).not.toContain("could not finish");
  });

  it("timed out: one notice saying it ran out of time, for every reader; the run linked for its owner only", async () => {
    // The shortest timeout an agent may have (10 s), and a model slower than that.
    env.llm.setScript([{ ...tool("navigate", { path: "/studios/general" }), delayMs: 15_000 }]);
    const { w, scout, notePath, run } = await wokenInThread({ timeout_seconds: 10 });
    expect((await waitForRun(scout.id, undefined, 20_000)).status).toBe("timed_out");
    const bob = (await md(app, w, w.bob, "GET", notePath)).body;
    expect(count(bob, "@scout could not finish: it ran out of time")).toBe(1);
    expect(bob).not.toContain("is working on this");
    expect(bob).not.toContain(`/runs/${run.id}`);
    const alice = (await md(app, w, w.alice, "GET", notePath)).body;
    expect(count(alice, "@scout could not finish: it ran out of time")).toBe(1);
    expect(alice).toContain(`it ran out of time — [see its run](/subagents/scout/runs/${run.id})`);
  }, 30_000);
});
