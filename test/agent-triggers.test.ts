import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentEnv, makeAgent, runsOf, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, makeWorld, testPrisma } from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("triggers");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

describe("mention → run → comment", () => {
  it("runs the mentioned agent, which replies in the thread", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    const note = await act(w, w.alice, "/studios/general", "create_note", {
      title: "Plan",
      text: "What next?",
    });
    const noteId = note.location.split("/").pop()!;
    env.llm.setScript((req, n) => {
      const prompt = req.messages.map((m) => m.content).join("\n");
      if (n === 0) return tool("navigate", { path: note.location });
      if (n === 1) {
        const id = /The comment \(id `(\w+)`\)/.exec(prompt)?.[1];
        return tool("execute_action", { action: "add_comment", params: { text: "On it!", reply_to: id } });
      }
      return tool("finish", { message: "replied" });
    });
    await act(w, w.bob, note.location, "add_comment", { text: "@scout can you look at this?" });
    const run = await waitForRun(scout.id);
    expect(run.status).toBe("completed");
    expect(run.triggerKind).toBe("mention");
    const reply = await testPrisma().comment.findFirst({ where: { subjectId: noteId, authorId: scout.id } });
    expect(reply?.text).toBe("On it!");
    expect(reply?.parentId).not.toBeNull();
    const resources = await testPrisma().subagentTaskRunResource.findMany({ where: { runId: run.id } });
    expect(resources).toEqual([expect.objectContaining({ resourceType: "comment", resourceId: reply!.id })]);
    expect(await runsOf(scout.id)).toHaveLength(1);
  });
});
