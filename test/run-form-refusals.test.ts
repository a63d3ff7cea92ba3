// The run form that cannot be used says why, where the form would be, in both formats:
// agents switched off, the agent paused (it showed its description and nothing else).
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeAgent } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md, testPrisma } from "./helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(() => app.close());

describe("the run form", () => {
  it("says agents are switched off, in markdown and in the browser, and shows the form once they are on", async () => {
    const w = await makeWorld("runform");
    await testPrisma().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
    await makeAgent(w, w.alice, "scout");
    const off = await md(app, w, w.alice, "POST", "/settings/agents/actions/set_agents_enabled", {
      agents: "off",
    });
    expect(off.statusCode, off.body).toBe(200);
    const page = await md(app, w, w.alice, "GET", "/subagents/scout/run");
    expect(page.body).toContain("**You cannot start a run now:** agents are switched off in this workspace.");
    expect(page.body).not.toContain("`run_task`");
    const browser = await login(app, w, w.alice);
    const html = (await browser.get("/subagents/scout/run")).body;
    expect(html).toContain("You cannot start a run now:</strong> agents are switched off in this workspace.");
    expect(html).not.toContain('name="task"');
    await md(app, w, w.alice, "POST", "/settings/agents/actions/set_agents_enabled", { agents: "on" });
    const on = (await browser.get("/subagents/scout/run")).body;
    expect(on).toContain('name="task"');
    expect(on).not.toContain("You cannot start a run now");
  });

  it("says a paused agent must be resumed first", async () => {
    const w = await makeWorld("runform");
    const scout = await makeAgent(w, w.alice, "scout");
    await testPrisma().user.update({ where: { id: scout.id }, data: { pausedAt: new Date() } });
    const page = await md(app, w, w.alice, "GET", "/subagents/scout/run");
    expect(page.body).toContain("**You cannot start a run now:** the subagent is paused; resume it first.");
  });
});
