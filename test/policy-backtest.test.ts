// Trying a rule before saving it: what it would have done to the agent's recorded actions of
// the last 30 days, in both formats, and nothing saved.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { makeAgent } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { configOf } from "./helpers/approvals.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

/** A finished run of the agent whose steps asked for these actions, `daysAgo` days back. */
async function recorded(w: World, agentId: string, asked: { action: string; params: object }[], daysAgo = 1) {
  const db = testPrisma();
  const at = new Date(Date.now() - daysAgo * 86_400_000);
  const run = await db.subagentTaskRun.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      agentId,
      triggerKind: "manual",
      task: "t",
      status: "completed",
      maxSteps: 10,
      timeoutSeconds: 60,
      createdAt: at,
    },
  });
  await db.subagentTaskRunStep.createMany({
    data: asked.map((a, i) => ({
      id: newId(),
      runId: run.id,
      tenantId: w.tenant.id,
      number: i + 2,
      type: "execute",
      path: "/studios/general",
      detail: { ok: true, ...a },
      createdAt: at,
    })),
  });
  return run.id;
}

describe("try_rule", () => {
  it("counts what the rules with it would hold, refuse and allow, with examples, and saves nothing", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", {
      rules: [
        { name: "no budget notes", action: "create_note", params: { text: "budget" }, decision: "deny" },
      ],
    });
    const run = await recorded(w, scout.id, [
      { action: "add_comment", params: { text: "Looks good to me" } },
      { action: "add_comment", params: { text: "Ping @carol about the invoice" } },
      { action: "create_note", params: { text: "Q3 budget" } },
      { action: "vote", params: { option: "a" } },
    ]);
    await recorded(w, scout.id, [{ action: "add_comment", params: { text: "an old invoice" } }], 45);
    const before = await configOf(scout.id);
    const res = await md(app, w, w.alice, "POST", "/subagents/scout/settings/actions/try_rule", {
      action: "add_comment",
      decision: "require_approval",
      param_patterns: "text=(?i)invoice",
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(
      "Of 4 actions in the last 30 days, this rule matches 1; with it, 1 would be decided differently than today. Allowed 2, held for approval 1, refused 1.",
    );
    expect(res.body).toContain(`run ${run}, step 3`);
    expect(res.body).toMatch(/\*\*Held for approval \(1\)\*\*\n\n- `add_comment`/);
    expect(await configOf(scout.id)).toEqual(before);
  });

  it("refuses a bad pattern naming its line, and is shown to people only: HTML form and results", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice);
    const bad = await md(app, w, w.alice, "POST", "/subagents/scout/settings/actions/try_rule", {
      action: "*",
      decision: "deny",
      param_patterns: "no equals sign",
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("line 1: write param=regex");
    const browser = await login(app, w, w.alice);
    const page = await browser.get("/subagents/scout/settings?try_action=vote&try_decision=deny");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("What this rule would have done");
    expect(page.body).toContain('data-action="try_rule"');
  });

  it("in a browser: the result right under the form, the form keeping what was typed, and Add this rule from it", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    await recorded(w, scout.id, [{ action: "add_comment", params: { text: "the invoice" } }]);
    const browser = await login(app, w, w.alice);
    const tried = await browser.post("/subagents/scout/settings", {
      _action: "try_rule",
      action: "add_comment",
      decision: "require_approval",
      param_patterns: "text=(?i)invoice",
      position: "1",
    });
    expect(tried.statusCode).toBe(303);
    // Straight to the result, not the top of a long page.
    expect(tried.headers.location).toMatch(/^\/subagents\/scout\/settings\?.*#tried$/);
    const page = (await browser.get(String(tried.headers.location))).body;
    const content = page.slice(page.indexOf('<article class="content'), page.indexOf("</article>"));
    // Both forms are in the page, beside the rules, not in the side panel far below on a phone.
    const tryForm = content.slice(content.indexOf('data-action="try_rule"'));
    expect(tryForm).toMatch(/^data-action="try_rule"[\s\S]*<option value="add_comment" selected>/);
    expect(tryForm).toMatch(/<option value="require_approval" selected>/);
    expect(tryForm).toContain("text=(?i)invoice</textarea>");
    const at = (needle: string) => content.indexOf(needle);
    expect(at('data-action="try_rule"')).toBeGreaterThan(-1);
    expect(at('id="tried"')).toBeGreaterThan(at('data-action="try_rule"'));
    expect(at('data-action="add_rule"')).toBeGreaterThan(at('id="tried"'));
    expect(page.slice(page.indexOf("<aside"))).not.toContain('data-action="try_rule"');
    const addForm = content.slice(at('data-action="add_rule"'));
    expect(addForm).toContain(">Add this rule</button>");
    expect(addForm.slice(0, addForm.indexOf("</form>"))).toContain("text=(?i)invoice</textarea>");
    // Only its name left to type: adding it saves the rule as tried.
    const added = await browser.post("/subagents/scout/settings", {
      _action: "add_rule",
      name: "invoices wait",
      action: "add_comment",
      decision: "require_approval",
      param_patterns: "text=(?i)invoice",
      position: "1",
    });
    expect(added.statusCode).toBe(303);
    expect((await configOf(scout.id)).rules).toEqual([
      {
        name: "invoices wait",
        action: "add_comment",
        decision: "require_approval",
        params: { text: "(?i)invoice" },
      },
    ]);
  });
});
