// Secrets never reach the model: a note holding one of our API tokens and a provider key,
// a task and an identity prompt holding others, read by an agent in a real run. What the
// fake LLM received (its exact request bodies), what the run stored and what its page
// shows hold placeholders only, and the run page says what was masked at which step.
// Real Postgres, Redis, BullMQ workers and the fake LLM over HTTP.
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatRequest, FakeReply } from "../src/dev/fake-llm.ts";
import { mdEscape } from "../src/services/registry/markdown.ts";
import { requestsFor, runById, stepsOf, systemOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, login, makeWorld, md } from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("secrets");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const hex = (n: number) => randomBytes(n).toString("hex");

/** Opens `path`, then finishes quoting back every line of the note it read there. */
const echoScript =
  (path: string) =>
  (req: ChatRequest): FakeReply => {
    const prompt = userPrompt(req);
    if (/# Current page: (\S+)/.exec(prompt)?.[1] !== path) return tool("navigate", { path });
    const quoted = prompt.split("\n").filter((l) => l.startsWith("> Deploy") || l.startsWith("> Commit"));
    return tool("finish", { message: `The note says:\n${quoted.join("\n")}` });
  };

describe("secret masking", () => {
  it("a note with our token and a provider key reaches the model masked; the run page says what was masked", async () => {
    const w = await makeWorld();
    const openai = `sk-proj-${hex(24)}`;
    const anthropic = `sk-ant-api03-${hex(30)}`;
    const github = `ghp_${hex(18)}`;
    const commit = hex(20);
    const scout = await makeAgent(w, w.alice, "scout", {
      identity_prompt: `You help the team. The CI token is ${github}.`,
    });
    const note = await act(w, w.alice, "/studios/general", "create_note", {
      title: "Deploy",
      text: `Deploy with ${w.alice.token} and call the model with ${openai}.\nCommit ${commit} is live.`,
    });
    env.llm.setScript(echoScript(note.location));
    const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: `Read the deploy note. The Anthropic key is ${anthropic}.`,
    });
    expect(res.statusCode).toBe(201);
    const run = await waitForRun(scout.id);
    expect(run.status).toBe("completed");
    const secrets = [w.alice.token, openai, anthropic, github].flatMap((s) => [s, mdEscape(s)]);
    const clean = (where: string, value: unknown) => {
      const text =
        typeof value === "string"
          ? value
          : JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v));
      for (const s of secrets) expect(text.includes(s), `${where} holds ${s}`).toBe(false);
    };

    // What the model received: every byte of every request, then where the placeholders are.
    const sent = requestsFor(env, w).map((r) => r.body);
    expect(sent).toHaveLength(2);
    for (const body of sent) clean("LLM request", body);
    for (const body of sent) {
      expect(systemOf(body)).toContain("The CI token is [masked: GitHub token].");
      expect(userPrompt(body)).toContain("The Anthropic key is [masked: Anthropic key].");
    }
    const page = /<page>\n([\s\S]*)\n<\/page>/.exec(userPrompt(sent[1]!))?.[1] ?? "";
    expect(page).toContain(
      `> Deploy with [masked: cadre token] and call the model with [masked: OpenAI key].\n> Commit ${commit} is live.`,
    );

    // What the run stored: the page excerpt as the model saw it, the counts per call, and
    // a final message that can only quote placeholders (the model never saw the secrets).
    const steps = await stepsOf(run.id);
    expect(steps.map((s) => s.type)).toEqual(["navigate", "navigate", "finish"]);
    for (const s of steps) clean(`step ${s.number}`, s);
    clean("run", await runById(run.id));
    expect((steps[1]!.detail as { page: string }).page).toContain(
      "> Deploy with [masked: cadre token] and call the model with [masked: OpenAI key].",
    );
    const counts = (n: number) => (steps[n]!.detail as { masked?: unknown }).masked;
    expect(counts(0)).toBeUndefined();
    // The identity prompt is in the system prompt and on /whoami; the task was stored masked.
    expect(counts(1)).toEqual({ "GitHub token": 2 });
    // The next call: the system prompt, /whoami whole in the log, and the note, whole where it
    // was read (the current page is in the prompt once: no excerpt of it beside).
    expect(counts(2)).toEqual({ "GitHub token": 2, "cadre token": 1, "OpenAI key": 1 });
    expect((await runById(run.id)).finalMessage).toBe(
      `The note says:\n> Deploy with [masked: cadre token] and call the model with [masked: OpenAI key].\n> Commit ${commit} is live.`,
    );

    // The run page, in both formats, says so at each step and shows no secret.
    const url = `/subagents/scout/runs/${run.id}`;
    const markdown = (await md(app, w, w.alice, "GET", url)).body;
    const html = (await (await login(app, w, w.alice)).get(url)).body;
    for (const body of [markdown, html]) clean("run page", body);
    expect(markdown).toContain("Masked before the model saw this step: 2 secrets (2 GitHub tokens).");
    expect(markdown).toContain(
      "Masked before the model saw this step: 4 secrets (2 GitHub tokens, 1 cadre token, 1 OpenAI key).",
    );
    expect(html).toContain("Masked before the model saw this step: 4 secrets");
  });
});
