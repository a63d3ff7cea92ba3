// Re-running a finished run from one of its steps: a new run (trigger `replay`, linked both
// ways) whose earlier steps are the original's, copied and not done again (its comments,
// its request for approval), whose prompt at the branching step is the original's to the
// byte (the fingerprint), and which goes on live from there, here with another model. Only
// the agent's managers may; a step without a kept prompt, a run not finished, a second press
// are refused. Real Postgres, Redis, workers and the fake LLM over HTTP.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/dev/fake-llm.ts";
import { Prisma } from "../src/generated/prisma/client.ts";
import { requestsFor, runById, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, runsOf, startAgents, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, waitFor } from "./helpers/app.ts";
import {
  type Harness,
  noteStep,
  type PlanStep,
  pendingOf,
  planScript,
  runTask,
  setupAgent,
} from "./helpers/approvals.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("replay");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const h: Harness = { app: () => app, env: () => env };
const db = testPrisma;

/** Posts the findings note (queued for approval), comments "one", then "two" — or, as `gpt-4o-mini`, something else. */
function plans(notePath: string) {
  const base: PlanStep[] = [
    noteStep,
    { path: notePath, action: "add_comment", params: { text: "one" } },
    { path: notePath, action: "add_comment", params: { text: "two" } },
  ];
  const other = [
    ...base.slice(0, 2),
    { path: notePath, action: "add_comment", params: { text: "two, otherwise" } },
  ];
  const [mine, theirs] = [planScript(base), planScript(other)];
  return (req: ChatRequest) => (req.model === "gpt-4o-mini" ? theirs(req) : mine(req));
}

async function finishedRun() {
  const { w, scout, notePath } = await setupAgent(h, { requires_approval: ["create_note"] }, () => []);
  env.llm.setScript(plans(notePath));
  const runId = await runTask(h, w);
  expect((await waitForRun(scout.id)).status).toBe("completed");
  const steps = await stepsOf(runId);
  const two = steps.find((s) => (s.detail as { params?: { text?: string } }).params?.text === "two")!;
  const stepPage = (n: number) => `/subagents/scout/runs/${runId}/steps/${n}`;
  return { w, scout, notePath, runId, steps, two, stepPage };
}

async function requireApprovalFor(agentId: string, actions: string[]) {
  const { agentConfig } = await db().user.findUniqueOrThrow({ where: { id: agentId } });
  await db().user.update({
    where: { id: agentId },
    data: { agentConfig: { ...(agentConfig as object), requires_approval: actions } },
  });
}

const commentsBy = async (authorId: string) =>
  (await db().comment.findMany({ where: { authorId }, orderBy: { createdAt: "asc" } })).map((c) => c.text);

describe("re-run from a step", () => {
  it("copies the steps before it (not done again), sends the original's prompt there, and goes on live with another model", async () => {
    const { w, scout, runId, steps, two, stepPage } = await finishedRun();
    expect(await commentsBy(scout.id)).toEqual(["one", "two"]);
    expect(await pendingOf(scout.id)).toHaveLength(1);
    const original = await runById(runId);

    // The run kept the rules it was queued under; the owner has since made comments need approval.
    expect(original.policy).toMatchObject({ requires_approval: ["create_note"], rules: null });
    await requireApprovalFor(scout.id, ["create_note", "add_comment"]);

    const page = await md(app, w, w.alice, "GET", stepPage(two.number));
    expect(page.body).toContain("replay_run");
    // Under the original's rules (the default): its comment runs as the original's did.
    const res = await md(app, w, w.alice, "POST", `${stepPage(two.number)}/actions/replay_run`, {
      model: "gpt-4o-mini",
    });
    expect(res.statusCode).toBe(201);
    const replayId = String(res.headers.location).split("/").pop()!;
    const replay = await waitFor(async () => {
      const r = await runById(replayId);
      return r.status === "completed" ? r : null;
    }, 10_000);

    // Linked both ways, the original's task, label and viewers, through the dispatcher.
    expect(replay).toMatchObject({
      triggerKind: "replay",
      triggerRef: runId,
      replayOfRunId: runId,
      replayFromStep: two.number,
      model: "gpt-4o-mini",
      task: original.task,
      maxSteps: original.maxSteps,
      viewerIds: original.viewerIds,
      initiatedById: w.alice.id,
    });
    expect(replay.label).toEqual(original.label);
    expect(replay).toMatchObject({ policyPinned: true, policy: original.policy });

    // Nothing the original did was done again: its comments and its request for approval are its own.
    expect(await commentsBy(scout.id)).toEqual(["one", "two", "two, otherwise"]);
    expect(await pendingOf(scout.id)).toHaveLength(1);
    const resources = await db().subagentTaskRunResource.findMany({ where: { runId: replayId } });
    expect(resources.map((r) => r.stepNumber)).toEqual([two.number]);

    // Its first steps are the original's rows, marked; from the branching step on, its own.
    const mine = await stepsOf(replayId);
    const copied = mine.filter((s) => s.number < two.number);
    expect(copied.map((s) => [s.number, s.type, s.path, s.detail, s.replayed])).toEqual(
      steps.filter((s) => s.number < two.number).map((s) => [s.number, s.type, s.path, s.detail, true]),
    );
    const branch = mine.find((s) => s.number === two.number)!;
    expect(branch.replayed).toBe(false);
    // The prompt there is the original's to the byte, though the note now shows "two" as well.
    const hash = (s: { detail: unknown }) => (s.detail as { prompt: { hash: string } }).prompt.hash;
    expect(hash(branch)).toBe(hash(two));
    expect((branch.detail as { params: unknown }).params).toEqual({ text: "two, otherwise" });
    const sent = requestsFor(env, w).filter((r) => r.body.model === "gpt-4o-mini");
    expect(sent.length).toBeGreaterThanOrEqual(2);

    // Its page shows the two side by side from the branching step; the original's links to it.
    const shown = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${replayId}`);
    expect(shown.body).toContain(`## Side by side from step ${two.number}`);
    expect(shown.body).toContain(
      `replays [run ${runId}](/subagents/scout/runs/${runId}) from step ${two.number}, under the original run's rules`,
    );
    expect(shown.body).toContain("replayed from the original run, not done again");
    const back = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}`);
    expect(back.body).toContain(`re-run from step ${two.number} as [run ${replayId}]`);

    // Once per step and model, however often it is pressed.
    const again = await md(app, w, w.alice, "POST", `${stepPage(two.number)}/actions/replay_run`, {
      model: "gpt-4o-mini",
    });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain("under the original's rules");
    expect(await runsOf(scout.id)).toHaveLength(2);

    // Under the agent's rules now: a new replay, and the new rule holds its branching step's comment.
    const ruled = await md(app, w, w.alice, "POST", `${stepPage(two.number)}/actions/replay_run`, {
      model: "gpt-4o-mini",
      rules: "current",
    });
    expect(ruled.statusCode).toBe(201);
    const ruledId = String(ruled.headers.location).split("/").pop()!;
    await waitFor(async () => ((await runById(ruledId)).status === "completed" ? true : null), 10_000);
    expect(await runsOf(scout.id)).toHaveLength(3);
    expect(await commentsBy(scout.id)).toEqual(["one", "two", "two, otherwise"]);
    const held = await pendingOf(scout.id);
    expect(held).toHaveLength(2);
    expect(held.find((a) => a.runId === ruledId)).toMatchObject({ actionName: "add_comment" });
    const ruledPage = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${ruledId}`);
    expect(ruledPage.body).toContain("under the agent's rules when re-run");
  });

  it("refuses a step without a kept prompt (400 naming the step), a non-manager, a run not finished, another tenant", async () => {
    const { w, scout, runId, stepPage } = await finishedRun();
    const first = await md(app, w, w.alice, "POST", `${stepPage(1)}/actions/replay_run`, {});
    expect(first.statusCode).toBe(400);
    expect(first.body).toContain("`step`: step 1 made no model call");
    // bob is a member of the studio but does not manage @scout: he cannot even see its runs.
    const bob = await md(app, w, w.bob, "POST", `${stepPage(2)}/actions/replay_run`, {});
    expect([403, 404]).toContain(bob.statusCode);
    const other = await makeWorld();
    const stranger = await md(app, other, other.alice, "POST", `${stepPage(2)}/actions/replay_run`, {});
    expect(stranger.statusCode).toBe(404);
    // A run from before runs kept their rules can be re-run under the current ones only.
    await db().subagentTaskRun.update({ where: { id: runId }, data: { policy: Prisma.DbNull } });
    const legacy = await md(app, w, w.alice, "POST", `${stepPage(2)}/actions/replay_run`, {});
    expect(legacy.statusCode).toBe(409);
    expect(legacy.body).toContain("re-run it with the agent's current rules");
    await db().subagentTaskRun.update({ where: { id: runId }, data: { status: "waiting" } });
    const waiting = await md(app, w, w.alice, "POST", `${stepPage(2)}/actions/replay_run`, {});
    expect(waiting.statusCode).toBe(403);
    expect(await runsOf(scout.id)).toHaveLength(1);
  });

  it("the step page offers Re-run from here as a form to the agent's manager", async () => {
    const { w, stepPage, two } = await finishedRun();
    const browser = await login(app, w, w.alice);
    const html = await browser.get(stepPage(two.number));
    expect(html.statusCode).toBe(200);
    expect(html.body).toContain(`data-action="replay_run"`);
  });
});
