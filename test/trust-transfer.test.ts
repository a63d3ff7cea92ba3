// A transfer is a disclosure decision (issue 42, story 2), end to end: scout read the vault
// in a run and keeps it in its memory; before alice gives it to General, whose admin bob is
// not in the vault, its page says what bob would read, she clears its memory, and afterwards
// bob reads neither the memory nor the old run.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentEnv, startAgents, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, md, testPrisma } from "./helpers/app.ts";
import { pendingOf, runTask } from "./helpers/approvals.ts";
import { obedientModel, SECRET, trustWorld, writtenBy } from "./helpers/trust.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("trust-transfer");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

describe("a transfer is a disclosure decision", () => {
  it("says who would read what before, clears the memory when asked, and keeps old runs from the new managers", async () => {
    const t = await trustWorld();
    const db = testPrisma();
    await db.studioMember.update({
      where: { studioId_userId: { studioId: t.w.studio.id, userId: t.w.bob.id } },
      data: { role: "admin" },
    });
    env.llm.setScript(obedientModel());
    await runTask({ app: () => app, env: () => env }, t.w, `Please read ${t.secretPath} and remember it.`);
    const run = await waitForRun(t.scout.id);
    expect(run.label).toEqual([{ studio: t.vault.id }]);
    // Its memory carries what it read there (written with the vault's label, as a run would).
    await db.user.update({
      where: { id: t.scout.id },
      data: { scratchpad: SECRET, scratchpadLabel: [{ studio: t.vault.id }] },
    });
    const page = await md(app, t.w, t.w.alice, "GET", "/subagents/scout");
    expect(page.body.replace(/\\/g, "")).toContain(
      "A transfer is a decision to disclose: To General: Bob Brown (@bob) would read what @scout read in Vault: its memory and 1 run.",
    );
    expect(page.body).toContain("Clear its memory first");
    const moved = await act(t.w, t.w.alice, "/subagents/scout", "transfer_subagent", {
      studio: "general",
      clear_memory: true,
    });
    expect(moved.notice).toContain("Its memory was cleared first.");
    expect(moved.notice).toContain("Bob Brown (@bob) would read what @scout read in Vault: 1 run.");
    expect((await db.user.findUniqueOrThrow({ where: { id: t.scout.id } })).scratchpad).toBe("");
    // Bob manages it now, and reads none of what it read in the vault.
    const memory = await md(app, t.w, t.w.bob, "GET", "/subagents/scout/memory");
    expect(memory.statusCode).toBe(200);
    expect(memory.body).not.toContain(SECRET);
    const old = await md(app, t.w, t.w.bob, "GET", `/subagents/scout/runs/${run.id}`);
    expect(old.statusCode).toBe(404);
    expect(old.body).not.toContain(SECRET);
    const usage = await md(app, t.w, t.w.bob, "GET", "/subagents/scout/usage");
    expect(usage.body).not.toContain(SECRET);
    // Alice can read where it read: the run still opens for her.
    expect((await md(app, t.w, t.w.alice, "GET", `/subagents/scout/runs/${run.id}`)).statusCode).toBe(200);
    expect((await writtenBy(t.scout.id)).join("\n")).not.toContain(SECRET);
    expect(await pendingOf(t.scout.id)).toEqual([]);
  });
});
