// A run's prompts are cache-friendly: what a step does not change comes first and is the
// same bytes from one step to the next — the tools (the run's, fixed from its first step), the system
// prompt, the task and the log of its steps with the pages they read (appended to, and cut
// only where the whole pages start, when they outgrow their room: page-log.ts) — so a provider serves it
// from its prompt cache. Checked on the requests a real worker sends the fake model over
// HTTP during a walk through a studio; a per-step value (the steps left, the current page's
// text) moved into that prefix or after the pointer that ends the prompt fails it.
import { afterAll, describe, expect, it } from "vitest";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { RECENT_PAGES } from "../src/services/agents/prompt/page-log.ts";
import { requestsFor, systemOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";

/** The user message up to what a step changes: the task and the log, pages and all. */
function stablePart(req: ChatRequest): string {
  const user = userPrompt(req);
  const at = user.search(/\n\n# (After your last step|Current page: )/);
  expect(at).toBeGreaterThan(0);
  return user.slice(0, at);
}

/** The log before step `number`'s entry: what steps after its window began never change. */
function logBefore(stable: string, number: number): string {
  const at = stable.search(new RegExp(`\n${number}\\. (navigate|execute) `));
  expect(at).toBeGreaterThan(0);
  return stable.slice(0, at);
}

/** Step `number`'s entry in the log: its line, note, and its page or excerpt. */
function entry(stable: string, number: number): string {
  const from = logBefore(stable, number).length + 1;
  const next = stable.slice(from).search(/\n\d+\. (navigate|execute) /);
  return next < 0 ? stable.slice(from) : stable.slice(from, from + next);
}

/** The first step whose entry differs between two logs. */
function firstChanged(was: string, is: string): number {
  let at = 0;
  while (at < was.length && was[at] === is[at]) at++;
  const numbers = [...was.slice(0, at).matchAll(/\n(\d+)\. (navigate|execute) /g)];
  return Number(numbers.at(-1)?.[1] ?? 1);
}

const currentPath = (req: ChatRequest) => /\n# Current page: (\S+)/.exec(userPrompt(req))?.[1];

/** What follows the pointer: the steps left and, at most, feedback. */
const afterPointer = (req: ChatRequest) => userPrompt(req).split("\n\n# Current page: ")[1] ?? "";

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
    // More pages than MOST_PAGES, so the whole pages outgrow their bound and are cut at least once.
    for (const title of ["Venues", "Budget", "Travel", "Food", "Rooms", "Dates", "Agenda"])
      notes.push(
        (await act(w, w.alice, "/studios/general", "create_note", { title, text: `${title}: `.repeat(80) }))
          .location,
      );
    const walk = [
      "/studios/general",
      "/studios/general/notes",
      notes[0]!,
      notes[1]!,
      null,
      ...notes.slice(2),
    ];
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
    let moves = 0;
    for (let k = 1; k < sent.length; k++) {
      const [last, now] = [sent[k - 1]!, sent[k]!];
      // Tools: last step's, byte for byte.
      expect(JSON.stringify(now.tools)).toBe(JSON.stringify(last.tools));
      expect(systemOf(now)).toBe(systemOf(last));
      const [was, is] = [stablePart(last), stablePart(now)];
      if (is.startsWith(was)) {
        // The task and the log: last step's, and its new entry after.
        expect(is.length).toBeGreaterThan(was.length);
        continue;
      }
      // A cut: the whole pages outgrew their room, and all but the last RECENT_PAGES become
      // excerpts at once, from the oldest on — everything before it is last step's bytes, so
      // the next steps append again. Or a page read again: its text moves to the newest read
      // (it is in the prompt once), its older read an excerpt.
      const number = firstChanged(was, is);
      const reread = /^\d+\. navigate (\S+)/.exec(entry(was, number))?.[1] === currentPath(now);
      if (!reread) {
        moves++;
        expect(logBefore(was, number)).not.toContain("\n<page>\n");
        expect(is.split("\n<page>\n").length - 1).toBeLessThanOrEqual(RECENT_PAGES);
      }
      expect(entry(was, number)).toContain("\n<page>\n");
      expect(entry(is, number)).toMatch(/\n {3}excerpt: /);
      expect(is.startsWith(logBefore(was, number))).toBe(true);
    }
    expect(moves).toBeGreaterThan(0);
    // The fixed tools first; then, from the first step, the actions the agent may use (the
    // comment it made pages later among them) as fit their share, the rest through execute_action.
    expect(toolNames(sent[0]!).slice(0, 3)).toEqual(["navigate", "finish", "ask_owner"]);
    expect(toolNames(sent[0]!)).toEqual(expect.arrayContaining(["add_comment", "update_scratchpad"]));
    const comments = await testPrisma().comment.findMany({ where: { authorId: scout.id } });
    expect(comments.map((c) => c.text)).toEqual(["Looks good."]);
    // What a step changes is after the prefix: where the agent is, how many steps it has left.
    const last = userPrompt(sent.at(-1)!);
    expect(stablePart(sent.at(-1)!)).not.toMatch(/steps? left|# Current page/);
    expect(last.indexOf(`# Current page: ${notes[0]} — the last page above`)).toBe(
      stablePart(sent.at(-1)!).length + 2,
    );
    // The current page's text is in the log, once, where it was read: nothing of it after the pointer.
    const text = "Venues: ".repeat(80).trim();
    expect(last.split(text).length).toBe(2);
    expect(stablePart(sent.at(-1)!)).toContain(text);
    for (const req of sent) {
      expect(afterPointer(req)).toMatch(/^\S+ — the last page above\n\nYou have \d+ steps? left\.$/);
      expect(afterPointer(req)).not.toContain("<page>");
    }
  });
});
