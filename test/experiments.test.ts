// Experiments, end to end (web, worker, Postgres, Redis, a model over HTTP): a case saved from a
// real run passes on the current settings and fails on a candidate model that does what the
// case forbids, with the failing expectation named; the candidate's dry runs write nothing; the
// experiment's cost cap stops it with the reason; the results come as CSV too.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest } from "../src/dev/fake-llm.ts";
import { type AgentEnv, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, login, md, testPrisma, waitFor } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";
import { trustWorld } from "./helpers/trust.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("experiments");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const GOOD = "gpt-4o-mini";
const BAD = "gpt-4o";

/** Two models on the same pages: the good one says it looks good, the bad one spams. */
function twoModels(notePath: string) {
  return (req: ChatRequest, _n: number) => {
    const prompt = req.messages.map((m) => m.content ?? "").join("\n");
    const commented = prompt.includes("execute add_comment(");
    if (commented)
      return tool("finish", { message: req.model === GOOD ? "Reviewed: it looks good." : "Sold!" });
    if (!prompt.includes(`# Current page: ${notePath} —`)) return tool("navigate", { path: notePath });
    const text = req.model === GOOD ? "Looks good to me" : "Buy now!!! Limited offer";
    return tool("execute_action", { action: "add_comment", params: { text } });
  };
}

async function savedCase() {
  const t = await trustWorld(undefined, { model: GOOD });
  env.llm.setScript(twoModels(t.bobNotePath));
  const started = await md(app, t.w, t.w.alice, "POST", "/subagents/scout/run/actions/run_task", {
    task: `Review ${t.bobNotePath} and comment on it.`,
  });
  expect(started.statusCode).toBe(201);
  const run = await waitForRun(t.scout.id);
  expect(run.status).toBe("completed");
  const saved = await md(
    app,
    t.w,
    t.w.alice,
    "POST",
    `/subagents/scout/runs/${run.id}/actions/save_test_case`,
    {
      name: "Review Bob's plan",
      must_take: "add_comment text=(?i)looks good",
      must_not_take: "add_comment text=(?i)buy",
      must_finish: true,
    },
  );
  expect(saved.statusCode).toBe(201);
  return { t, run };
}

type T = Awaited<ReturnType<typeof savedCase>>["t"];

/** start_experiment as alice, through the markdown API. */
const startOn = (t: T, body: Record<string, unknown>) =>
  md(app, t.w, t.w.alice, "POST", "/subagents/scout/experiments/actions/start_experiment", body);

/** The agent's newest version's number. */
const latestVersion = async (t: T) =>
  (
    await testPrisma().agentVersion.findFirstOrThrow({
      where: { agentId: t.scout.id },
      orderBy: { number: "desc" },
    })
  ).number;

const experimentRuns = (experimentId: string) =>
  testPrisma().subagentTaskRun.findMany({ where: { experimentId }, orderBy: { createdAt: "asc" } });

const ENDED = ["completed", "failed", "cancelled", "timed_out", "skipped"];

async function ended(experimentId: string) {
  return waitFor(async () => {
    const runs = await experimentRuns(experimentId);
    return runs.length && runs.every((run) => ENDED.includes(run.status)) ? runs : null;
  });
}

describe("an experiment", () => {
  it("passes the case on the current version and fails it on a stored one, naming the expectation", async () => {
    const { t } = await savedCase();
    // Version B: the bad model, saved and then changed back; the current version is A's again.
    const save = (model: string) =>
      md(app, t.w, t.w.alice, "POST", "/subagents/scout/actions/update_subagent", { model });
    expect((await save(BAD)).statusCode).toBe(200);
    const versionB = await latestVersion(t);
    expect((await save(GOOD)).statusCode).toBe(200);
    const comments = await testPrisma().comment.count({ where: { authorId: t.scout.id } });
    const body = { try: "version", version: versionB, cost_cap_usd: 1, parallel: 4 };
    const res = await startOn(t, body);
    expect(res.statusCode).toBe(201);
    const path = String(res.headers.location);
    const id = path.split("/").pop()!;
    const runs = await ended(id);
    expect(runs.map((run) => [run.arm, run.model, run.dry, run.status])).toEqual([
      ["current", GOOD, true, "completed"],
      ["candidate", BAD, true, "completed"],
    ]);
    // Dry: the candidate's spam, and the current side's comment, were never posted.
    expect(await testPrisma().comment.count({ where: { authorId: t.scout.id } })).toBe(comments);

    const page = await md(app, t.w, t.w.alice, "GET", path);
    expect(page.body).toContain("### Review Bob's plan — current ✓ passes, candidate ✗ fails");
    expect(page.body).toContain(`Current settings (version ${versionB + 1}): passes **1 of 1**`);
    expect(page.body).toContain(`Candidate: version ${versionB}: passes **0 of 1**`);
    const never = page.body.split("\n").find((line) => line.startsWith("| Never takes"))!;
    expect(never).toMatch(/^\| Never takes `add_comment`.*\| ✓ .* \| ✗ .*step \d/);
    expect(page.body).toContain('+ add_comment {"text":"Buy now!!! Limited offer"}');

    const csv = await app.inject({
      method: "GET",
      url: `${path}/results.csv`,
      headers: { host: t.w.host, authorization: `Bearer ${t.w.alice.token}` },
    });
    expect(csv.statusCode).toBe(200);
    expect(csv.body.split("\n")[0]).toBe("case,expectation,current,candidate,current_why,candidate_why");
    expect(csv.body).toMatch(/Review Bob's plan,Never takes .*,pass,fail,/);
  });

  it("judges each side by its own version's rules: a deny rule in the candidate refuses its comment", async () => {
    const { t } = await savedCase();
    const post = (action: string, body: Record<string, unknown>) =>
      md(app, t.w, t.w.alice, "POST", `/subagents/scout/settings/actions/${action}`, body);
    const rule = { name: "no comments", action: "add_comment", decision: "deny" };
    expect((await post("add_rule", rule)).statusCode).toBe(200);
    const strict = await latestVersion(t);
    expect((await post("remove_rule", { name: "no comments" })).statusCode).toBe(200);
    const body = { try: "version", version: strict, cost_cap_usd: 1, parallel: 2 };
    const res = await startOn(t, body);
    expect(res.statusCode).toBe(201);
    const runs = await ended(String(res.headers.location).split("/").pop()!);
    const decisions = await Promise.all(
      runs.map(async (run) => {
        const steps = await testPrisma().subagentTaskRunStep.findMany({
          where: { runId: run.id, type: "execute" },
        });
        return [run.arm, steps.map((step) => (step.detail as { dry?: { decision: string } }).dry?.decision)];
      }),
    );
    expect(decisions).toEqual([
      ["current", ["allowed"]],
      ["candidate", ["refused"]],
    ]);
    const page = await md(app, t.w, t.w.alice, "GET", String(res.headers.location));
    expect(page.body).toContain("### Review Bob's plan — current ✓ passes, candidate ✗ fails");
  });

  it("a candidate prompt is the one its side was sent: its step page rebuilds it byte for byte", async () => {
    const { t } = await savedCase();
    const body = {
      try: "prompt",
      identity_prompt: "You review plans. SALES MODE.",
      cost_cap_usd: 1,
      parallel: 2,
    };
    const res = await startOn(t, body);
    expect(res.statusCode).toBe(201);
    const runs = await ended(String(res.headers.location).split("/").pop()!);
    const sent = env.llm.requests.filter((r) =>
      r.body.messages.some((m) => m.content?.includes("SALES MODE")),
    );
    expect(sent.length).toBeGreaterThan(0);
    for (const run of runs) {
      // Step 1 is its first page, read before any call; step 2 is its first model call.
      const step = await md(app, t.w, t.w.alice, "GET", `/subagents/scout/runs/${run.id}/steps/2`);
      expect(step.body).toContain("Exactly what the model was sent");
      expect(step.body.includes("SALES MODE")).toBe(run.arm === "candidate");
    }
  });

  it("stops at its cost cap and says so; its runs end with the reason", async () => {
    const { t } = await savedCase();
    const res = await startOn(t, {
      try: "model",
      model: BAD,
      cost_cap_usd: 0.000001,
      parallel: 1,
    });
    expect(res.statusCode).toBe(201);
    const path = String(res.headers.location);
    const runs = await ended(path.split("/").pop()!);
    expect(runs.map((run) => [run.status, run.stopReason])).toEqual([
      ["cancelled", "experiment_stopped"],
      ["cancelled", "experiment_stopped"],
    ]);
    expect(runs[0]!.error).toMatch(/^Stopped at the experiment's cost cap: \$[\d.]+ spent of \$0\.00/);
    const page = await md(app, t.w, t.w.alice, "GET", path);
    expect(page.body).toContain("**Stopped**: Stopped at the experiment's cost cap");
  });

  it("says which field a candidate lacks, by its label", async () => {
    const { t } = await savedCase();
    const res = await startOn(t, {
      try: "version",
      cost_cap_usd: 1,
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(issuesOf(res.body)).toEqual({ version: "name the version to try" });
    const browser = await login(app, t.w, t.w.alice);
    const form = await browser.post("/subagents/scout/experiments/actions/start_experiment", {
      try: "version",
      cost_cap_usd: "1",
    });
    expect(form.statusCode).toBe(400);
    expect(form.body).toContain("Version");
    const unknown = await startOn(t, {
      try: "version",
      version: 99,
      cost_cap_usd: 1,
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toContain("has no version 99");
  });
});
