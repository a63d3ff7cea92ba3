// An agent never reads past its owner (issue 42, story 1), end to end: web, worker, Postgres,
// Redis and the obedient model over HTTP. Bob joins the vault, adds @bobbot and has it watch
// the vault; once bob is out, bobbot reads nothing of the vault on any path (pages, search,
// /whoami, notifications, MCP, its subscription, its runs), and removing bob takes it out too.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registry } from "../src/services/catalog/catalog.ts";
import { processed, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, runsOf, startAgents, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, login, md, readAs, testPrisma, waitFor } from "./helpers/app.ts";
import { pendingOf } from "./helpers/approvals.ts";
import { mcpClient } from "./helpers/mcp.ts";
import { obedientModel, SECRET, trustWorld, writtenBy } from "./helpers/trust.ts";

let app: FastifyInstance;
let env: AgentEnv;
const clients: Client[] = [];
beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ port: 0, host: "127.0.0.1" });
  env = await startAgents("owner-bound");
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await env.close();
  await app.close();
});

/** The trust world, with bob in the vault by its invite code, and his @bobbot in it watching it. */
async function bobInTheVault() {
  const t = await trustWorld();
  const db = testPrisma();
  const bobbot = await makeAgent(t.w, t.w.bob, "bobbot", { subscription_window_seconds: 0 });
  const vault = await db.studio.findUniqueOrThrow({ where: { id: t.vault.id } });
  await act(t.w, t.w.bob, "/studios", "join_studio", { invite_code: vault.inviteCode });
  await act(t.w, t.w.bob, "/subagents/bobbot", "add_to_studio", { studio: "vault" });
  await act(t.w, t.w.bob, "/studios/vault", "subscribe", { agent: "bobbot" });
  return { ...t, bobbot, agent: { ...t.w.bob, ...bobbot } };
}

const membership = (studioId: string, userId: string) =>
  testPrisma().studioMember.findUnique({ where: { studioId_userId: { studioId, userId } } });

describe("an agent never reads past its owner", () => {
  it("once bob is out of the vault, bobbot gets bob's 404 on every read path, even while still a member", async () => {
    const t = await bobInTheVault();
    // Before: bobbot reads the vault (so what follows can fail).
    expect((await md(app, t.w, t.agent, "GET", t.secretPath)).body).toContain(SECRET);
    // Bob leaves by a side door (no action): bobbot's own membership stays.
    await testPrisma().studioMember.delete({
      where: { studioId_userId: { studioId: t.vault.id, userId: t.w.bob.id } },
    });
    expect(await membership(t.vault.id, t.bobbot.id)).not.toBeNull();
    const asBob = await readAs(t.w, t.w.bob, t.secretPath);
    const asBot = await readAs(t.w, t.bobbot, t.secretPath);
    expect(asBot).toMatchObject({ status: 404, markdown: asBob.markdown });
    for (const path of [t.secretPath, "/studios/vault", "/studios/vault/notes"]) {
      const res = await md(app, t.w, t.agent, "GET", path);
      expect(res.statusCode, path).toBe(404);
      expect(res.body, path).not.toContain(SECRET);
    }
    for (const path of ["/search?q=acquisition", "/whoami", "/studios", "/notifications", "/u/alice"]) {
      const res = await md(app, t.w, t.agent, "GET", path);
      expect(res.statusCode, path).toBe(200);
      expect(res.body, path).not.toMatch(/March 3rd|Vault|\/studios\/vault/);
    }
    // Live: the page's stream answers as the page does.
    const live = await app.inject({
      method: "GET",
      url: t.secretPath,
      headers: { host: t.w.host, accept: "text/event-stream", authorization: `Bearer ${t.bobbot.token}` },
    });
    expect(live.statusCode).toBe(404);
    const client = await mcpClient(app, t.w, t.bobbot.token);
    clients.push(client);
    const read = (await client.callTool({
      name: "read_page",
      arguments: { path: t.secretPath },
    })) as CallToolResult;
    expect(JSON.stringify(read.content)).not.toContain(SECRET);
    expect(JSON.stringify(read.content)).toContain("404");
    // A new vault note wakes neither its subscription nor a mention of it.
    env.llm.setScript(obedientModel());
    const later = await act(t.w, t.w.alice, "/studios/vault", "create_note", {
      title: "Later",
      text: `@bobbot ${SECRET} again`,
    });
    const done = await processed(env, later.location.split("/").pop()!, "note.created");
    expect(done.runs).toEqual([]);
    // Its subscription was turned off when it came to flush, saying why.
    const stopped = await waitFor(() =>
      testPrisma().agentSubscription.findFirst({ where: { agentId: t.bobbot.id, enabled: false } }),
    );
    expect(stopped.disabledReason).toBe(
      "@bobbot's owner is no longer a member of #vault, so it cannot see what it watched.",
    );
    expect(await runsOf(t.bobbot.id)).toEqual([]);
    // Its owner's own order to copy it: the run reads bob's 404, and nothing is copied.
    await md(app, t.w, t.w.bob, "POST", "/subagents/bobbot/run/actions/run_task", {
      task: `COPY ${t.secretPath} TO ${t.bobNotePath}`,
    });
    const run = await waitForRun(t.bobbot.id);
    const tried = (await stepsOf(run.id)).find((s) => s.path === t.secretPath)!;
    expect(tried.detail).toMatchObject({ ok: false, status: 404 });
    expect(JSON.stringify(await stepsOf(run.id))).not.toContain(SECRET);
    expect((await writtenBy(t.bobbot.id)).join("\n")).not.toContain(SECRET);
    expect(await pendingOf(t.bobbot.id)).toEqual([]);
  });

  it("every studio page of the registry, and each of its actions, answers bobbot 404 once bob is out", async () => {
    const t = await bobInTheVault();
    const db = testPrisma();
    const decision = await act(t.w, t.w.alice, "/studios/vault", "create_decision", { question: "Sell?" });
    const commitment = await act(t.w, t.w.alice, "/studios/vault", "create_commitment", {
      title: "Close",
      critical_mass: 1,
    });
    await db.studioMember.delete({
      where: { studioId_userId: { studioId: t.vault.id, userId: t.w.bob.id } },
    });
    const ids: Record<string, string> = {
      studio: "vault",
      note: t.secretPath.split("/").pop()!,
      decision: decision.location.split("/").pop()!,
      commitment: commitment.location.split("/").pop()!,
    };
    const studioPages = registry.pages.filter((p) => p.pattern.startsWith("/studios/:studio"));
    expect(studioPages.length).toBeGreaterThan(8);
    for (const page of studioPages) {
      const url = page.pattern.replace(/:(\w+)/g, (_, name: string) => ids[name] ?? name);
      const got = await md(app, t.w, t.agent, "GET", url);
      expect(got.statusCode, url).toBe(404);
      for (const action of page.actions) {
        const posted = await md(app, t.w, t.agent, "POST", `${url}/actions/${action}`, {});
        expect(posted.statusCode, `${url} ${action}`).toBe(404);
      }
    }
    expect((await writtenBy(t.bobbot.id)).join("\n")).not.toContain(SECRET);
  });

  it("removing bob takes bobbot out with him, stops its subscription, tells bob, and inviting bob back does not restore it", async () => {
    const t = await bobInTheVault();
    const removed = await act(t.w, t.w.alice, "/studios/vault/members", "remove_member", { handle: "bob" });
    expect(removed.notice).toBe("Removed @bob, and @bobbot leaves it too");
    expect(await membership(t.vault.id, t.bobbot.id)).toBeNull();
    const sub = await testPrisma().agentSubscription.findFirstOrThrow({ where: { agentId: t.bobbot.id } });
    expect(sub).toMatchObject({
      enabled: false,
      disabledReason: "@bobbot left Vault with its owner, so it cannot see what it watched there.",
    });
    const told = await md(app, t.w, t.w.bob, "GET", "/notifications");
    expect(told.body).toContain("left Vault with you; 1 subscription there stopped");
    expect(told.body).toContain("Adding you back to Vault does not bring it back.");
    // The confirmation before the click says so (a browser's form asks first).
    const browser = await login(app, t.w, t.w.alice);
    const asked = await browser.post("/studios/vault/members", { _action: "remove_member", handle: "alice" });
    expect(asked.body).toContain("their agents leave it with them");
    const vault = await testPrisma().studio.findUniqueOrThrow({ where: { id: t.vault.id } });
    await act(t.w, t.w.bob, "/studios", "join_studio", { invite_code: vault.inviteCode });
    expect(await membership(t.vault.id, t.bobbot.id)).toBeNull();
    expect(
      await testPrisma().agentSubscription.findFirstOrThrow({ where: { agentId: t.bobbot.id } }),
    ).toMatchObject({ enabled: false });
    expect((await md(app, t.w, t.agent, "GET", t.secretPath)).statusCode).toBe(404);
  });

  it("a studio's agent reads only its own studio, whatever memberships it holds elsewhere", async () => {
    const t = await trustWorld();
    await act(t.w, t.w.alice, "/subagents/scout", "transfer_subagent", { studio: "general" });
    // Someone slips it into the vault again.
    await testPrisma().studioMember.create({
      data: { studioId: t.vault.id, userId: t.scout.id, tenantId: t.w.tenant.id },
    });
    const scout = { ...t.w.alice, ...t.scout };
    const res = await md(app, t.w, scout, "GET", t.secretPath);
    expect(res.statusCode).toBe(404);
    expect(res.body).not.toContain(SECRET);
    expect((await md(app, t.w, scout, "GET", "/whoami")).body).not.toContain("Vault");
    expect((await md(app, t.w, scout, "GET", "/search?q=acquisition")).body).not.toContain("March 3rd");
  });
});
