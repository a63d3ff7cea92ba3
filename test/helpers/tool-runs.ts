// Runs that call connected tools, end to end: a real SDK MCP server (mcp-servers.ts), a
// connection to it listed and pinned through services/tools, an agent granted its tools on its
// settings page, and a scripted model that calls them as typed tools (agent-scripts.ts).
import type { FastifyInstance } from "fastify";
import { expect } from "vitest";
import { z } from "zod";
import type { ChatRequest, FakeReply } from "../../src/dev/fake-llm.ts";
import type { ToolAudience } from "../../src/generated/prisma/client.ts";
import { createConnection, listTools } from "../../src/services/tools/index.ts";
import { requestsFor, userPrompt } from "./agent-scripts.ts";
import { type AgentEnv, tool } from "./agents.ts";
import { md, type Person, testPrisma, type World, waitFor } from "./app.ts";
import type { TestTool } from "./mcp-servers.ts";

export const TOKEN = "tok_7c2e9a1b4d6f8e0a3c5b7d9f";

/** The test servers' two kinds of tool: one that says it only reads, one that says it destroys. */
export const searchIssues = (handler?: TestTool["handler"]): TestTool => ({
  name: "search_issues",
  description: "Search issues by text.",
  inputSchema: { query: z.string() },
  annotations: { readOnlyHint: true },
  ...(handler && { handler }),
});

export const closeIssue = (handler?: TestTool["handler"]): TestTool => ({
  name: "close_issue",
  description: "Close an issue.",
  inputSchema: { number: z.number() },
  annotations: { destructiveHint: true },
  ...(handler && { handler }),
});

/** A connection of `owner` (or of a studio) to `url`, its tools listed and pinned as its owner first allowed them. */
export async function connect(
  w: World,
  owner: Person,
  url: string,
  options: { slug?: string; name?: string; audience?: ToolAudience; studioId?: string; token?: string } = {},
) {
  const db = testPrisma();
  const connection = await createConnection(db, {
    tenantId: w.tenant.id,
    ...(options.studioId ? { studioId: options.studioId } : { ownerUserId: owner.id }),
    name: options.name ?? "GitHub",
    slug: options.slug ?? "gh",
    url,
    authKind: "bearer",
    bearerToken: options.token ?? TOKEN,
    audience: options.audience ?? "outside",
    createdById: owner.id,
  });
  await listTools(db, connection);
  return connection;
}

/** The owner grants the agent a tool on its settings page (no level: as its annotations say). */
export async function grant(
  app: FastifyInstance,
  w: World,
  handle: string,
  name: string,
  level?: "on" | "approval" | "off",
) {
  const res = await md(app, w, w.alice, "POST", `/subagents/${handle}/settings/actions/set_tool_level`, {
    tool: name,
    ...(level && { level }),
  });
  expect(res.statusCode, res.body).toBe(200);
  return res;
}

export interface Call {
  /** `<slug>__<tool>` */
  name: string;
  params: Record<string, unknown>;
  /** Open this page first (the content a call would carry). */
  after?: string;
}

/** How many typed calls of tools the run has made so far, by its memory lines. */
const callsMade = (prompt: string) => (prompt.match(/^\d+\. execute \w+__\w+\(/gm) ?? []).length;

/**
 * A model that makes `calls` in order (each after opening its page, when it names one), then
 * does `then` (finish, by default), for requests of this world's workspace only.
 */
export function callScript(w: World, calls: Call[], then?: (prompt: string) => FakeReply) {
  return (req: ChatRequest): FakeReply => {
    if (!JSON.stringify(req.messages[0]?.content ?? "").includes(w.tenant.name))
      return tool("finish", { message: "not mine" });
    const prompt = userPrompt(req);
    const next = calls[callsMade(prompt)];
    if (!next) return then ? then(prompt) : tool("finish", { message: "done" });
    const page = /# Current page: (\S+)/.exec(prompt)?.[1];
    if (next.after && page !== next.after && !prompt.includes(`navigate ${next.after} —`))
      return tool("navigate", { path: next.after });
    return tool(next.name, { params: next.params, reason: "the task needs it" });
  };
}

/** Every prompt the model got in this world, and the tools it was offered in them. */
export function seen(env: AgentEnv, w: World) {
  const requests = requestsFor(env, w);
  return {
    prompts: requests.map((r) => userPrompt(r.body)),
    tools: requests.map((r) => (r.body.tools ?? []).map((t) => t.function.name)),
    wire: requests.map((r) => JSON.stringify(r.wire)),
  };
}

export const callsOfRun = (runId: string) =>
  testPrisma().toolCall.findMany({ where: { runId }, orderBy: { createdAt: "asc" } });

/** The run's tool call once it has a result. */
export const settledCall = (runId: string) =>
  waitFor(() => testPrisma().toolCall.findFirst({ where: { runId, status: { not: "calling" } } }), 15_000);
