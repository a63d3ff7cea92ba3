// Why an agent acted, and where it is working: the text the model sends beside a tool call
// is kept with the step (masked) and shown; a step's own page shows the whole page it saw
// and, rebuilt from the run's records, the very prompt it was sent; a thread an agent was
// woken in shows it working, live, and its reply carries an AI badge linked to its run.

import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runActions } from "../src/services/agents/policy/capabilities.ts";
import { rebuildPrompt } from "../src/services/agents/prompt/step-prompt.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import { requestsFor, respondScript, runIdOf, stepsOf } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { as, openLive, portOf } from "./helpers/live.ts";

let app: FastifyInstance;
let port: number;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  port = await portOf(app);
  env = await startAgents("run-details");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;
const KEY = `sk-proj-${randomBytes(24).toString("hex")}`;

async function runTask(w: World, task: string) {
  const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", { task });
  expect(res.statusCode).toBe(201);
  return runIdOf(String(res.headers.location));
}

describe("the model's own words", () => {
  let w: World;
  let runId: string;
  beforeAll(async () => {
    w = await makeWorld();
    await makeAgent(w, w.alice);
    // A long note, so the studio page is longer than the run page shows of it.
    await db().note.create({
      data: {
        id: `long${Date.now().toString(36)}`,
        tenantId: w.tenant.id,
        studioId: w.studio.id,
        authorId: w.alice.id,
        title: "Long note",
        text: "word ".repeat(400),
      },
    });
    env.llm.setScript([
      { ...tool("navigate", { path: "/studios/general" }), content: "I will look at the studio first." },
      {
        ...tool("execute_action", { action: "create_note", params: { title: "Plan", text: "Next steps" } }),
        content: `Posting the plan. (The key ${KEY} was in my notes.)`,
      },
      tool("finish", { message: "Done" }),
    ]);
    runId = await runTask(w, "Plan the week");
    expect(
      (
        await waitForRun(
          (
            await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "scout" } })
          ).id,
        )
      ).status,
    ).toBe("completed");
  });

  it("is stored with the step, masked, and shown on the run page in both formats", async () => {
    const steps = await stepsOf(runId);
    expect(steps.map((s) => s.modelText)).toEqual([
      null,
      "I will look at the studio first.",
      "Posting the plan. (The key [masked: OpenAI key] was in my notes.)",
      null,
    ]);
    const page = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}`);
    expect(page.body).toContain("The model wrote:\n\n> I will look at the studio first.");
    expect(page.body).toContain("> Posting the plan. (The key [masked: OpenAI key] was in my notes.)");
    const html = await (await login(app, w, w.alice)).get(`/subagents/scout/runs/${runId}`);
    expect(html.body).toMatch(
      /<p>The model wrote:<\/p>\s*<blockquote>\s*<p>I will look at the studio first\.<\/p>/,
    );
    for (const body of [page.body, html.body]) expect(body).not.toContain(KEY);
  });

  it("a step's page shows the whole page it saw, and the very prompt the model was sent", async () => {
    const steps = await stepsOf(runId);
    const sent = requestsFor(env, w).map((r) => r.body.messages);
    expect(sent).toHaveLength(3);
    const run = await db().subagentTaskRun.findUniqueOrThrow({ where: { id: runId } });
    const agent = await db().user.findUniqueOrThrow({ where: { id: run.agentId } });
    const tenant = await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
    for (const n of [2, 3, 4]) {
      const rebuilt = await rebuildPrompt(db(), run, agent, tenant.name, n, {
        usable: runActions(run, agent, tenant, registry.actions.values()),
        all: registry.actions,
      });
      expect(rebuilt?.messages, `step ${n}`).toEqual(sent[n - 2]);
      expect(rebuilt?.exact, `step ${n}`).toBe(true);
      const page = await md(app, w, w.alice, `GET`, `/subagents/scout/runs/${runId}/steps/${n}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain("Exactly what the model was sent");
      // The tools it was offered, as they were sent.
      const tools = (requestsFor(env, w)[n - 2]!.body.tools ?? []).map((t) => `\`${t.function.name}\``);
      expect(rebuilt?.tools.map((t) => `\`${t}\``)).toEqual(tools);
      expect(rebuilt?.toolsExact, `step ${n}`).toBe(true);
      expect(page.body).toContain(`With the tools ${tools.join(", ")}.`);
      // The user message as the log it is: the task and the log (what a cache serves), then the pointer.
      const user = String(sent[n - 2]![1]!.content);
      const at = user.search(/\n\n# (After your last step|Current page: )/);
      expect(page.body).toContain(`~~~~\n${user.slice(0, at)}\n~~~~`);
      expect(page.body).toContain(`~~~~\n${user.slice(at + 2)}\n~~~~`);
      expect(page.body).toMatch(
        /The task and the log \(\d+ characters; the pages of steps? [\d, ]+ whole where they were read/,
      );
    }
    const studioPage = (steps[1]!.detail as { page: string }).page;
    expect(studioPage.length).toBeGreaterThan(600);
    const step2 = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}/steps/2`);
    expect(step2.body).toContain(`~~~~markdown\n${studioPage}\n~~~~`);
    // A step kept before its tools' fingerprint was: the tools are the rebuild's, and it says so.
    const kept = steps[2]!;
    const { tools: _, ...facts } = (kept.detail as { prompt: Record<string, unknown> }).prompt;
    await db().subagentTaskRunStep.update({
      where: { id: kept.id },
      data: { detail: { ...(kept.detail as object), prompt: facts } as never },
    });
    const old = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}/steps/3`);
    expect(old.body).toContain("Exactly what the model was sent");
    expect(old.body).toMatch(
      /With the tools [^\n]*, as rebuilt: the step did not keep its tools' fingerprint/,
    );
    const first = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}/steps/1`);
    expect(first.body).toContain("No model call made this step: a run starts by reading /whoami.");
    expect((await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}/steps/9`)).statusCode).toBe(404);
    expect((await md(app, w, w.bob, "GET", `/subagents/scout/runs/${runId}/steps/2`)).statusCode).toBe(404);
  });

  it("says so when the prompt rebuilt is no longer the one sent", async () => {
    const scout = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "scout" } });
    await db().user.update({
      where: { id: scout.id },
      data: { agentConfig: { ...(scout.agentConfig as object), identity_prompt: "A different role now." } },
    });
    const page = await md(app, w, w.alice, "GET", `/subagents/scout/runs/${runId}/steps/2`);
    expect(page.body).toContain("it differs from what was sent");
    expect(page.body).toContain("A different role now.");
  });
});

describe("a thread an agent works in", () => {
  it("shows it working, live, then its reply with an AI badge linked to its run", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice);
    const reply = respondScript(() => "On it: here is what I found.");
    // Slow enough to be seen working.
    env.llm.setScript((req) => ({ ...reply(req), delayMs: 600 }));
    const browser = await login(app, w, w.alice);
    const created = await md(app, w, w.alice, "POST", "/studios/general/actions/create_note", {
      title: "Offsite",
      text: "Where should we go, @scout?",
    });
    const path = String(created.headers.location);
    // The page as a browser first gets it, and its stream from there: the agent shows as
    // working in one or the other (it may have started before the page was read), before its reply.
    const page = (await browser.get(path)).body;
    const since = /data-live-since="([^"]+)"/.exec(page)![1]!;
    const stream = await openLive({ port, path: `${path}?last_event_id=${since}`, ...as(w, w.alice) });
    if (!/@scout (is working on this|is about to work on this)/.test(page))
      await stream.until((e) => e.some((x) => x.data.working?.length));
    const first = stream.events[0]?.data;
    if (first) expect(first).toMatchObject({ comments: 0, working: [{ agent: "scout" }] });
    const run = await db().subagentTaskRun.findFirstOrThrow({ where: { agentId: scout.id } });
    expect(run.threadId).toBe(path.split("/").pop());
    const runLink = `/subagents/scout/runs/${run.id}`;
    expect((await md(app, w, w.alice, "GET", path)).body).toContain(`on this — [see its run](${runLink})`);
    const bobSees = (await md(app, w, w.bob, "GET", path)).body;
    expect(bobSees).toMatch(/- @scout is (working|about to work) on this\n/);
    expect(bobSees).not.toContain(runLink);

    await stream.until((e) => e.some((x) => x.data.comments === 1 && x.data.working.length === 0));
    stream.close();
    const comment = await db().comment.findFirstOrThrow({ where: { authorId: scout.id } });
    expect(comment.runId).toBe(run.id);
    const mine = (await md(app, w, w.alice, "GET", path)).body;
    expect(mine).toContain(`**Agent scout ([@scout](/u/scout))** · [AI · its run](${runLink})`);
    expect(mine).not.toContain("is working on this");
    expect((await md(app, w, w.bob, "GET", path)).body).toContain(
      "**Agent scout ([@scout](/u/scout))** · [AI agent](/u/scout)",
    );
    expect((await browser.get(path)).body).toContain(
      `<a class="ai-badge" href="${runLink}" title="Written by an AI agent">AI · its run</a>`,
    );
  });
});
