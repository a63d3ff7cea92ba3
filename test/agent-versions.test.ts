// Versioned agent settings (issue 47): every change makes a numbered version with its words and
// its diff; restore brings an older one back exactly, as a new version, audited, through the
// setters' checks; only its managers see or restore them; a run records its version.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { versionedSettings } from "../src/services/agents/core/settings.ts";
import { GRANTABLE } from "../src/services/agents/policy/capabilities.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { makeAgent } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md, testPrisma } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

const db = testPrisma;
const BASE = "/subagents/scout";

/** A world whose alice created @scout through the registry (its version 1), and her markdown poster. */
async function setup() {
  const w = await makeWorld();
  const created = await md(app, w, w.alice, "POST", "/subagents/actions/create_subagent", {
    name: "Scout",
    handle: "scout",
    identity_prompt: "You help the team.\nBe brief.",
  });
  expect(created.statusCode).toBe(201);
  const agent = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "scout" } });
  const post = (page: string, action: string, body: Record<string, unknown>) =>
    md(app, w, w.alice, "POST", `${page}/actions/${action}`, body);
  return { w, agent, post };
}

const versionsOf = (agentId: string) =>
  db().agentVersion.findMany({ where: { agentId }, orderBy: { number: "asc" } });

const settingsNow = async (agentId: string) =>
  versionedSettings((await db().user.findUniqueOrThrow({ where: { id: agentId } })).agentConfig);

/** Every grantable action's level for set_capabilities: those named `on`, the rest off. */
const levels = (on: string[]) => ({
  ...Object.fromEntries(GRANTABLE.map((g) => [g, on.includes(g) ? "on" : "off"])),
  approval_mode: "continue",
  approval_expiry_hours: 24,
});

describe("a change makes a version", () => {
  it("created is version 1; each settings action makes the next, in words and as a diff", async () => {
    const { w, agent, post } = await setup();
    expect((await versionsOf(agent.id)).map((v) => [v.number, v.changes])).toEqual([[1, ["Created"]]]);
    const updated = await post(BASE, "update_subagent", {
      identity_prompt: "You help the team.\nBe thorough.",
      model: "gpt-4o-mini",
      max_steps: 12,
    });
    expect(updated.statusCode).toBe(200);
    expect((await post(`${BASE}/settings`, "set_capabilities", levels(["create_note"]))).statusCode).toBe(
      200,
    );
    const rule = {
      name: "no budget",
      action: "create_note",
      decision: "deny",
      param_patterns: "text=budget",
    };
    expect((await post(`${BASE}/settings`, "add_rule", rule)).statusCode).toBe(200);
    const versions = await versionsOf(agent.id);
    expect(versions.map((v) => [v.number, v.authorId])).toEqual([
      [1, w.alice.id],
      [2, w.alice.id],
      [3, w.alice.id],
      [4, w.alice.id],
    ]);
    expect(versions[1]!.changes).toEqual([
      "Identity prompt: rewritten (1 line added, 1 removed)",
      "Model: (none) → gpt-4o-mini",
      "Max steps: 30 → 12",
    ]);
    expect(versions[2]!.changes).toEqual([
      "Capabilities: added create_note; removed add_comment, confirm_read",
    ]);
    expect(versions[3]!.changes).toEqual(["Rules: added “no budget”: create_note when text ~ budget → deny"]);
    // Each version holds the settings it left: the last is the agent's own now.
    expect(versions[3]!.settings).toEqual(JSON.parse(JSON.stringify(await settingsNow(agent.id))));

    const list = (await md(app, w, w.alice, "GET", `${BASE}/versions`)).body;
    expect(list).toContain("# Versions of Scout");
    expect(list).toContain("## Versions (4)");
    expect(list).toContain("[Version 4](/subagents/scout/versions/4) (current)");
    // The words as markdown text: escaped, so a rule's or a model's name never becomes a link.
    expect(list).toContain("- Model: \\(none\\) → gpt-4o-mini");
    expect(list).toContain("- Capabilities: added create\\_note; removed add\\_comment, confirm\\_read");
    const two = await md(app, w, w.alice, "GET", `${BASE}/versions/2`);
    expect(two.statusCode).toBe(200);
    expect(two.body).toContain("## Diff against [version 1](/subagents/scout/versions/1)");
    expect(two.body).toContain("3 lines added, 3 removed.");
    for (const line of [
      "  identity_prompt:",
      "    You help the team.",
      "-   Be brief.",
      "+   Be thorough.",
      "- model: (none)",
      "+ model: gpt-4o-mini",
      "- max_steps: 30",
      "+ max_steps: 12",
    ])
      expect(two.body).toContain(`\n${line}\n`);
    // The agent's page links its versions.
    const agentPage = (await md(app, w, w.alice, "GET", BASE)).body;
    expect(agentPage).toContain("[Versions](/subagents/scout/versions)");
    expect(agentPage).toContain(
      "| settings | [version 4](/subagents/scout/versions/4) ([all versions](/subagents/scout/versions)) |",
    );
  });

  it("a save that changes nothing versioned makes no version; an agent made before versions gets its old settings as version 1", async () => {
    const { agent, post } = await setup();
    expect((await post(BASE, "update_subagent", { max_steps: 30 })).statusCode).toBe(200);
    expect(await versionsOf(agent.id)).toHaveLength(1);
    const w = await makeWorld();
    const old = await makeAgent(w, w.alice, "scout", { max_steps: 7 });
    expect(await versionsOf(old.id)).toEqual([]);
    await md(app, w, w.alice, "POST", `${BASE}/actions/update_subagent`, { max_steps: 8 });
    const versions = await versionsOf(old.id);
    expect(versions.map((v) => [v.number, v.authorId, v.changes])).toEqual([
      [1, null, ["Its settings when versions began to be kept"]],
      [2, w.alice.id, ["Max steps: 7 → 8"]],
    ]);
  });
});

describe("restore", () => {
  it("brings back an older version's settings exactly, as a new version, with its audit event", async () => {
    const { w, agent, post } = await setup();
    const first = await settingsNow(agent.id);
    await post(BASE, "update_subagent", { description: "Reads the news", model: "gpt-4o-mini" });
    await post(`${BASE}/settings`, "set_capabilities", levels(["create_note", "vote"]));
    await post(`${BASE}/settings`, "add_rule", { name: "all", action: "*", decision: "require_approval" });
    const res = await post(`${BASE}/versions/1`, "restore_agent_version", { version: 1 });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Restored version 1 as version 5");
    expect(await settingsNow(agent.id)).toEqual(first);
    const five = (await versionsOf(agent.id)).at(-1)!;
    expect([five.number, five.restoredFrom, five.authorId]).toEqual([5, 1, w.alice.id]);
    expect(five.changes).toContain("Restored version 1");
    expect(five.changes).toContain("Model: gpt-4o-mini → (none)");
    const events = await db().event.findMany({
      where: { tenantId: w.tenant.id, type: "subagent.version_restored" },
    });
    expect(events.map((e) => [e.actorId, e.subjectId, e.payload])).toEqual([
      [w.alice.id, agent.id, { restored: 1, version: 5 }],
    ]);
    const page = (await md(app, w, w.alice, "GET", `${BASE}/versions/5`)).body;
    expect(page).toContain("restored version 1");
    // Restoring the settings it has already changes nothing.
    const again = await post(`${BASE}/versions`, "restore_agent_version", { version: 1 });
    expect(again.statusCode).toBe(200);
    expect(again.body).toContain("It already has the settings of version 1: nothing changed");
    expect(await versionsOf(agent.id)).toHaveLength(5);
  });

  it("from the browser's form, on the version's page", async () => {
    const { w, agent, post } = await setup();
    await post(BASE, "update_subagent", { max_steps: 9 });
    const browser = await login(app, w, w.alice);
    const html = (await browser.get(`${BASE}/versions/1`)).body;
    expect(html).toContain("Restore version 1");
    const res = await browser.post(`${BASE}/versions/1/actions/restore_agent_version`, { version: "1" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/subagents/scout/versions/3");
    expect((await settingsNow(agent.id)).max_steps).toBe(30);
  });

  it("refuses what its setters would refuse now, saying why, and writes nothing", async () => {
    const { w, agent, post } = await setup();
    await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
    const price = { model: "house-model", input: 1, cached_input: 0.5, output: 2 };
    expect((await post("/usage/pricing", "set_model_price", price)).statusCode).toBe(200);
    await post(BASE, "update_subagent", { model: "house-model" });
    await post(`${BASE}/settings`, "set_capabilities", levels(["create_note"]));
    await post(BASE, "update_subagent", { model: "" });
    expect((await post("/usage/pricing", "remove_model_price", { model: "house-model" })).statusCode).toBe(
      200,
    );
    const humanOnly = Object.fromEntries(GRANTABLE.map((g) => [g, g === "create_note"]));
    expect((await post("/settings/agents", "set_human_only", humanOnly)).statusCode).toBe(200);
    const before = [await settingsNow(agent.id), (await versionsOf(agent.id)).length];
    const model = await post(`${BASE}/versions`, "restore_agent_version", { version: 2 });
    expect(model.statusCode).toBe(409);
    expect(model.body).toContain("Version 2 cannot be restored, nothing was changed: Model: “house-model”");
    expect(model.body).toContain("is not in this workspace's model catalogue");
    const human = await post(`${BASE}/versions`, "restore_agent_version", { version: 3 });
    expect(human.statusCode).toBe(409);
    expect(human.body).toContain("`create_note`: human-only in this workspace");
    expect([await settingsNow(agent.id), (await versionsOf(agent.id)).length]).toEqual(before);
  });

  it("refuses a connected tool its owner can no longer grant, naming it, and writes nothing", async () => {
    const { w, agent, post } = await setup();
    const now = await settingsNow(agent.id);
    const latest = (await versionsOf(agent.id)).at(-1)!.number;
    // A version that granted a tool of a connection since removed (settings kept as versions are).
    const capabilities = [...(now.capabilities as string[]), "gh__create_issue"];
    await db().agentVersion.create({
      data: {
        id: `v${latest + 1}${agent.id}`.slice(0, 24),
        tenantId: w.tenant.id,
        agentId: agent.id,
        number: latest + 1,
        authorId: w.alice.id,
        changes: ["Granted gh__create_issue"],
        settings: { ...now, capabilities },
      },
    });
    const before = [await settingsNow(agent.id), (await versionsOf(agent.id)).length];
    const res = await post(`${BASE}/versions`, "restore_agent_version", { version: latest + 1 });
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain("`gh__create_issue`: no longer among the tools its owner can grant");
    expect([await settingsNow(agent.id), (await versionsOf(agent.id)).length]).toEqual(before);
  });

  it("an unknown version is a 400 naming the field by its label; its page is a 404", async () => {
    const { w, post } = await setup();
    const res = await post(`${BASE}/versions`, "restore_agent_version", { version: 99 });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("@scout has no version 99 (its versions are 1 to 1)");
    expect(Object.keys(issuesOf(res.body)).join()).toMatch(/Version|version/);
    const browser = await login(app, w, w.alice);
    const form = await browser.post(`${BASE}/versions/actions/restore_agent_version`, { version: "99" });
    expect(form.statusCode).toBe(400);
    expect(form.body).toContain("Version");
    expect(form.body).toContain("no version 99");
    for (const path of ["/versions/99", "/versions/abc", "/versions/0"])
      expect((await md(app, w, w.alice, "GET", `${BASE}${path}`)).statusCode).toBe(404);
  });
});

describe("only its managers", () => {
  it("another person gets 404 from its versions pages and its restore; the agent itself may not restore", async () => {
    const { w, agent, post } = await setup();
    await post(BASE, "update_subagent", { max_steps: 9 });
    for (const who of [w.bob, w.carol]) {
      for (const path of ["/versions", "/versions/1"])
        expect((await md(app, w, who, "GET", `${BASE}${path}`)).statusCode).toBe(404);
      const res = await md(app, w, who, "POST", `${BASE}/versions/actions/restore_agent_version`, {
        version: 1,
      });
      expect(res.statusCode).toBe(404);
    }
    const token = await createApiToken(db(), w.tenant.id, agent.id, "self", { scope: "manage" });
    const self = { ...w.alice, id: agent.id, handle: "scout", token: token.token };
    const res = await md(app, w, self, "POST", `${BASE}/versions/actions/restore_agent_version`, {
      version: 1,
    });
    expect([403, 404]).toContain(res.statusCode);
    expect((await settingsNow(agent.id)).max_steps).toBe(9);
    expect(await versionsOf(agent.id)).toHaveLength(2);
  });

  it("a studio's agent: a plain member gets 403 saying who manages it", async () => {
    const w = await makeWorld();
    await md(app, w, w.alice, "POST", "/subagents/actions/create_subagent", {
      name: "Helper",
      handle: "helper",
      studio: "general",
    });
    const res = await md(app, w, w.bob, "GET", "/subagents/helper/versions");
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("Only the admins of General manage @helper");
    expect((await md(app, w, w.alice, "GET", "/subagents/helper/versions/1")).statusCode).toBe(200);
  });
});

describe("runs record their version", () => {
  it("a run keeps the version it was queued under, and its page links it for its managers", async () => {
    const { w, agent, post } = await setup();
    await post(BASE, "update_subagent", { max_steps: 9 });
    const queued = await post(`${BASE}/run`, "run_task", { task: "Look around" });
    expect(queued.statusCode).toBe(201);
    const run = await db().subagentTaskRun.findFirstOrThrow({ where: { agentId: agent.id } });
    expect((run.policy as { version?: number }).version).toBe(2);
    await post(BASE, "update_subagent", { max_steps: 10 });
    const page = (await md(app, w, w.alice, "GET", `${BASE}/runs/${run.id}`)).body;
    expect(page).toContain("[Ran under version 2](/subagents/scout/versions/2)");
  });
});
