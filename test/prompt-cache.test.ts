// A run's prompts are cache-friendly: what a step does not change comes first and is the
// same bytes from one step to the next — the tools (the run's, fixed from its first step), the system
// prompt, the task and the memory log (only ever appended to while it has room) — so a
// provider serves it from its prompt cache. Checked on the requests a real worker sends the
// fake model over HTTP during a walk through a studio; a per-step value (the steps left,
// the current page) moved into that prefix fails it.
import { afterAll, describe, expect, it } from "vitest";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { requestsFor, systemOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";

/** The user message up to the first part a step changes: the task and the memory log. */
function stablePart(req: ChatRequest): string {
  const user = userPrompt(req);
  const at = user.search(/\n\n# (Previous|Current) page: /);
  expect(at).toBeGreaterThan(0);
  return user.slice(0, at);
}

const toolNames = (req: ChatRequest) => (req.tools ?? []).map((t) => t.function.name);

describe("a run's prompts share their prefix from step to step", () => {
  let env: AgentEnv;
  afterAll(async () => env?.close());

  it("the tools and the system prompt stay the same bytes, the task and the memory only grow", async () => {
    env = await startAgents("prompt-cache");
    const w = await makeWorld();
    // The pages it reads offer no action its first step's tools lack: they never change.
    const scout = await makeAgent(w, w.alice, "scout", { max_steps: 20, capabilities: ["add_comment"] });
    const notes: string[] = [];
    for (const title of ["Venues", "Budget", "Travel"])
      notes.push(
        (await act(w, w.alice, "/studios/general", "create_note", { title, text: `${title}: `.repeat(80) }))
          .location,
      );
    const walk = ["/studios/general", "/studios/general/notes", notes[0]!, notes[1]!, null, notes[2]!];
    walk.push("/studios/general", "/studios/general/notes", notes[0]!);
    let n = 0;
    env.llm.setScript((req): FakeReply => {
      const path = walk[n++];
      const note = n % 3 === 0 ? `Step ${n}: noted.` : undefined;
      if (path === undefined) return tool("finish", { message: "done" });
      const params = { text: "Looks good." };
      if (path === null)
        return toolNames(req).includes("add_comment")
          ? tool("add_comment", { params, note })
          : tool("execute_action", { action: "add_comment", params, note });
      return tool("navigate", { path, note });
    });
    await act(w, w.alice, "/subagents/scout/run", "run_task", { task: "Look around the studio." });
    const run = await waitForRun(scout.id, undefined, 20_000);
    expect(run.status).toBe("completed");

    const sent = requestsFor(env, w).map((r) => r.body);
    expect(sent.length).toBe(walk.length + 1);
    for (let k = 1; k < sent.length; k++) {
      const [before, after] = [sent[k - 1]!, sent[k]!];
      // Tools: last step's, byte for byte.
      expect(JSON.stringify(after.tools)).toBe(JSON.stringify(before.tools));
      expect(systemOf(after)).toBe(systemOf(before));
      // The task and the memory log: last step's, and its new lines after.
      expect(stablePart(after).startsWith(stablePart(before))).toBe(true);
      expect(stablePart(after).length).toBeGreaterThan(stablePart(before).length);
    }
    // The fixed tools first; then, from the first step, the actions the agent may use (the
    // comment it made pages later among them) as fit their share, the rest through execute_action.
    expect(toolNames(sent[0]!).slice(0, 3)).toEqual(["navigate", "finish", "ask_owner"]);
    expect(toolNames(sent[0]!)).toEqual(expect.arrayContaining(["add_comment", "update_scratchpad"]));
    const comments = await testPrisma().comment.findMany({ where: { authorId: scout.id } });
    expect(comments.map((c) => c.text)).toEqual(["Looks good."]);
    // What a step changes is after the prefix: where the agent is, how many steps it has left.
    const last = userPrompt(sent.at(-1)!);
    expect(stablePart(sent.at(-1)!)).not.toMatch(/steps? left|# Current page/);
    expect(last.indexOf(`# Current page: ${notes[0]}`)).toBeGreaterThan(stablePart(sent.at(-1)!).length);
  });
});
