// /settings/agents and the model catalogue, over every surface: the markdown API, the
// browser's forms, and MCP. Admins change the workspace's agent settings, each change in the
// audit trail with who and when; members read the page and change nothing through any
// surface. A model outside the workspace's catalogue is a 400 naming the field, with the
// closest names; a provider key's listing joins the catalogue, and a refresh replaces it.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { agentConfig, SETTING_CHANGED, tenantSettings } from "../src/services/agents/core/settings.ts";
import { GRANTABLE } from "../src/services/agents/policy/capabilities.ts";
import { makeAgent } from "./helpers/agents.ts";
import { actionNames, buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { fakeKey } from "./helpers/keys.ts";
import { mcpClient } from "./helpers/mcp.ts";

let app: FastifyInstance;
let provider: FakeLlm;
const clients: Client[] = [];
beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ port: 0, host: "127.0.0.1" });
  provider = await startFakeLlm();
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await provider.close();
  await app.close();
});

const db = testPrisma;
const PAGE = "/settings/agents";
const settingsOf = async (w: World) =>
  tenantSettings(await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } }));
const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === "text" ? c.text : "")).join("");

/** A world whose alice is a workspace admin (bob and carol are not). */
async function adminWorld() {
  const w = await makeWorld("wsa");
  await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
  return w;
}

async function mcp(w: World, token: string) {
  const c = await mcpClient(app, w, token);
  clients.push(c);
  return c;
}

describe("/settings/agents", () => {
  it("admins change every setting (markdown, form and MCP); each change is audited with who and when", async () => {
    const w = await adminWorld();
    const post = (action: string, body: Record<string, unknown>) =>
      md(app, w, w.alice, "POST", `${PAGE}/actions/${action}`, body);
    const limits = await post("set_agent_limits", {
      default_model: "gpt-4o-mini",
      trigger_rate_per_minute: 5,
      workspace_trigger_rate_per_minute: 40,
      chain_depth_limit: 2,
    });
    expect(limits.statusCode, limits.body).toBe(200);
    const caps = await post(
      "set_default_capabilities",
      Object.fromEntries(GRANTABLE.map((g) => [g, g === "add_comment" || g === "create_note"])),
    );
    expect(caps.statusCode, caps.body).toBe(200);
    // The browser's form, as a person posts it.
    const browser = await login(app, w, w.alice);
    const off = await browser.post(`${PAGE}/actions/set_agents_enabled`, { agents: "off" });
    expect(off.statusCode).toBe(303);
    // And MCP, with the same action and params.
    const viaMcp = await (await mcp(w, w.alice.token)).callTool({
      name: "set_agent_limits",
      arguments: { page: PAGE, chain_depth_limit: 4 },
    });
    expect(viaMcp.isError, textOf(viaMcp as CallToolResult)).toBeFalsy();

    expect(await settingsOf(w)).toMatchObject({
      default_model: "gpt-4o-mini",
      trigger_rate_per_minute: 5,
      workspace_trigger_rate_per_minute: 40,
      chain_depth_limit: 4,
      agents_enabled: false,
      default_capabilities: ["create_note", "add_comment"],
    });
    const trail = await db().event.findMany({
      where: { tenantId: w.tenant.id, type: SETTING_CHANGED },
      orderBy: { createdAt: "asc" },
    });
    expect(trail.map((e) => [e.actorId, (e.payload as { setting: string }).setting])).toEqual([
      [w.alice.id, "default_model"],
      [w.alice.id, "trigger_rate_per_minute"],
      [w.alice.id, "workspace_trigger_rate_per_minute"],
      [w.alice.id, "chain_depth_limit"],
      [w.alice.id, "default_capabilities"],
      [w.alice.id, "agents_enabled"],
      [w.alice.id, "chain_depth_limit"],
    ]);
    expect(trail[3]!.payload).toEqual({ setting: "chain_depth_limit", from: 3, to: 2 });
    // Saving what is already set records nothing.
    await post("set_agent_limits", { chain_depth_limit: 4 });
    expect(await db().event.count({ where: { tenantId: w.tenant.id, type: SETTING_CHANGED } })).toBe(7);
    const page = await md(app, w, w.alice, "GET", PAGE);
    expect(page.body).toContain("**Off.**");
    expect(page.body).toMatch(/· @alice · Chain depth: `2` → `4`/);
    expect(page.body).toMatch(/· @alice · Agents on: `true` → `false`/);
    // A new agent starts with what the admins chose.
    const made = await md(app, w, w.bob, "POST", "/subagents/actions/create_subagent", {
      name: "New",
      handle: "newbie",
    });
    expect(made.statusCode, made.body).toBe(201);
    const newbie = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "newbie" } });
    expect(agentConfig(newbie).capabilities).toEqual(["create_note", "add_comment"]);
  });

  it("members read the page; they cannot change a setting through the markdown API, a form or MCP", async () => {
    const w = await adminWorld();
    const before = await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
    const page = await md(app, w, w.bob, "GET", PAGE);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Only workspace admins change these");
    expect(actionNames(page.body)).toEqual([]);
    const attempts: Record<string, Record<string, unknown>> = {
      set_agents_enabled: { agents: "off" },
      set_agent_limits: { chain_depth_limit: 9 },
      set_default_capabilities: { create_note: true },
      set_human_only: { create_note: true },
      refresh_models: {},
    };
    const browser = await login(app, w, w.bob);
    const bobMcp = await mcp(w, w.bob.token);
    for (const [action, body] of Object.entries(attempts)) {
      const viaMd = await md(app, w, w.bob, "POST", `${PAGE}/actions/${action}`, body);
      expect([action, viaMd.statusCode]).toEqual([action, 403]);
      expect(viaMd.body).toContain("only workspace admins");
      const form = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, String(v)]));
      const viaForm = await browser.post(`${PAGE}/actions/${action}`, form);
      expect([action, viaForm.statusCode]).toEqual([action, 403]);
      const viaMcp = (await bobMcp.callTool({
        name: action,
        arguments: { page: PAGE, ...body },
      })) as CallToolResult;
      expect([action, viaMcp.isError]).toEqual([action, true]);
      expect(textOf(viaMcp)).toContain("only workspace admins");
    }
    expect(await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } })).toEqual(before);
    expect(await db().event.count({ where: { tenantId: w.tenant.id, type: SETTING_CHANGED } })).toBe(0);
  });

  it("shows admins a banner on every page while agents are off; members see none", async () => {
    const w = await adminWorld();
    await md(app, w, w.alice, "POST", `${PAGE}/actions/set_agents_enabled`, { agents: "off" });
    const alice = await login(app, w, w.alice);
    const bob = await login(app, w, w.bob);
    expect((await alice.get("/studios")).body).toContain("Agents are switched off in this workspace");
    expect((await bob.get("/studios")).body).not.toContain("Agents are switched off");
    await md(app, w, w.alice, "POST", `${PAGE}/actions/set_agents_enabled`, { agents: "on" });
    expect((await alice.get("/studios")).body).not.toContain("Agents are switched off");
  });
});

describe("the model catalogue", () => {
  it("refuses a model outside it with a 400 naming the field and the closest names, on every surface", async () => {
    const w = await adminWorld();
    const scout = await makeAgent(w, w.alice, "scout", { model: "gpt-4o" });
    const U = `/subagents/${scout.handle}/actions/update_subagent`;
    const bad = await md(app, w, w.alice, "POST", U, { model: "gpt-4o-mni" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toMatch(
      /model.*“gpt-4o-mni” is not in this workspace's model catalogue \(did you mean gpt-4o-mini/,
    );
    const fall = await md(app, w, w.alice, "POST", U, { fallback_models: "gpt-4o-mini, claude-sonet-4" });
    expect(fall.statusCode).toBe(400);
    expect(fall.body).toContain(
      "“claude-sonet-4” is not in this workspace's model catalogue (did you mean claude-sonnet-4",
    );
    const browser = await login(app, w, w.alice);
    const form = await browser.post(U, { model: "gpt-4o-mni" });
    expect(form.statusCode).toBe(400);
    // The browser's page names the field by its label, at the field.
    expect(form.body).toMatch(/class="field-error"[^>]*>“gpt-4o-mni” is not in this workspace/);
    const viaMcp = (await (
      await mcp(w, w.alice.token)
    ).callTool({
      name: "update_subagent",
      arguments: { page: `/subagents/${scout.handle}`, model: "gtp-5" },
    })) as CallToolResult;
    expect(viaMcp.isError).toBe(true);
    expect(textOf(viaMcp)).toMatch(/“gtp-5” is not in this workspace's model catalogue \(did you mean gpt-5/);
    const limits = await md(app, w, w.alice, "POST", `${PAGE}/actions/set_agent_limits`, {
      default_model: "gpt-5-nanoo",
    });
    expect(limits.statusCode).toBe(400);
    expect(limits.body).toContain("did you mean gpt-5-nano");
    const created = await md(app, w, w.alice, "POST", "/subagents/actions/create_subagent", {
      name: "X",
      handle: "xbot",
      model: "no-such-model-at-all",
    });
    expect(created.statusCode).toBe(400);
    expect(agentConfig(await db().user.findUniqueOrThrow({ where: { id: scout.id } })).model).toBe("gpt-4o");
    // Catalogue names are accepted, fallbacks in order; a dated id of a priced model too.
    const ok = await md(app, w, w.alice, "POST", U, {
      model: "gpt-4o-2024-08-06",
      fallback_models: "gpt-4o-mini, claude-sonnet-4",
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(agentConfig(await db().user.findUniqueOrThrow({ where: { id: scout.id } }))).toMatchObject({
      model: "gpt-4o-2024-08-06",
      fallback_models: ["gpt-4o-mini", "claude-sonnet-4"],
    });
  });

  it("a key's listed models join it when the key is tested; an admin's refresh replaces them", async () => {
    const w = await adminWorld();
    provider.setModels(["house-model-1"]);
    const keys = `/u/${w.alice.handle}/settings/api-keys`;
    const added = await md(app, w, w.alice, "POST", `${keys}/actions/add_api_key`, {
      label: "House",
      provider: "openai_compatible",
      base_url: provider.url,
      key: fakeKey(),
    });
    expect(added.statusCode, added.body).toBe(201);
    const key = await db().agentApiKey.findFirstOrThrow({ where: { tenantId: w.tenant.id } });
    await md(app, w, w.alice, "POST", `${keys}/actions/test_api_key`, { key_id: key.id });
    await makeAgent(w, w.alice, "scout");
    const set = (model: string) =>
      md(app, w, w.alice, "POST", "/subagents/scout/actions/update_subagent", { model });
    expect((await set("house-model-1")).statusCode).toBe(200);
    // Her agent's page offers it under her key's name; the settings page lists it too.
    const page = await (await login(app, w, w.alice)).get("/subagents/scout");
    expect(page.body).toContain('<optgroup label="Key “House” (OpenAI-compatible)">');
    expect(page.body).toMatch(
      /<option value="house-model-1" selected>house-model-1 — no list price<\/option>/,
    );
    provider.setModels(["house-model-2"]);
    const refreshed = await md(app, w, w.alice, "POST", `${PAGE}/actions/refresh_models`, {});
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.body).toContain("1 model(s) listed");
    const listed = await md(app, w, w.bob, "GET", PAGE);
    expect(listed.body).toContain("`house-model-2`");
    expect(listed.body).not.toContain("`house-model-1`");
    // Bob does not see alice's key's name: its models are "a key in the workspace".
    expect(listed.body).toContain("### A key in the workspace \\(OpenAI-compatible\\)");
    expect(listed.body).not.toContain("House");
    expect((await set("house-model-2")).statusCode).toBe(200);
    const gone = await set("house-model-1");
    expect(gone.statusCode).toBe(400);
    expect(gone.body).toContain("did you mean house-model-2");
  });
});
