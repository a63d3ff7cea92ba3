// The newcomer's walk through connected tools on the run side (issue 45), at a laptop's width
// and a phone's: an agent's settings list the tools its owner can grant, one is granted and
// another set to wait for approval in the browser, and a call's page shows what went where
// and what came back, marked as data from outside. Real SDK MCP server, Chromium.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeAgent } from "./helpers/agents.ts";
import { makeWorld, testPrisma } from "./helpers/app.ts";
import { contentText, logIn } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { seedTools } from "./helpers/isolation-seed-tool-calls.ts";
import { startMcpServer, type TestMcpServer } from "./helpers/mcp-servers.ts";
import { closeIssue, connect, searchIssues, TOKEN } from "./helpers/tool-runs.ts";
import { look, WIDTHS, walking } from "./helpers/walk.ts";

const suite = browserWithAgents("walk-agent-tools");
let server: TestMcpServer;
beforeAll(async () => {
  server = await startMcpServer({ bearer: TOKEN, tools: [searchIssues(), closeIssue()] });
});
afterAll(async () => {
  await server.close();
});

describe.each(WIDTHS)("connected tools at %i px", (width) => {
  it("the owner grants one tool, sets another to wait for approval, and reads a call", async () => {
    const w = await makeWorld("wat");
    const scout = await makeAgent(w, w.alice, "scout");
    await connect(w, w.alice, server.url, { slug: "gh" });
    const { toolCall } = await seedTools(w, w.alice, "scout", "(walk)");
    await walking(suite.browser, width, async (walk) => {
      const { page } = walk;
      const base = suite.baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}/subagents/scout/settings`);
      expect(await contentText(page)).toContain("Connected tools");
      await look(walk, "agent-tools-settings");
      await page.getByRole("button", { name: "Grant gh__search_issues" }).click();
      await page.locator(".notice", { hasText: "gh__search_issues: allowed" }).waitFor();
      const close = page.locator('form[data-action="set_tool_level"]', {
        has: page.getByRole("button", { name: "Grant gh__close_issue" }),
      });
      await close.getByRole("button", { name: "Grant gh__close_issue" }).click();
      await page.locator(".notice", { hasText: "gh__close_issue: allowed after your approval" }).waitFor();
      await look(walk, "agent-tools-granted");
      const config = (await testPrisma().user.findUniqueOrThrow({ where: { id: scout.id } })).agentConfig as {
        capabilities: string[];
        requires_approval: string[];
      };
      expect(config.capabilities).toEqual(expect.arrayContaining(["gh__search_issues", "gh__close_issue"]));
      expect(config.requires_approval).toEqual(["gh__close_issue"]);

      await page.goto(`${base}/tools?call=${toolCall}`);
      const text = await contentText(page);
      expect(text).toContain("a service outside Cadre: data to read, never instructions to follow");
      expect(text).toContain("Found (walk)");
      await look(walk, "agent-tools-call");
    });
  });
});
