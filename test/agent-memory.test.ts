// Working memory within a run, end to end: a real worker, the fake LLM over HTTP, and a
// model that answers ONLY from what is in its prompt. It must find, on the page where it
// writes, facts it read pages ago: through its own notes and the pages still whole in the
// log where it read them, since older pages reach it only as excerpts that end before the facts.

import { encode as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { encode as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, describe, expect, inject, it } from "vitest";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { startFakeLlm } from "../src/dev/fake-llm.ts";
import { requestsFor, runById, stepsOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, fileDatabaseUrl, makeWorld, readAs, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { endWorkers, killGroup, spawnWorker } from "./helpers/workers.ts";

const CODE = /\b((?:ALPHA|BETA)-\d+)\b/g;
// Past any excerpt (300 characters): an older page's fact reaches the model only if it noted it.
const filler = "This paragraph is about nothing in particular and goes on for a while. ".repeat(8);

interface Notes {
  a: string;
  b: string;
  c: string;
}

/** Notes A and B each hold a code word deep in their text; C is where the comment goes. */
async function threeNotes(w: World): Promise<Notes> {
  const note = async (title: string, text: string) =>
    (await act(w, w.alice, "/studios/general", "create_note", { title, text })).location;
  return {
    a: await note("Alpha", `${filler}\n\nThe code word is ALPHA-${Math.floor(Math.random() * 1e6)}.`),
    b: await note("Beta", `${filler}\n\nThe code word is BETA-${Math.floor(Math.random() * 1e6)}.`),
    c: await note("Gamma", "Post the code words here."),
  };
}

const codeWords = (text: string) => [...new Set([...text.matchAll(CODE)].map((m) => m[1]!))].sort();
const currentPage = (prompt: string) => /# Current page: (\S+) — the last page above/.exec(prompt)?.[1];
/** The current page's text: the last page in the log, which the pointer after it names. */
const currentText = (prompt: string) => {
  const log = prompt.slice(0, prompt.indexOf("\n\n# Current page: "));
  return log.slice(log.lastIndexOf("<page>\n"), log.lastIndexOf("\n</page>"));
};
const stepsLeft = (prompt: string) => Number(/You have (\d+) steps? left/.exec(prompt)?.[1]);

/** A reply as a tool call, or (JSON mode, when the request carries no tools) as a JSON object. */
function reply(req: ChatRequest, name: string, args: Record<string, unknown>): FakeReply {
  if (req.tools) return tool(name, args);
  const type = name === "execute_action" ? "execute" : name;
  return { content: JSON.stringify({ type, ...args }) };
}

/**
 * Reads A and notes its code word, opens B (no note: B will be the previous page), goes on
 * to C and posts every code word its prompt holds, then finishes. `wander` steps between
 * B and C visit other pages first, so A and B fall out of the recent pages.
 */
function readerModel(n: Notes, opts: { wander?: number; noTools?: boolean } = {}) {
  return (req: ChatRequest): FakeReply => {
    if (opts.noTools && req.tools) return { status: 400, content: "this model does not support tools" };
    const prompt = userPrompt(req);
    const at = currentPage(prompt);
    if (prompt.includes("execute add_comment(")) return reply(req, "finish", { message: "posted" });
    if (at === n.c)
      return reply(req, "execute_action", {
        action: "add_comment",
        params: { text: `Code words: ${codeWords(prompt).join(", ")}` },
        reason: "the task asks for both code words",
      });
    if (at === n.a) {
      const [word] = codeWords(currentText(prompt));
      return reply(req, "navigate", { path: n.b, note: `Note A: the code word is ${word}. Next: note B.` });
    }
    if (!prompt.includes("your note: Note A")) return reply(req, "navigate", { path: n.a });
    if (at === n.b && !opts.wander) return reply(req, "navigate", { path: n.c });
    if (opts.wander && stepsLeft(prompt) > 3) {
      const next = at === "/studios/general" ? "/studios/general/notes" : "/studios/general";
      return reply(req, "navigate", { path: next });
    }
    return reply(req, "navigate", { path: n.c });
  };
}

const TASK = "Read note Alpha, then note Beta, then post one comment on note Gamma with both code words.";

async function agentComment(agentId: string, notePath: string) {
  const comments = await testPrisma().comment.findMany({
    where: { authorId: agentId, subjectId: notePath.split("/").pop()! },
  });
  expect(comments).toHaveLength(1);
  return comments[0]!.text;
}

/** Every token a request sends, messages and tools, as the larger of o200k and cl100k counts it. */
function realTokens(req: ChatRequest): number {
  const text = req.messages.map((m) => String(m.content ?? "")).join("\n");
  const tools = req.tools ? JSON.stringify(req.tools) : "";
  return Math.max(o200k(text).length + o200k(tools).length, cl100k(text).length + cl100k(tools).length);
}

async function runTask(w: World, n: Notes) {
  const res = await act(w, w.alice, "/subagents/scout/run", "run_task", {
    task: `${TASK} ${n.a} ${n.b} ${n.c}`,
  });
  return res.location.split("/").pop()!;
}

describe("an agent remembers what it read", () => {
  let env: AgentEnv;
  afterAll(async () => env?.close());

  it.each([
    ["tool calls", false],
    ["JSON mode", true],
  ])("posts, on a third page, facts from two pages it read before (%s)", async (_, noTools) => {
    env ??= await startAgents("memory");
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const n = await threeNotes(w);
    env.llm.setScript(readerModel(n, { noTools }));
    await runTask(w, n);
    const run = await waitForRun(scout.id, undefined, 20_000);
    expect(run).toMatchObject({ status: "completed", finalMessage: "posted" });
    const written = (await testPrisma().note.findMany({ where: { tenantId: w.tenant.id } })).map(
      (x) => x.text,
    );
    const text = await agentComment(scout.id, n.c);
    expect(codeWords(text)).toHaveLength(2);
    expect(codeWords(text)).toEqual(codeWords(written.join(" ")));

    // Where each fact came from: A's from the model's note and its read, B's from its read,
    // both whole in the log where they were read; the current page named, its text once.
    const last = userPrompt(requestsFor(env, w).at(-2)!.body);
    expect(currentPage(last)).toBe(n.c);
    expect(last).toMatch(/your note: Note A: the code word is ALPHA-\d+/);
    for (const [number, path] of [
      [2, n.a],
      [3, n.b],
      [4, n.c],
    ] as const)
      expect(last).toMatch(new RegExp(`\n${number}\\. navigate ${path} — ok\n(   your note: .*\n)?<page>\n`));
    expect(last.split("Post the code words here.").length).toBe(2);
    expect(currentText(last)).toContain("Post the code words here.");
    expect(last.slice(last.indexOf("# Current page: "))).not.toContain("<page>");

    // The note is stored with its step and shown on the run page, with why the agent acted.
    const steps = await stepsOf(run.id);
    expect(steps.find((s) => (s.detail as { note?: string }).note)).toMatchObject({
      type: "navigate",
      path: n.b,
    });
    const page = (await readAs(w, w.alice, `/subagents/scout/runs/${run.id}`)).markdown;
    expect(page).toMatch(
      /Its note \(its memory for this run\):\n\n> Note A: the code word is ALPHA-\d+\. Next: note B\./,
    );
    expect(page).toContain("Why: the task asks for both code words");
    // Each step's prompt, rebuilt on its step page from the rows, is the one sent, to the byte.
    for (let number = 2; number <= run.stepsCount; number++)
      expect(
        (await readAs(w, w.alice, `/subagents/scout/runs/${run.id}/steps/${number}`)).markdown,
      ).toContain("Exactly what the model was sent");
  });

  it("keeps an early note through a 40-step run, the prompt within its budget at every step", async () => {
    await env?.close();
    env = await startAgents("memory-long", { PROMPT_TOKEN_BUDGET: "3000" });
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", { max_steps: 45 });
    const n = await threeNotes(w);
    env.llm.setScript(readerModel(n, { wander: 1 }));
    await runTask(w, n);
    const run = await waitForRun(scout.id, undefined, 60_000);
    expect([run.status, run.error]).toEqual(["completed", null]);
    expect(run.stepsCount).toBeGreaterThanOrEqual(44);
    const text = await agentComment(scout.id, n.c);
    // B is long gone from the recent pages too: only A's word, which it noted, survives.
    expect(codeWords(text)).toEqual([expect.stringMatching(/^ALPHA-/)]);
    const sent = requestsFor(env, w).map((r) => r.body);
    expect(sent.length).toBeGreaterThanOrEqual(42);
    expect(Math.max(...sent.map(realTokens))).toBeLessThanOrEqual(3000);
    // At the end: the note from step 2, the last steps, and the note-less steps between left out.
    const last = userPrompt(sent.at(-2)!);
    expect(last).toMatch(/\n3\. navigate \S+ — ok\n {3}your note: Note A: the code word is ALPHA-\d+/);
    expect(last).toMatch(/\(\d+ steps without a note not shown\)/);
  });
});

describe("a run resumed after its worker was killed", () => {
  const llm = startFakeLlm();
  const prefix = `${inject("queuePrefix")}-memory-kill`;
  afterAll(async () => {
    await endWorkers(prefix);
    await (await llm).close();
  });

  it("remembers what it read before the kill, and asks the model what it would have asked", {
    timeout: 120_000,
  }, async () => {
    const fake = await llm;
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const n = await threeNotes(w);
    const model = readerModel(n);
    let killed = false;
    // Between the reads: once A is noted and B is open, the model "thinks" until the worker dies.
    fake.setScript((req) => (currentPage(userPrompt(req)) === n.b && !killed ? { hang: true } : model(req)));
    const first = spawnWorker({ databaseUrl: fileDatabaseUrl(), llmUrl: fake.url, prefix });
    await first.ready;
    const runId = await runTask(w, n);
    const hung = await waitFor(
      async () => fake.requests.find((r) => currentPage(userPrompt(r.body)) === n.b),
      30_000,
    );
    killGroup(first.child, "SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    killed = true;
    const second = spawnWorker({ databaseUrl: fileDatabaseUrl(), llmUrl: fake.url, prefix });
    await second.ready;
    const done = await waitFor(async () => {
      const r = await runById(runId);
      return r.status === "completed" ? r : null;
    }, 30_000);
    expect(done.attempts).toBe(2);
    const text = await agentComment(scout.id, n.c);
    expect(codeWords(text)).toHaveLength(2);
    // The resumed worker's first request is the one the killed worker made, to the byte:
    // the same notes, the same previous page, the same excerpts, from the step rows.
    const resumed = fake.requests.find((r) => r.at > hung.at && currentPage(userPrompt(r.body)) === n.b)!;
    expect(resumed.body.messages).toEqual(hung.body.messages);
    killGroup(second.child, "SIGKILL");
  });
});
