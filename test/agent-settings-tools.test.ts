// Connected tools on an agent's settings page (issue 45): each tool its owner can grant from
// their own and their studios' connections, with its connection, audience and what it says of
// itself; `set_tool_level` in both formats; a grant kept by the capabilities form; rules that
// name a tool and match its arguments. A real SDK MCP server lists the tools (no run here:
// tool-runs*.test.ts call them).
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { makeAgent } from "./helpers/agents.ts";
import { actionNames, buildTestApp, login, makeWorld, md } from "./helpers/app.ts";
import { configOf, permissions } from "./helpers/approvals.ts";
import { startMcpServer, type TestMcpServer } from "./helpers/mcp-servers.ts";
import { closeIssue, connect, searchIssues, TOKEN } from "./helpers/tool-runs.ts";

const PAGE = "/subagents/scout/settings";
let app: FastifyInstance;
let server: TestMcpServer;

beforeAll(async () => {
  app = await buildTestApp();
  server = await startMcpServer({
    bearer: TOKEN,
    tools: [
      searchIssues(),
      closeIssue(),
      { name: "label_issue", description: "Add a label.", inputSchema: { label: z.string() } },
    ],
  });
});
afterAll(async () => {
  await server.close();
  await app.close();
});

async function setup() {
  const w = await makeWorld("ast");
  const scout = await makeAgent(w, w.alice, "scout", { capabilities: ["add_comment"] });
  const post = (action: string, body: Record<string, unknown>) =>
    md(app, w, w.alice, "POST", `${PAGE}/actions/${action}`, body);
  return { w, scout, post };
}

describe("Connected tools on the settings page", () => {
  it("none yet: says where to connect one", async () => {
    const { w } = await setup();
    const page = (await md(app, w, w.alice, "GET", PAGE)).body;
    expect(page).toContain("## Connected tools");
    expect(page).toContain("_No connected tools to grant: connect a server on your settings first._");
    expect(actionNames(page)).toContain("set_tool_level");
  });

  it("lists each tool; granted as its annotations say, then at the level chosen; the capabilities form keeps them", async () => {
    const { w, scout, post } = await setup();
    await connect(w, w.alice, server.url, { slug: "gh", audience: "outside" });
    const page = (await md(app, w, w.alice, "GET", PAGE)).body;
    expect(page).toContain(
      "- `gh__search_issues` — Search issues by text. (GitHub, outside the workspace; only reads): **not allowed**",
    );
    expect(page).toContain(
      "- `gh__close_issue` — Close an issue. (GitHub, outside the workspace; may change things: starts as after your approval): **not allowed**",
    );
    // No annotation at all: it may change things.
    expect(page).toContain(
      "`gh__label_issue` — Add a label. (GitHub, outside the workspace; may change things",
    );

    const grants = await Promise.all(
      ["gh__search_issues", "gh__close_issue", "gh__label_issue"].map((tool) =>
        post("set_tool_level", { tool }),
      ),
    );
    expect(grants.map((r) => r.body.match(/gh__\w+: [a-z ]+/)?.[0])).toEqual([
      "gh__search_issues: allowed",
      "gh__close_issue: allowed after your approval",
      "gh__label_issue: allowed after your approval",
    ]);
    expect((await post("set_tool_level", { tool: "gh__label_issue", level: "off" })).statusCode).toBe(200);
    const config = await configOf(scout.id);
    // The three grants ran at once: they took the agent's row lock in any order.
    expect([...(config.capabilities as string[])].sort()).toEqual([
      "add_comment",
      "gh__close_issue",
      "gh__search_issues",
    ]);
    expect(config.requires_approval).toEqual(["gh__close_issue"]);
    // The built-in part counts built-in actions only; the tools show their levels in their own.
    const granted = (await md(app, w, w.alice, "GET", PAGE)).body;
    expect(granted).toContain("**Yours to grant** (content): 1 of 13 granted.");
    expect(granted).toContain("Waiting for your approval: nothing.");
    expect(granted).toContain("(GitHub, outside the workspace; only reads): **allowed**");

    // Saving the built-in actions keeps the tools as they were.
    const saved = await post("set_capabilities", permissions(["vote"], { approval: ["add_comment"] }));
    expect(saved.statusCode, saved.body).toBe(200);
    const after = (await configOf(scout.id)) as { capabilities: string[]; requires_approval: string[] };
    expect(after.capabilities.slice(0, 2).sort()).toEqual(["add_comment", "vote"]);
    expect(after.capabilities.slice(2)).toEqual(["gh__search_issues", "gh__close_issue"]);
    expect(after.requires_approval).toEqual(["add_comment", "gh__close_issue"]);

    // The browser: one form per tool, its level shown.
    const browser = await login(app, w, w.alice);
    const html = (await browser.get(PAGE)).body;
    expect(html).toContain("Save gh__close_issue");
    expect(html).toContain("Grant gh__label_issue");
    const off = await browser.post(`${PAGE}/actions/set_tool_level`, {
      tool: "gh__close_issue",
      level: "off",
    });
    expect(off.statusCode).toBe(303);
    expect((await configOf(scout.id)).capabilities).not.toContain("gh__close_issue");
  });

  it("a tool no connection of the owner offers is a 404; a bad level a 400; bob gets nothing", async () => {
    const { w, scout, post } = await setup();
    await connect(w, w.bob, server.url, { slug: "bobs" });
    const missing = await post("set_tool_level", { tool: "bobs__search_issues" });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toContain(
      "No tool `bobs__search_issues` among the connections @scout's owner can grant from",
    );
    const bad = await post("set_tool_level", { tool: "bobs__search_issues", level: "always" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("`level`");
    const bobs = await md(app, w, w.bob, "POST", `${PAGE}/actions/set_tool_level`, {
      tool: "bobs__search_issues",
    });
    expect(bobs.statusCode).toBe(404);
    expect((await configOf(scout.id)).capabilities).toEqual(["add_comment"]);
  });
});

describe("rules that name a tool", () => {
  it("take the tool's name as their action and any argument name; a name that is neither an action nor a tool's is a 400", async () => {
    const { scout, post } = await setup();
    const added = await post("add_rule", {
      name: "no closing 31",
      action: "gh__close_issue",
      decision: "deny",
      param_patterns: "number=^31$",
    });
    expect(added.statusCode, added.body).toBe(200);
    expect((await configOf(scout.id)).rules).toEqual([
      { name: "no closing 31", action: "gh__close_issue", decision: "deny", params: { number: "^31$" } },
    ]);
    for (const action of ["GH__close", "gh_close_issue", "gh__"]) {
      const res = await post("add_rule", { name: "x", action, decision: "deny" });
      expect(res.statusCode, action).toBe(400);
      expect(res.body).toContain("`action`");
    }
  });
});
