// Every kind of news, sent for real: one agent's day (an action held for approval and
// approved, a question asked and answered, a run that fails, a spend alert crossed) reaches
// an outgoing webhook listening to all six events exactly once per happening, and the
// manager's inbox (a real SMTP server in this process) with the question and the alert at
// once, and the failed run in the day's digest.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, tool, waitForRun } from "./helpers/agents.ts";
import { makeWorld, md, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { noteStep, planScript, review, waitPending } from "./helpers/approvals.ts";
import { type Inbox, startMailing } from "./helpers/inbox.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

let app: FastifyInstance;
let env: AgentEnv;
let inbox: Inbox;
let receiver: Receiver;
let stack: Awaited<ReturnType<typeof startMailing>>;
beforeAll(async () => {
  [stack, receiver] = await Promise.all([startMailing("reach-news"), startReceiver()]);
  ({ inbox, app, env } = stack);
});
afterAll(async () => {
  await stack.close();
  await receiver.close();
});

const db = testPrisma;
const ALL_EVENTS = {
  approval_requested: true,
  approval_decided: true,
  question_asked: true,
  run_finished: true,
  run_failed: true,
  cost_alert: true,
};

/** gpt-4o at $2.50 in and $10 out per million: $0.006 a call, so the second call crosses $0.01. */
const billed = (r: FakeReply): FakeReply => ({
  ...r,
  usage: { prompt_tokens: 2000, completion_tokens: 100 },
});

/** The model, by task: post the findings (held for approval), ask a question, or fail at once. */
function dayScript() {
  const post = planScript([noteStep]);
  return (req: ChatRequest): FakeReply => {
    const prompt = userPrompt(req);
    if (prompt.includes("FAIL")) return { status: 400, raw: '{"error":{"message":"bad request"}}' };
    if (prompt.includes("ASK"))
      return billed(
        prompt.includes("your owner answered")
          ? tool("finish", { message: "Thanks" })
          : tool("ask_owner", { question: "Which studio?" }),
      );
    return billed(post(req));
  };
}

async function run(w: World, task: string) {
  const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", { task });
  expect(res.statusCode, res.body).toBe(201);
  return String(res.headers.location).split("/").pop()!;
}

const events = (w: World) =>
  receiver.hits
    .filter((x) => x.body.includes(w.tenant.subdomain))
    .map((x) => JSON.parse(x.body) as { event: string; summary: string; agent: { handle: string } });

describe("every kind of news", () => {
  it("each happening is one delivery of its event; the question and the alert are mailed, the failure digested", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", {
      model: "gpt-4o",
      alert_thresholds_usd: [0.01],
      requires_approval: ["create_note"],
    });
    env.llm.setScript(dayScript());
    const hook = await md(
      app,
      w,
      w.alice,
      "POST",
      "/u/alice/settings/webhooks/actions/create_outgoing_webhook",
      {
        name: "Everything",
        url: receiver.url,
        ...ALL_EVENTS,
      },
    );
    expect(hook.statusCode, hook.body).toBe(201);

    // Held for approval (continue mode: the run finishes), then approved.
    await run(w, "POST the findings");
    const p = await waitPending(scout.id);
    await waitForRun(scout.id, (s) => s === "completed");
    expect((await review(app, w, w.alice, "approve_action", { id: p.id })).statusCode).toBe(200);
    // A question, answered; the run then finishes.
    const asked = await run(w, "ASK which studio");
    await waitForRun(scout.id, (s) => s === "waiting");
    const answer = await md(
      app,
      w,
      w.alice,
      "POST",
      `/subagents/scout/runs/${asked}/actions/answer_question`,
      {
        answer: "General",
      },
    );
    expect(answer.statusCode, answer.body).toBe(200);
    await waitFor(
      () => db().subagentTaskRun.findFirst({ where: { id: asked, status: "completed" } }),
      10_000,
    );
    // A run the model refuses at once.
    await run(w, "FAIL now");
    await waitForRun(scout.id, (s) => s === "failed");

    const expected = {
      "approval.requested": 1,
      "approval.decided": 1,
      "question.asked": 1,
      "run.finished": 2,
      "run.failed": 1,
      "cost.alert": 1,
    };
    const counts = () => {
      const c: Record<string, number> = {};
      for (const e of events(w)) c[e.event] = (c[e.event] ?? 0) + 1;
      return c;
    };
    await waitFor(async () => Object.keys(counts()).length === 6 && counts()["run.finished"] === 2, 15_000);
    // Nothing more trickles in: each happening was told once.
    await new Promise((r) => setTimeout(r, 800));
    expect(counts()).toEqual(expected);
    const by = (name: string) => events(w).find((e) => e.event === name)!;
    expect(by("approval.decided")).toMatchObject({
      decision: "approved",
      reviewed_by: "alice",
      summary: "@scout asked to post a note: approved by @alice, in the studio General",
    });
    expect(by("question.asked").summary).toBe("@scout has a question for you");
    expect(by("run.failed")).toMatchObject({ run: { status: "failed" } });
    expect(by("cost.alert")).toMatchObject({ cost: { threshold_usd: 0.01, paused: false } });
    for (const e of events(w)) expect(e.agent.handle).toBe("scout");

    // Mails at once: the approval request, the question and the alert; the failed run comes
    // in the day's digest, which the worker's sweep sends (its digest hour is now).
    const mails = await waitFor(
      async () => (inbox.to(w.alice.email).length >= 4 ? inbox.to(w.alice.email) : null),
      10_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    const subjects = inbox.to(w.alice.email).map((m) => m.subject);
    expect(subjects, subjects.join("\n")).toHaveLength(4);
    expect(subjects).toContain("@scout wants your approval to post a note, in the studio General");
    expect(subjects).toContain("@scout has a question for you");
    expect(subjects).toContainEqual(
      expect.stringMatching(
        /^@scout has spent \$0\.\d\d in \d{4}-\d{2}, past your \$0\.01 alert \(limit \$100\.00\)$/,
      ),
    );
    const digest = mails.find((m) => m.subject === "Your agents today: 1 update")!;
    expect(digest.text).toContain("@scout could not finish");
    const question = mails.find((m) => m.subject.includes("question"))!;
    expect(question.text).toContain(`/subagents/scout/runs/${asked}`);
    // The agent's own words stay in the app.
    expect(question.text).not.toContain("Which studio?");
    const cost = mails.find((m) => m.subject.includes("alert"))!;
    expect(cost.text).toContain("/subagents/scout/usage");
    expect(cost.html).toContain("/subagents/scout/usage");
    const held = await db().outboundEmail.findMany({ where: { userId: w.alice.id, kind: "run_failed" } });
    expect(held.map((m) => m.status)).toEqual(["digested"]);
  }, 60_000);
});
