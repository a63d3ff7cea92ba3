// Trust at the edge of the workspace (issue 45): a tool call writes to its connection's
// audience and its result is a source with that audience, so the label rule holds what leaves
// and what comes in; and a run uses a person's connection only when that person manages the
// agent and woke it. Real SDK MCP servers, the real stack, a scripted model.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolForRun } from "../src/services/agents/policy/tool-grants.ts";
import { type AgentEnv, makeAgent, tool as reply, startAgents, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, makeWorld, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { type Harness, review, runTask, waitPending, waitStatus } from "./helpers/approvals.ts";
import { startMcpServer, type TestMcpServer } from "./helpers/mcp-servers.ts";
import { callScript, callsOfRun, connect, grant, searchIssues, TOKEN } from "./helpers/tool-runs.ts";
import { vaultStudio } from "./helpers/trust.ts";

const BOB_TOKEN = "tok_b0b5b0b5b0b5b0b5b0b5b0b5";
let app: FastifyInstance;
let env: AgentEnv;
let github: TestMcpServer;
let calendar: TestMcpServer;
const tokensSeen: string[] = [];
const db = testPrisma;
const h: Harness = { app: () => app, env: () => env };

beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("tool-trust");
  github = await startMcpServer({
    verifyToken: (token) => {
      tokensSeen.push(token);
      return token === TOKEN || token === BOB_TOKEN;
    },
    tools: [searchIssues()],
  });
  calendar = await startMcpServer({
    bearer: TOKEN,
    tools: [
      {
        name: "today",
        description: "Today's appointments.",
        annotations: { readOnlyHint: true },
        handler: () => ({ content: [{ type: "text", text: "15:00 oncologist, Dr. Ames" }] }),
      },
    ],
  });
});
afterAll(async () => {
  await github.close();
  await calendar.close();
  await env.close();
  await app.close();
});

/** A studio only alice and @scout are in, with a note there. */
async function vault(w: World, agentId: string) {
  const studio = await vaultStudio(w, agentId);
  const note = await act(w, w.alice, "/studios/vault", "create_note", {
    title: "Acquisition",
    text: "We are buying Initech in March.",
  });
  return { studio, notePath: note.location };
}

describe("what a call sends", () => {
  it("a call to a server outside the workspace after reading Vault is held, worded, and the server receives nothing", async () => {
    const w = await makeWorld("tt");
    const scout = await makeAgent(w, w.alice, "scout");
    const { notePath } = await vault(w, scout.id);
    await connect(w, w.alice, github.url, { slug: "gh", audience: "outside" });
    await grant(app, w, "scout", "gh__search_issues");
    const requestsBefore = github.requests.total;
    env.llm.setScript(
      callScript(w, [
        { name: "gh__search_issues", params: { query: "Initech acquisition" }, after: notePath },
      ]),
    );
    const runId = await runTask(h, w, "Check whether GitHub has anything on the Vault note's subject");
    expect((await waitForRun(scout.id)).status).toBe("completed");
    const pending = await waitPending(scout.id);
    expect(pending).toMatchObject({ actionName: "call_tool", matchedRule: "disclosure" });
    expect(pending.disclosure).toBe(
      "This call to GitHub (outside the workspace) would send content from Vault, which only Alice Adams (@alice) and Agent scout (@scout) can read.",
    );
    expect(github.requests.total).toBe(requestsBefore);
    expect(await callsOfRun(runId)).toEqual([]);
  });
});

describe("what a result brings in", () => {
  it("a personal calendar's result written to General is held: only its owner may read it", async () => {
    const w = await makeWorld("tt");
    const scout = await makeAgent(w, w.alice, "scout");
    await connect(w, w.alice, calendar.url, { slug: "cal", name: "Calendar", audience: "owner" });
    await grant(app, w, "scout", "cal__today");
    env.llm.setScript(
      callScript(w, [{ name: "cal__today", params: {} }], (prompt) => {
        if (prompt.includes("execute create_note(")) return reply("finish", { message: "posted" });
        if (!prompt.includes("# Current page: /studios/general"))
          return reply("navigate", { path: "/studios/general" });
        return reply("execute_action", {
          action: "create_note",
          params: { title: "Alice today", text: "15:00 oncologist, Dr. Ames" },
        });
      }),
    );
    const runId = await runTask(h, w, "Post alice's day in General");
    expect((await waitForRun(scout.id)).status).toBe("completed");
    const [call] = await callsOfRun(runId);
    expect(call).toMatchObject({ status: "done", source: { people: [w.alice.id] } });
    const run = await db().subagentTaskRun.findUniqueOrThrow({ where: { id: runId } });
    expect(run.label).toContainEqual({ people: [w.alice.id] });
    const pending = await waitPending(scout.id);
    expect(pending).toMatchObject({ actionName: "create_note", matchedRule: "disclosure" });
    expect(pending.disclosure).toContain("This note in General would show 1 person (Bob Brown (@bob))");
    expect(pending.disclosure).toContain("which only Alice Adams (@alice) can read");
    expect(await db().note.count({ where: { authorId: scout.id } })).toBe(0);
  });
});

describe("whose connection", () => {
  it("bob's mention cannot use alice's connection without her approval; with his own, it uses his", async () => {
    const w = await makeWorld("tt");
    const scout = await makeAgent(w, w.alice, "scout");
    // Her personal account: its audience is hers, so nothing is disclosed; whose it is decides.
    await connect(w, w.alice, github.url, { slug: "gh", audience: "owner" });
    await grant(app, w, "scout", "gh__search_issues");
    const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Flaky", text: "CI" });
    env.llm.setScript(callScript(w, [{ name: "gh__search_issues", params: { query: "flaky" } }]));
    const requestsBefore = github.requests.total;
    await act(w, w.bob, note.location, "add_comment", { text: "@scout search the issues for flaky" });
    const first = await waitForRun(scout.id);
    expect(first).toMatchObject({ status: "completed", viewerIds: [w.bob.id] });
    const pending = await waitPending(scout.id);
    expect(pending).toMatchObject({ actionName: "call_tool", matchedRule: "connection_owner" });
    expect(pending.disclosure).toContain(
      "Alice Adams's own GitHub connection in a run Bob Brown (@bob) woke",
    );
    expect(github.requests.total).toBe(requestsBefore);

    // Alice allows it: it goes once, through her connection.
    tokensSeen.length = 0;
    const approved = await review(app, w, w.alice, "approve_action", { id: pending.id });
    expect(approved.statusCode, approved.body).toBe(200);
    await waitStatus(pending.id, "executed");
    const [call] = await waitFor(async () => {
      const calls = await callsOfRun(first.id);
      return calls[0]?.status === "done" ? calls : null;
    });
    expect(call!.connectionName).toBe("GitHub");
    expect(tokensSeen).toContain(TOKEN);
    expect(tokensSeen).not.toContain(BOB_TOKEN);

    // Bob connects his own account to the same server: his next mention uses it, no approval asked.
    await connect(w, w.bob, github.url, {
      slug: "mygh",
      name: "Bob's GitHub",
      audience: "owner",
      token: BOB_TOKEN,
    });
    tokensSeen.length = 0;
    await act(w, w.bob, note.location, "add_comment", { text: "@scout and again please" });
    const second = await waitFor(async () => {
      const runs = await db().subagentTaskRun.findMany({
        where: { agentId: scout.id, status: "completed" },
        orderBy: { createdAt: "asc" },
      });
      return runs.length === 2 ? runs[1]! : null;
    }, 20_000);
    const [own] = await callsOfRun(second.id);
    expect(own).toMatchObject({ status: "done", connectionName: "Bob's GitHub" });
    expect(tokensSeen).toContain(BOB_TOKEN);
    expect(tokensSeen).not.toContain(TOKEN);
    expect(await db().agentPendingAction.count({ where: { agentId: scout.id } })).toBe(1);
  });

  it("a studio's connection serves only runs whose viewers are all its members", async () => {
    const w = await makeWorld("tt");
    const scout = await makeAgent(w, w.alice, "scout", { capabilities: ["st__search_issues"] });
    await connect(w, w.alice, github.url, { slug: "st", studioId: w.studio.id, audience: "studio" });
    const agent = await db().user.findUniqueOrThrow({ where: { id: scout.id } });
    const forBob = await toolForRun(db(), agent, "st__search_issues", [w.bob.id]);
    expect("tool" in forBob && forBob.tool.audience).toEqual({ studio: w.studio.id });
    const forCarol = await toolForRun(db(), agent, "st__search_issues", [w.carol.id]);
    expect("refused" in forCarol && forCarol.refused).toContain("@carol woke this run");
    const unknown = await toolForRun(db(), agent, "st__nope", []);
    expect("refused" in unknown && unknown.refused).toContain("is not a tool of any connection");
  });
});
