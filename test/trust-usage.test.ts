// Usage pages quote no task to a reader outside its run's label (issue 42, story 5), end to
// end: alice mentions @scout in the vault, its run costs money at the fake model over HTTP,
// and Carol, a workspace admin in no studio, reads the costliest runs by what woke them.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentEnv, startAgents, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, md, testPrisma } from "./helpers/app.ts";
import { section } from "./helpers/sections.ts";
import { obedientModel, SECRET, trustWorld } from "./helpers/trust.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("trust-usage");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

describe("usage pages", () => {
  it("show a workspace admin outside the vault a run's trigger kind and id, not its task; its manager reads the task", async () => {
    // A priced model, so the run is among the costliest.
    const t = await trustWorld(undefined, { model: "gpt-4o-mini" });
    await testPrisma().user.update({ where: { id: t.w.carol.id }, data: { tenantAdmin: true } });
    env.llm.setScript(obedientModel());
    await act(t.w, t.w.alice, t.secretPath, "add_comment", { text: `@scout ${SECRET}` });
    const run = await waitForRun(t.scout.id);
    expect(run.costMicros).toBeGreaterThan(0n);
    expect(run.task).toContain(SECRET);
    const trigger = run.triggerRef ?? run.triggerEventId;
    for (const path of ["/usage", "/subagents/scout/usage"]) {
      const asCarol = await md(app, t.w, t.w.carol, "GET", path);
      expect(asCarol.statusCode, path).toBe(200);
      const table = section(asCarol.body, "Top runs by cost");
      expect(table, path).toContain(`_mention \`${trigger}\`_`);
      expect(asCarol.body, path).not.toContain("March 3rd");
      expect(asCarol.body, path).not.toContain("Deal");
    }
    const asAlice = await md(app, t.w, t.w.alice, "GET", "/subagents/scout/usage");
    expect(section(asAlice.body, "Top runs by cost")).toContain("mentioned you");
    // Inside every audience of its label, a reader who does not manage it reads the task too.
    await testPrisma().studioMember.create({
      data: { studioId: t.vault.id, userId: t.w.carol.id, tenantId: t.w.tenant.id },
    });
    const inside = await md(app, t.w, t.w.carol, "GET", "/usage");
    expect(section(inside.body, "Top runs by cost")).toContain("mentioned you");
  });
});
