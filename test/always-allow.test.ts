// "Approve and always allow this": approving adds one rule, first of the agent's rules,
// scoped to the action, the studio and the params the reviewer confirmed; the next identical
// action runs without review, a different one is still held; the rules page says where the
// rule came from, and it is removed there.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { proposedPatterns } from "../src/services/agents/policy/always-allow.ts";
import { type AgentEnv, startAgents, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, login, md, testPrisma, waitFor } from "./helpers/app.ts";
import {
  configOf,
  type Harness,
  NOTE,
  noteStep,
  notesBy,
  pendingOf,
  planScript,
  queued,
  review,
  runTask,
} from "./helpers/approvals.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("always-allow");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const h: Harness = { app: () => app, env: () => env };

describe("approve and always allow this", () => {
  it("proposes the identifying params exactly, and leaves long free text unpinned", () => {
    expect(proposedPatterns({ title: "Q3 (draft)", text: "x".repeat(200), count: 2 })).toBe(
      "title=^Q3 \\(draft\\)$\ncount=^2$",
    );
  });

  it("adds one rule; the same action next runs without review, a different one is held", async () => {
    const { w, scout, p } = await queued(h);
    const browser = await login(app, w, w.alice);
    const page = await browser.get(`/subagents/scout/pending/${p.id}`);
    expect(page.body).toContain("Approve and always allow this");
    expect(page.body).toContain("title=^Findings$");
    // The breadth in words, before the click, for either choice.
    expect(page.body).toContain(
      "lets <code>create_note</code> in the studio general when text matches <code>^All good$</code> and title matches <code>^Findings$</code> through without review",
    );
    expect(page.body).toContain(
      "lets any <code>create_note</code> in the studio general (whatever its params) through without review",
    );

    const res = await review(app, w, w.alice, "approve_action", {
      id: p.id,
      always_allow: true,
      allow_when: proposedPatterns(NOTE),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain(
      "now lets `create_note` in the studio general when text matches `^All good$` and title matches `^Findings$` through without review",
    );
    const rules = (await configOf(scout.id)).rules as Record<string, unknown>[];
    expect(rules).toHaveLength(1);
    expect(rules[0]).toMatchObject({
      name: `Always allow (from #${p.id})`,
      action: "create_note",
      decision: "allow",
      studio: "general",
      params: { title: "^Findings$", text: "^All good$" },
      origin: { pending: p.id, by: "alice" },
    });
    await waitFor(async () => ((await notesBy(scout.id)).length === 1 ? true : null), 10_000);

    // The same note again runs at once; another is still held.
    env.llm.setScript(planScript([noteStep, { ...noteStep, params: { title: "Other", text: "All good" } }]));
    await runTask(h, w, "Twice more");
    await waitForRun(scout.id, (s) => s === "completed");
    await waitFor(async () => ((await pendingOf(scout.id)).length === 2 ? true : null), 10_000);
    const notes = await notesBy(scout.id);
    expect(notes.map((n) => n.title)).toEqual(["Findings", "Findings"]);
    const held = (await pendingOf(scout.id)).at(-1)!;
    expect(held.status).toBe("pending");
    expect(held.params).toMatchObject({ title: "Other" });

    const settings = await md(app, w, w.alice, "GET", "/subagents/scout/settings");
    expect(settings.body).toContain(
      `(from approval [#${p.id}](/subagents/scout/pending/${p.id}), by @alice, on `,
    );
    expect(settings.body).toContain("studio `general`");
    const removed = await md(app, w, w.alice, "POST", "/subagents/scout/settings/actions/remove_rule", {
      name: `Always allow (from #${p.id})`,
    });
    expect(removed.statusCode).toBe(200);
    expect((await configOf(scout.id)).rules).toEqual([]);
  }, 30_000);

  it("a pattern that does not compile is a 400 naming the field; nothing is approved", async () => {
    const { w, p } = await queued(h);
    const res = await review(app, w, w.alice, "approve_action", {
      id: p.id,
      always_allow: true,
      allow_when: "title=(unclosed",
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("allow_when");
    expect((await testPrisma().agentPendingAction.findUniqueOrThrow({ where: { id: p.id } })).status).toBe(
      "pending",
    );
  });

  it("an empty pattern box is a 400 naming the field, not a rule for any comment; “any” is a worded choice of its own", async () => {
    const { w, scout, p } = await queued(h);
    const empty = await review(app, w, w.alice, "approve_action", {
      id: p.id,
      always_allow: true,
      allow_when: "",
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain("allow_when");
    expect(empty.body).toContain("keep at least one param=regex line");
    const both = await review(app, w, w.alice, "approve_action", {
      id: p.id,
      always_allow: true,
      allow_when: "title=^Findings$",
      allow_any: true,
    });
    expect(both.statusCode).toBe(400);
    expect(both.body).toContain("allow_any");
    expect((await testPrisma().agentPendingAction.findUniqueOrThrow({ where: { id: p.id } })).status).toBe(
      "pending",
    );
    expect((await configOf(scout.id)).rules ?? []).toEqual([]);

    const any = await review(app, w, w.alice, "approve_action", {
      id: p.id,
      always_allow: true,
      allow_any: true,
    });
    expect(any.statusCode, any.body).toBe(200);
    expect(any.body).toContain(
      "now lets any `create_note` in the studio general (whatever its params) through without review",
    );
    const rules = (await configOf(scout.id)).rules as Record<string, unknown>[];
    expect(rules).toMatchObject([
      { action: "create_note", studio: "general", params: {}, decision: "allow" },
    ]);
  });
});
