// The MCP server with the SDK's own client over a real listener: the protocol as the SDK
// negotiates it, tools generated from the registry, and every call answered as the markdown
// API answers it (same pages, refusals, approvals and field errors), in its tenant only.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registry } from "../src/services/catalog/catalog.ts";
import { paramsJsonSchema } from "../src/services/registry/json-schema.ts";
import { makeAgent } from "./helpers/agents.ts";
import { buildTestApp, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { hostFetch, mcpClient, portOf } from "./helpers/mcp.ts";

let app: FastifyInstance;
let w: World;
let alice: Client;

beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ port: 0, host: "127.0.0.1" });
  w = await makeWorld("mcp");
  alice = await mcpClient(app, w, w.alice.token);
});
afterAll(async () => {
  await alice?.close();
  await app?.close();
});

const textOf = (r: unknown) =>
  (r as CallToolResult).content.map((c) => (c.type === "text" ? c.text : "")).join("");
const call = (c: Client, name: string, args: Record<string, unknown>) =>
  c.callTool({ name, arguments: args }) as Promise<CallToolResult>;

/** A raw POST to /mcp, for what the SDK client would not send. */
function rawPost(host: string, headers: Record<string, string>) {
  return hostFetch(host, portOf(app))(`http://${host}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
  });
}

describe("the protocol", () => {
  it("initializes through the SDK: server info, tools capability, instructions", () => {
    expect(alice.getServerVersion()).toMatchObject({ name: "cadre" });
    expect(alice.getServerCapabilities()?.tools).toBeDefined();
    expect(alice.getInstructions()).toContain("/whoami");
  });

  it("lists read_page and every action on a page but managing credentials, with the registry's descriptions and param schemas", async () => {
    const { tools } = await alice.listTools();
    // Tokens and keys are managed over MCP only when the operator allows it (token-scopes.test.ts).
    const onPages = new Set(
      registry.pages.flatMap((p) => p.actions).filter((n) => !registry.actions.get(n)!.manage),
    );
    expect(onPages.has("create_note")).toBe(true);
    expect(tools.map((t) => t.name).sort()).toEqual(["read_page", ...onPages].sort());
    for (const t of tools.filter((x) => x.name !== "read_page")) {
      const a = registry.actions.get(t.name)!;
      const params = paramsJsonSchema(a);
      expect(t.description).toContain(a.description);
      expect(t.inputSchema.properties).toEqual({ page: expect.any(Object), ...params.properties });
      expect(t.inputSchema.required).toEqual(["page", ...(params.required ?? [])]);
    }
    const note = tools.find((t) => t.name === "create_note")!;
    expect(note.inputSchema.properties?.text).toMatchObject({ type: "string", maxLength: 20_000 });
  });

  it("refuses a missing, wrong, revoked or other tenant's token with 401 and WWW-Authenticate", async () => {
    const b = await makeWorld("mcpb");
    const bad = [
      await rawPost(w.host, {}),
      await rawPost(w.host, { authorization: "Bearer cadre_nope_nope" }),
      await rawPost(w.host, { authorization: `Bearer ${b.alice.token}` }),
    ];
    for (const res of bad) {
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="cadre"/);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBeTruthy();
    }
    const ok = await rawPost(w.host, { authorization: `Bearer ${w.alice.token}` });
    expect(ok.status).toBe(200);
    await testPrisma().apiToken.updateMany({
      where: { userId: w.carol.id },
      data: { revokedAt: new Date() },
    });
    expect((await rawPost(w.host, { authorization: `Bearer ${w.carol.token}` })).status).toBe(401);
  });
});

describe("tools answer as the markdown API does", () => {
  it("read_page returns the page's markdown, /whoami included", async () => {
    const r = await call(alice, "read_page", { path: "/whoami" });
    expect(r.isError).toBeFalsy();
    const http = await md(app, w, w.alice, "GET", "/whoami");
    expect(textOf(r)).toBe(http.body);
  });

  it("an action creates a note the markdown API then shows", async () => {
    const r = await call(alice, "create_note", {
      page: "/studios/general",
      title: "From MCP",
      text: "Hello over MCP",
    });
    expect(r.isError).toBeFalsy();
    const path = /→ (\/studios\/general\/notes\/\w+)/.exec(textOf(r))![1]!;
    const page = await md(app, w, w.alice, "GET", path);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Hello over MCP");
  });

  it("invalid params come back as the same field errors as over HTTP, as a tool error", async () => {
    const bad = { title: "x".repeat(300), text: "" };
    const r = await call(alice, "create_note", { page: "/studios/general", ...bad });
    const http = await md(app, w, w.alice, "POST", "/studios/general/actions/create_note", bad);
    expect(http.statusCode).toBe(400);
    expect([r.isError, textOf(r)]).toEqual([true, http.body]);
  });

  it("another tenant's object, a page it may not see, a missing page: not found, as a tool error", async () => {
    const b = await makeWorld("mcpc");
    const theirs = await md(app, b, b.alice, "POST", "/studios/general/actions/create_note", {
      text: "B's secret",
    });
    const path = String(theirs.headers.location);
    for (const p of [path, "/studios/nowhere", "/no/such/page"]) {
      const r = await call(alice, "read_page", { path: p });
      expect([r.isError, textOf(r)]).toEqual([true, expect.stringContaining("404")]);
      expect(textOf(r)).not.toContain("B's secret");
    }
    const act = await call(alice, "add_comment", { page: path, text: "hi" });
    expect([act.isError, textOf(act)]).toEqual([true, expect.stringContaining("404")]);
  });

  it("a subagent's token: only its granted tools, and an approval-required action comes back queued", async () => {
    const scout = await makeAgent(w, w.alice, "scout", {
      capabilities: ["create_note", "add_comment"],
      requires_approval: ["create_note"],
    });
    const agent = await mcpClient(app, w, scout.token);
    try {
      const names = (await agent.listTools()).tools.map((t) => t.name);
      expect(names).toContain("create_note");
      expect(names).not.toContain("create_decision");
      expect(names).not.toContain("approve_action");
      const r = await call(agent, "create_note", { page: "/studios/general", text: "Needs a look" });
      expect(r.isError).toBeFalsy();
      expect(textOf(r)).toMatch(/Queued for approval as #\w+/);
      const pending = await testPrisma().agentPendingAction.findMany({ where: { agentId: scout.id } });
      expect(pending.map((p) => [p.actionName, p.status])).toEqual([["create_note", "pending"]]);
      const refused = await call(agent, "create_decision", {
        page: "/studios/general",
        question: "Q?",
        options: "a\nb",
      });
      expect([refused.isError, textOf(refused)]).toEqual([true, expect.stringContaining("403")]);
    } finally {
      await agent.close();
    }
  });
});
