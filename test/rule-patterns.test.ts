// Rule patterns are matched by RE2 (lib/rule-pattern.ts), in time linear in the text: the
// patterns that froze the shared worker under JavaScript's backtracking RegExp are saved and
// drive a real run in milliseconds; what RE2 cannot run, and params the action does not have,
// are refused when saved with a 400 naming the field, in markdown and in the browser's form.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, startAgents, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, login, md, testPrisma, type World } from "./helpers/app.ts";
import { configOf, type Harness, runTask, setupAgent } from "./helpers/approvals.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("rule-patterns");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const h: Harness = { app: () => app, env: () => env };
const PAGE = "/subagents/scout/settings";
const addRule = (w: World, body: Record<string, unknown>) =>
  md(app, w, w.alice, "POST", `${PAGE}/actions/add_rule`, body);
const rule = (name: string, param_patterns: string, action = "add_comment") => ({
  name,
  action,
  decision: "deny",
  param_patterns,
});

// What backtracks worst against each pattern: a long run of one letter that never ends as asked.
const ADVERSARIAL = `${"a".repeat(9_000)}!`;

/** The time an execute step took besides waiting for the model: the policy, the action, its transaction. */
async function actionMs(runId: string) {
  const step = (await stepsOf(runId)).find((s) => s.type === "execute");
  expect(step?.detail).toMatchObject({ ok: true, notice: "Comment posted" });
  return step!.durationMs - step!.llmMs;
}

describe("linear time", () => {
  it("(a+)+$ and ^(.?){30}.{30}Q are saved, and a run commenting adversarial text through them stays fast", async () => {
    const timed: number[] = [];
    for (const withRules of [false, true]) {
      const { w, scout, notePath } = await setupAgent(h, {}, (path) => [
        { path, action: "add_comment", params: { text: ADVERSARIAL } },
      ]);
      if (withRules) {
        expect((await addRule(w, rule("nested", "text=(a+)+$"))).statusCode).toBe(200);
        expect((await addRule(w, rule("counted", "text=^(.?){30}.{30}Q"))).statusCode).toBe(200);
        expect(((await configOf(scout.id)).rules as unknown[]).length).toBe(2);
      }
      const runId = await runTask(h, w);
      expect((await waitForRun(scout.id, undefined, 30_000)).status).toBe("completed");
      // Neither pattern matches, so neither rule denies: the comment is posted.
      expect(await testPrisma().comment.count({ where: { authorId: scout.id, text: ADVERSARIAL } })).toBe(1);
      expect(notePath).toMatch(/^\/studios\/general\/notes\//);
      timed.push(await actionMs(runId));
    }
    const [without, withRules] = timed as [number, number];
    // Backtracking took 1.5 s for {20} and would take minutes for {30}; RE2 adds a few ms. The
    // bound only tells "linear" from "exponential": a loaded CI machine took 325 ms for the step.
    expect(withRules).toBeLessThan(5000);
    console.info(
      `execute step besides the model: ${without.toFixed(1)} ms without rules, ${withRules.toFixed(1)} ms with`,
    );
  });

  it("(?i) still means case-insensitive", async () => {
    const { w, scout } = await setupAgent(h, {}, (path) => [
      { path, action: "add_comment", params: { text: "The BUDGET is secret" } },
    ]);
    expect((await addRule(w, rule("hush", "text=(?i)budget"))).statusCode).toBe(200);
    const runId = await runTask(h, w);
    await waitForRun(scout.id);
    const step = (await stepsOf(runId)).find((s) => s.type === "execute");
    expect(step?.detail).toMatchObject({ ok: false, status: 403, error: expect.stringContaining("“hush”") });
  });
});

describe("refused when saved", () => {
  it("backreferences, lookaround, a pattern too large to match quickly: 400 naming the field and why", async () => {
    const { w, scout } = await setupAgent(h, {}, () => []);
    const cases: [string, RegExp][] = [
      ["text=(a)\\1", /line 1: backreferences .* not supported: rule patterns are matched in linear time/],
      ["text=ok\ntext=a(?=b)", /line 2: lookahead and lookbehind .* not supported/],
      ["text=(?<=a)b", /line 1: lookahead and lookbehind/],
      ["text=(oops", /line 1: not a valid pattern: missing closing \)/],
      ["text=(.*a){60}", /line 1: too complex to match quickly \(\d+ steps, at most 200\)/],
    ];
    for (const [patterns, message] of cases) {
      const res = await addRule(w, rule("x", patterns));
      expect(res.statusCode, patterns).toBe(400);
      expect(res.body).toMatch(/`param_patterns`/);
      expect(res.body).toMatch(message);
    }
    expect((await configOf(scout.id)).rules ?? []).toEqual([]);
  });

  it("an agent's patterns together are bounded", async () => {
    const { w } = await setupAgent(h, {}, () => []);
    const heavy = "text=(.*a){35}"; // 177 steps: five fit under 1,000, the sixth does not
    for (let i = 0; i < 5; i++) expect((await addRule(w, rule(`r${i}`, heavy))).statusCode).toBe(200);
    const sixth = await addRule(w, rule("r5", heavy));
    expect(sixth.statusCode).toBe(400);
    expect(sixth.body).toMatch(/patterns together would be \d+ steps to match, at most 1000/);
  });

  it("a param the action does not have: 400 naming it and listing the valid ones, in markdown and in the form", async () => {
    const { w, scout } = await setupAgent(h, {}, () => []);
    const res = await addRule(w, rule("never", "nonexistent=.*"));
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain(
      "`param_patterns`: line 1: `add_comment` has no param “nonexistent”; its params: reply_to, text",
    );
    const browser = await login(app, w, w.alice);
    const form = await browser.post(`${PAGE}/actions/add_rule`, {
      name: "never",
      action: "create_note",
      decision: "deny",
      param_patterns: "text=ok\r\nreply_to=x",
    });
    expect(form.statusCode).toBe(400);
    expect(issuesOf(form.body).param_patterns).toBe(
      "line 2: `create_note` has no param “reply_to”; its params: text, title",
    );
    // `*`: a param some action a rule can name has is kept; one none has is refused.
    expect((await addRule(w, rule("any-text", "text=secret", "*"))).statusCode).toBe(200);
    const star = await addRule(w, rule("any-bogus", "bogus=x", "*"));
    expect(star.statusCode).toBe(400);
    expect(star.body).toMatch(
      /line 1: no action a rule can name has a param “bogus”; their params: .*\btext\b/,
    );
    expect(((await configOf(scout.id)).rules as { name: string }[]).map((r) => r.name)).toEqual(["any-text"]);
  });
});
