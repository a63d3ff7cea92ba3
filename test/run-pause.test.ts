// Pausing and resuming a run (pause_run, resume_run) on real worker processes: a running run
// pauses at its next step boundary and lets go of its worker; resumed, it continues where it
// stopped, each action once, with its timeout counting only time spent working — across two
// workers, with the workers killed while it is paused or while it is pausing.
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { type ChatRequest, type FakeLlm, type FakeReply, startFakeLlm } from "../src/dev/fake-llm.ts";
import { queueRun } from "../src/services/agents/core/runs.ts";
import { runById, sleep, userPrompt } from "./helpers/agent-scripts.ts";
import { makeAgent, tool } from "./helpers/agents.ts";
import {
  buildTestApp,
  fileDatabaseUrl,
  login,
  makeWorld,
  md,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import { endWorkers, killGroup, spawnWorker, type WorkerProcess } from "./helpers/workers.ts";

const prefix = `${inject("queuePrefix")}-pause`;
let app: FastifyInstance;
let llm: FakeLlm;
beforeAll(async () => {
  app = await buildTestApp();
  llm = await startFakeLlm();
});
afterAll(async () => {
  await endWorkers(prefix);
  await llm?.close();
  await app?.close();
});

const db = testPrisma;
const spawned: WorkerProcess[] = [];
const workers = async (n: number): Promise<WorkerProcess[]> => {
  const ws = Array.from({ length: n }, () =>
    spawnWorker({ databaseUrl: fileDatabaseUrl(), llmUrl: llm.url, prefix }),
  );
  spawned.push(...ws);
  await Promise.all(ws.map((x) => x.ready));
  return ws;
};
const kill = async (ws: WorkerProcess[]) => {
  for (const x of ws) killGroup(x.child, "SIGKILL");
  await Promise.all(ws.map((x) => x.exited));
};
// Whatever a test left running (it failed half way), the next one starts without workers.
afterEach(async () => {
  await kill(spawned.splice(0));
});

/**
 * Reads the studio (a slow call: `slowMs`), posts one note titled `title`, finishes. Each
 * reply follows from the prompt, so a resumed run gets the reply its steps call for.
 */
function noteModel(title: string, slowMs: number) {
  return (req: ChatRequest): FakeReply => {
    const prompt = userPrompt(req);
    if (prompt.includes("execute create_note(")) return tool("finish", { message: "posted" });
    if (prompt.includes("# Current page: /studios/general — "))
      return tool("execute_action", { action: "create_note", params: { title, text: "once" } });
    return { ...tool("navigate", { path: "/studios/general" }), delayMs: slowMs };
  };
}

async function queue(w: World, agentId: string, task: string, timeoutSeconds = 60) {
  const run = await db().$transaction((tx) =>
    queueRun(tx, {
      tenantId: w.tenant.id,
      agentId,
      initiatedById: w.alice.id,
      triggerKind: "manual",
      chainDepth: 0,
      task,
      model: null,
      maxSteps: 10,
      timeoutSeconds,
    }),
  );
  return run!.id;
}

const requestsOf = (runTask: string) => llm.requests.filter((r) => userPrompt(r.body).includes(runTask));
const statusOf = async (id: string) => (await runById(id)).status;

/** Samples the agent's running runs until stopped: one running run per agent, always. */
function watchRunning(agentId: string) {
  let most = 0;
  let on = true;
  const loop = (async () => {
    while (on) {
      most = Math.max(most, await db().subagentTaskRun.count({ where: { agentId, status: "running" } }));
      await sleep(30);
    }
  })().catch(() => {
    most = Number.POSITIVE_INFINITY; // could not watch: the assertion fails rather than passes unseen
  });
  return async () => {
    on = false;
    await loop;
    return most;
  };
}

describe("pause and resume", () => {
  it("pauses at the step boundary, survives its workers' deaths, and resumes to run each action once", {
    timeout: 120_000,
  }, async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    const title = `Pause ${Date.now()}`;
    // The first call is answered only once the pause was asked for, however slow the machine.
    let release: () => void = () => {};
    const asked = new Promise<void>((r) => {
      release = r;
    });
    llm.setScript(async (req) => {
      const reply = noteModel(title, 0)(req);
      if (reply.tool?.name === "navigate") await asked;
      return reply;
    });
    const first = await workers(2);
    const sampled = watchRunning(scout.id);
    // The run will be paused for longer than its whole timeout. The timeout is ample for its
    // working time even on a loaded machine (the held first call counts as working time).
    const timeoutSeconds = 15;
    const runId = await queue(w, scout.id, `Task ${title}`, timeoutSeconds);
    await waitFor(async () => requestsOf(title).length === 1 || null, 30_000);
    const pause = await md(app, w, w.alice, "POST", `/subagents/scout/runs/${runId}/actions/pause_run`, {});
    expect(pause.statusCode).toBe(200);
    expect(pause.body).toMatch(/You asked it to pause after the step it was on\./);
    expect(await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}`).then((r) => r.body)).toMatch(
      /pausing after this step/,
    );
    // Its worker hears of the request at its next heartbeat (every 200 ms here), as of a stop:
    // nothing outside the worker shows it heard, so ten beats' grace, however busy the machine.
    await sleep(2000);
    release();
    // The call in flight finishes and is recorded; no other call is made.
    const paused = await waitFor(async () => {
      const r = await runById(runId);
      return r.status === "paused" ? r : null;
    }, 15_000);
    const pausedSince = Date.now();
    expect(paused).toMatchObject({
      stepsCount: 2,
      leaseOwner: null,
      pausedById: w.alice.id,
      stopReason: "paused_by_owner",
    });
    expect(requestsOf(title)).toHaveLength(1);
    const page = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}`);
    expect(page.body).toContain("## Paused by Alice");
    expect(page.body).toContain("resume_run");
    const inbox = await md(app, w, w.alice, "GET", "/runs?status=paused");
    expect(inbox.body).toContain(runId);

    // Its worker slot is free: the agent's next run runs meanwhile.
    llm.setScript((req) =>
      userPrompt(req).includes("Other task")
        ? tool("finish", { message: "done" })
        : noteModel(title, 1500)(req),
    );
    const other = await queue(w, scout.id, "Other task");
    await waitFor(async () => (await statusOf(other)) === "completed" || null, 20_000);
    expect(await statusOf(runId)).toBe("paused");

    // Both workers die while it is paused; it waits longer than its whole timeout.
    await kill(first);
    await sleep(Math.max(0, pausedSince + timeoutSeconds * 1000 + 500 - Date.now()));
    const second = await workers(2);
    const browser = await login(app, w, w.alice);
    const resume = await browser.post(`/subagents/scout/runs/${runId}/actions/resume_run`, {});
    expect(resume.statusCode).toBe(303);
    const done = await waitFor(async () => {
      const r = await runById(runId);
      return ["completed", "failed", "timed_out", "cancelled"].includes(r.status) ? r : null;
    }, 30_000);
    expect(done.status).toBe("completed");
    expect(done.pausedById).toBeNull();
    expect(await db().note.count({ where: { tenantId: w.tenant.id, title } })).toBe(1);
    const steps = await db().subagentTaskRunStep.findMany({ where: { runId }, orderBy: { number: "asc" } });
    expect(steps.map((s) => s.type)).toEqual(["navigate", "navigate", "execute", "finish"]);
    // Resuming made the model call the next step needed, not the one it made before the pause again.
    expect(requestsOf(title)).toHaveLength(3);
    expect(await sampled()).toBeLessThanOrEqual(1);
    await kill(second);
  });

  it("a run asked to pause whose worker dies mid-call pauses on the next claim, without calling the model", {
    timeout: 90_000,
  }, async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    const title = `Crash ${Date.now()}`;
    let hang = true;
    llm.setScript((req) => (hang ? { hang: true } : noteModel(title, 0)(req)));
    const [one] = await workers(1);
    const runId = await queue(w, scout.id, `Task ${title}`);
    await waitFor(async () => requestsOf(title).length === 1 || null, 30_000);
    expect(
      (await md(app, w, w.alice, "POST", `/subagents/scout/runs/${runId}/actions/pause_run`, {})).statusCode,
    ).toBe(200);
    await kill([one!]);
    hang = false;
    const [two] = await workers(1);
    const paused = await waitFor(async () => {
      const r = await runById(runId);
      return r.status === "paused" ? r : null;
    }, 30_000);
    expect(paused.stepsCount).toBe(1);
    expect(requestsOf(title)).toHaveLength(1);
    await md(app, w, w.alice, "POST", `/subagents/scout/runs/${runId}/actions/resume_run`, {});
    await waitFor(async () => (await statusOf(runId)) === "completed" || null, 30_000);
    expect(await db().note.count({ where: { tenantId: w.tenant.id, title } })).toBe(1);
    await kill([two!]);
  });

  it("a queued run pauses at once; only managers pause or resume; a paused run can be stopped", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    const runId = await queue(w, scout.id, "Never claimed: no worker runs here");
    // bob is in the studio but does not manage @scout.
    const bob = await md(app, w, w.bob, "POST", `/subagents/scout/runs/${runId}/actions/pause_run`, {});
    expect([403, 404]).toContain(bob.statusCode);
    const res = await md(app, w, w.alice, "POST", `/subagents/scout/runs/${runId}/actions/pause_run`, {});
    expect(res.statusCode).toBe(200);
    expect(await statusOf(runId)).toBe("paused");
    const again = await md(app, w, w.alice, "POST", `/subagents/scout/runs/${runId}/actions/pause_run`, {});
    expect(again.statusCode).toBe(403);
    const stop = await md(app, w, w.alice, "POST", `/subagents/scout/runs/${runId}/actions/stop_run`, {});
    expect(stop.statusCode).toBe(200);
    expect(await statusOf(runId)).toBe("cancelled");
    const resume = await md(app, w, w.alice, "POST", `/subagents/scout/runs/${runId}/actions/resume_run`, {});
    expect(resume.statusCode).toBe(403);
  });
});
