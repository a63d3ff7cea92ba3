// Dry runs, end to end (web, worker, Postgres, a model over HTTP): "Try without acting" reads
// for real and records each write the model chose with the policy's decision — allowed, held
// by a rule, refused by a rule, a disclosure — and executes none of them.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stepsOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, md, testPrisma } from "./helpers/app.ts";
import { SECRET, trustWorld } from "./helpers/trust.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("dry");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

// What a run may move, dry or not: its own records and what it was charged; and the log of
// the API call that started it (written after its response, so it may land on either side).
const RUN_RECORDS = new Set([
  "api_calls",
  "subagent_task_runs",
  "subagent_task_run_steps",
  "llm_usage",
  "llm_usage_daily",
  "agent_usage_months",
  "events",
  "outbox_cursors",
]);

/** Every table's row count in this file's database. */
async function rowCounts(): Promise<Map<string, number>> {
  const tables = await testPrisma().$queryRaw<{ name: string }[]>`
    SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> '_prisma_migrations'`;
  const counts = await Promise.all(
    tables.map(async ({ name }) => {
      const [row] = await testPrisma().$queryRawUnsafe<{ n: bigint }[]>(
        `SELECT count(*) AS n FROM "${name}"`,
      );
      return [name, Number(row!.n)] as const;
    }),
  );
  return new Map(counts);
}

const RULES = [
  {
    name: "ask before thanking",
    action: "add_comment",
    params: { text: "thank" },
    decision: "require_approval",
  },
  { name: "no shouting", action: "add_comment", params: { text: "^[A-Z !]+$" }, decision: "deny" },
];

describe("a dry run", () => {
  it("executes no write and records each one with the policy's decision, a disclosure among them", async () => {
    const t = await trustWorld(undefined, { rules: RULES });
    const said = (text: string) => tool("execute_action", { action: "add_comment", params: { text } });
    const plan = [
      tool("navigate", { path: t.bobNotePath }),
      said("Looks good to me"),
      said("thank you, Bob"),
      said("STOP THIS NOW!"),
      tool("navigate", { path: t.secretPath }),
      tool("navigate", { path: t.bobNotePath }),
      said(`Heads up: ${SECRET}`),
      tool("finish", { message: "commented" }),
    ];
    env.llm.setScript((_req, n) => plan[n] ?? tool("finish", { message: "done" }));
    const before = await rowCounts();
    const res = await md(app, t.w, t.w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: "Comment on Bob's plan.",
      dry: true,
    });
    expect(res.statusCode).toBe(201);
    expect(res.body).toContain("as a dry run");
    const run = await waitForRun(t.scout.id);
    expect(run).toMatchObject({ status: "completed", dry: true });

    const after = await rowCounts();
    const moved = [...after].filter(([name, n]) => before.get(name) !== n).map(([name]) => name);
    expect(moved.filter((name) => !RUN_RECORDS.has(name))).toEqual([]);
    expect(await testPrisma().comment.count({ where: { authorId: t.scout.id } })).toBe(0);
    expect(await testPrisma().agentPendingAction.count({ where: { agentId: t.scout.id } })).toBe(0);

    const writes = (await stepsOf(run.id)).filter((step) => step.type === "execute");
    expect(writes.map((step) => step.detail)).toMatchObject([
      { ok: true, action: "add_comment", params: { text: "Looks good to me" }, dry: { decision: "allowed" } },
      { ok: true, dry: { decision: "held", rule: "ask before thanking" } },
      { ok: true, dry: { decision: "refused" } },
      {
        ok: true,
        params: { text: `Heads up: ${SECRET}` },
        dry: { decision: "disclosure", rule: "disclosure" },
      },
    ]);
    expect(String((writes[2]!.detail as { dry: { reason: string } }).dry.reason)).toContain("no shouting");
    // The model heard what would have happened, and that nothing did.
    const heard = env.llm.requests
      .filter((r) => userPrompt(r.body).includes("Comment on Bob's plan."))
      .map((r) => userPrompt(r.body));
    expect(heard[2]).toContain("Dry run: `add_comment` was not done. It would have run.");
    expect(heard[3]).toContain(
      "Dry run: `add_comment` was not done. It would have been queued for its managers' approval (rule “ask before thanking”).",
    );

    const page = await md(app, t.w, t.w.alice, "GET", `/subagents/scout/runs/${run.id}`);
    expect(page.body).toContain("**A dry run.**");
    expect(page.body).toContain("## What it would have done (4)");
    expect(page.body).toMatch(/step \d+: `add_comment` \*\*would have waited for approval: a disclosure\*\*/);
    expect(page.body).not.toContain("## Resources it created");
  });

  it("is charged as usual and counted as evaluation on the usage page", async () => {
    // A priced model: the run costs money.
    const t = await trustWorld(undefined, { model: "gpt-4o-mini" });
    env.llm.setScript(() => tool("finish", { message: "nothing to do" }));
    await md(app, t.w, t.w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: "Look.",
      dry: true,
    });
    const run = await waitForRun(t.scout.id);
    expect(run.costMicros).toBeGreaterThan(0n);
    const usage = await md(app, t.w, t.w.alice, "GET", "/subagents/scout/usage");
    expect(usage.body).toContain("## Evaluation");
    expect(usage.body).toMatch(/Dry runs started in the last 30 days: \*\*1 run, [\d,]+ tokens, \$/);
  });

  it("a live run is not one: its writes are done", async () => {
    const t = await trustWorld();
    env.llm.setScript((_req, n) =>
      n === 0
        ? tool("navigate", { path: t.bobNotePath })
        : n === 1
          ? tool("execute_action", { action: "add_comment", params: { text: "Looks good" } })
          : tool("finish", { message: "done" }),
    );
    await md(app, t.w, t.w.alice, "POST", "/subagents/scout/run/actions/run_task", { task: "Comment." });
    const run = await waitForRun(t.scout.id);
    expect(run.dry).toBe(false);
    expect(await testPrisma().comment.count({ where: { authorId: t.scout.id } })).toBe(1);
  });
});
