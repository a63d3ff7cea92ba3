// Each MCP tool call's audit row records the tool's own outcome, not the 200 of the /mcp
// POST that carried it: an `act` token trying to mint a token (403), reading a page that is
// not there (404) and sending a bad field (400) show as such on the token's "Recent calls",
// in markdown and HTML, and a refused call is found by its status.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiToken } from "../src/services/tokens.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { mcpClient } from "./helpers/mcp.ts";

let app: FastifyInstance;
let w: World;
let client: Client;
let tokenId: string;

beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ port: 0, host: "127.0.0.1" });
  w = await makeWorld("aud");
  const made = await createApiToken(testPrisma(), w.tenant.id, w.alice.id, "act only", { scope: "act" });
  tokenId = made.row.id;
  client = await mcpClient(app, w, made.token);
});
afterAll(async () => {
  await client?.close();
  await app?.close();
});

const call = (name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

/** The token's rows by tool, once `count` of its tool calls are written. */
async function toolRows(count: number) {
  return waitFor(async () => {
    await app.auditLog.flush();
    const rows = await testPrisma().apiCall.findMany({
      where: { tokenId, tool: { not: null } },
      orderBy: { createdAt: "asc" },
    });
    return rows.length >= count ? rows : null;
  }, 15_000);
}

describe("an MCP call's audit row", () => {
  it("records 201, 403, 404 and 400 as the tool answered them; the token's page shows them and finds the refused", async () => {
    const made = await call("create_note", { page: "/studios/general", text: "audited over MCP" });
    expect(made.isError).toBeFalsy();
    const mint = await call("create_api_token", { page: "/u/alice/settings/tokens", name: "copy" });
    expect(mint.isError).toBe(true);
    const missing = await call("read_page", { path: "/studios/nowhere" });
    expect(missing.isError).toBe(true);
    const bad = await call("create_note", { page: "/studios/general", text: "" });
    expect(bad.isError).toBe(true);

    const rows = await toolRows(4);
    expect(rows.map((r) => [r.tool, r.status])).toEqual([
      ["create_note", 201],
      ["create_api_token", 403],
      ["read_page", 404],
      ["create_note", 400],
    ]);
    expect(rows.every((r) => r.method === "POST")).toBe(true);
    expect(await testPrisma().apiToken.count({ where: { userId: w.alice.id } })).toBe(2);

    const page = `/u/alice/settings/tokens/${tokenId}`;
    const markdown = (await md(app, w, w.alice, "GET", page)).body;
    expect(markdown).toMatch(
      /tool `create_api_token` on `\/u\/alice\/settings\/tokens` \| `create_api_token` \| 403 \|/,
    );
    expect(markdown).toMatch(/tool `read_page` on `\/studios\/nowhere` \| — \| 404 \|/);
    expect(markdown).toMatch(/tool `create_note` on `\/studios\/general` \| `create_note` \| 400 \|/);

    const browser = await login(app, w, w.alice);
    const html = (await browser.get(page)).body;
    expect(html).toMatch(/<code>create_api_token<\/code><\/td>\s*<td>403<\/td>/);
    expect(html).toMatch(/<code>\/studios\/nowhere<\/code><\/td>\s*<td>—<\/td>\s*<td>404<\/td>/);

    const refused = (await md(app, w, w.alice, "GET", `${page}?status=refused`)).body;
    expect(refused).toContain("Showing refused calls (4xx)");
    expect(refused).toContain("`create_api_token`");
    expect(refused).toContain("`/studios/nowhere`");
    expect(refused).not.toMatch(/\| 201 \|/);
    const forbidden = (await md(app, w, w.alice, "GET", `${page}?status=403`)).body;
    expect(forbidden.match(/^\| \d{4}-.*\|$/gm)).toHaveLength(1);
    expect(forbidden).toContain("`create_api_token`");
  }, 60_000);
});
