// One label per agent (issue 42, story 4): what one of an agent's tokens read holds what any
// other of its tokens or MCP sessions writes; clearing it is its managers' decision, worded
// as a disclosure. Real web, Postgres and MCP over HTTP.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiToken } from "../src/services/tokens.ts";
import { buildTestApp, login, md, testPrisma } from "./helpers/app.ts";
import { mcpClient } from "./helpers/mcp.ts";
import { SECRET, trustWorld, writtenBy } from "./helpers/trust.ts";

let app: FastifyInstance;
const clients: Client[] = [];
beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await app.close();
});

const text = (r: CallToolResult) => r.content.map((x) => (x.type === "text" ? x.text : "")).join("");

describe("one label per agent", () => {
  it("a second token of scout starts where the first left off: its post to General waits, on MCP and the markdown API", async () => {
    const t = await trustWorld();
    const db = testPrisma();
    const second = await createApiToken(db, t.w.tenant.id, t.scout.id, "second", { scope: "manage" });
    const first = await mcpClient(app, t.w, t.scout.token);
    clients.push(first);
    const read = (await first.callTool({
      name: "read_page",
      arguments: { path: t.secretPath },
    })) as CallToolResult;
    expect(text(read)).toContain(SECRET);
    expect((await db.user.findUniqueOrThrow({ where: { id: t.scout.id } })).agentLabel).toEqual([
      { studio: t.vault.id },
    ]);
    // The other token has read nothing itself, and still carries what the agent read.
    const other = await mcpClient(app, t.w, second.token);
    clients.push(other);
    const posted = (await other.callTool({
      name: "add_comment",
      arguments: { page: t.bobNotePath, text: SECRET },
    })) as CallToolResult;
    expect(text(posted)).toMatch(/Queued for approval as #\w+: This comment in General would show 1 person/);
    const scout = { ...t.w.alice, ...t.scout, token: second.token };
    const note = await md(app, t.w, scout, "POST", "/studios/general/actions/create_note", { text: SECRET });
    expect(note.statusCode).toBe(202);
    expect((await writtenBy(t.scout.id)).join("\n")).not.toContain(SECRET);
  });

  it("clearing it is a manager's decision to disclose, said before the click; the agent cannot clear its own", async () => {
    const t = await trustWorld();
    const scout = { ...t.w.alice, ...t.scout };
    await md(app, t.w, scout, "GET", t.secretPath);
    const page = await md(app, t.w, t.w.alice, "GET", "/subagents/scout/memory");
    expect(page.body).toContain(
      "They have read in Vault: what they write where others read waits for your approval. Clearing it is your decision to disclose that",
    );
    const byAgent = await md(
      app,
      t.w,
      scout,
      "POST",
      "/subagents/scout/memory/actions/clear_agent_label",
      {},
    );
    expect(byAgent.statusCode).toBe(404);
    const browser = await login(app, t.w, t.w.alice);
    const asked = await browser.post("/subagents/scout/memory", { _action: "clear_agent_label" });
    expect(asked.body).toContain("This is your decision to disclose");
    const db = testPrisma();
    expect((await db.user.findUniqueOrThrow({ where: { id: t.scout.id } })).agentLabel).not.toEqual([]);
    const done = await md(
      app,
      t.w,
      t.w.alice,
      "POST",
      "/subagents/scout/memory/actions/clear_agent_label",
      {},
    );
    expect(done.statusCode).toBe(200);
    expect((await db.user.findUniqueOrThrow({ where: { id: t.scout.id } })).agentLabel).toEqual([]);
    expect(
      await db.apiToken.findMany({ where: { userId: t.scout.id, NOT: { label: { equals: [] } } } }),
    ).toEqual([]);
    expect((await writtenBy(t.scout.id)).join("\n")).not.toContain(SECRET);
  });
});
