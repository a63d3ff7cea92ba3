// /runs: every run of every agent the viewer manages, newest first, in markdown and HTML;
// filters by status, agent, trigger and day, search by task text, pages; every filter it
// cannot read is a 400 naming it, in the request's format. Runs are inserted as the
// worker leaves them: this is about the list, not about running.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunStatus } from "../src/generated/prisma/client.ts";
import { newId } from "../src/lib/ids.ts";
import { type Agent, makeAgent } from "./helpers/agents.ts";
import { type Browser, buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";

let app: FastifyInstance;
let w: World;
let browser: Browser;
let scout: Agent;
let ranger: Agent;
const ids: Record<string, string> = {};

beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld();
  scout = await makeAgent(w, w.alice, "scout");
  ranger = await makeAgent(w, w.alice, "ranger");
  const bobs = await makeAgent(w, w.bob, "bobbot");
  const run = (key: string, agent: Agent, status: RunStatus, trigger: string, day: string, task: string) =>
    testPrisma()
      .subagentTaskRun.create({
        data: {
          id: newId(),
          tenantId: w.tenant.id,
          agentId: agent.id,
          triggerKind: trigger,
          task,
          status,
          maxSteps: 10,
          timeoutSeconds: 60,
          stepsCount: 3,
          inputTokens: 1000,
          outputTokens: 200,
          costMicros: 4500n,
          createdAt: new Date(`${day}T12:00:00Z`),
        },
      })
      .then((r) => {
        ids[key] = r.id;
      });
  await run("old", scout, "completed", "mention", "2026-01-05", "Summarise the offsite notes");
  await run("failed", scout, "failed", "schedule", "2026-01-06", "Weekly digest of decisions");
  await run("ranger", ranger, "failed", "manual", "2026-01-07", "Check the budget commitments");
  await run("new", ranger, "completed", "webhook", "2026-01-08", "Triage the new GitHub issue");
  await run("bobs", bobs, "failed", "manual", "2026-01-08", "Bob's own task");
  browser = await login(app, w, w.alice);
});
afterAll(async () => {
  await app.close();
});

/** The run ids a /runs answer lists, in order (markdown or HTML alike: each links its run page). */
const listed = (body: string) =>
  [...body.matchAll(/\/subagents\/[\w-]+\/runs\/(\w+)/g)]
    .map((m) => m[1])
    .filter((id, i, all) => all.indexOf(id) === i);
const keys = (body: string) => listed(body).map((id) => Object.entries(ids).find(([, v]) => v === id)?.[0]);

async function both(query: string) {
  const mdRes = await md(app, w, w.alice, "GET", `/runs${query}`);
  const html = await browser.get(`/runs${query}`);
  return { md: mdRes, html };
}

describe("/runs", () => {
  it("lists every run of every agent its viewer manages, newest first, with steps, tokens and cost", async () => {
    const { md: m, html } = await both("");
    expect(m.statusCode).toBe(200);
    expect(html.statusCode).toBe(200);
    expect(keys(m.body)).toEqual(["new", "ranger", "failed", "old"]);
    expect(keys(html.body)).toEqual(["new", "ranger", "failed", "old"]);
    expect(m.body).toContain("| queued | agent | status | trigger | steps | tokens | cost | task |");
    expect(m.body).toContain(
      "| @ranger | **completed** | webhook | 3 | 1200 | $0.0045 | Triage the new GitHub issue |",
    );
    expect(m.body).not.toContain("Bob's own task");
    // Bob manages only his agent.
    expect(keys((await md(app, w, w.bob, "GET", "/runs")).body)).toEqual(["bobs"]);
  });

  it("filters by status, agent, trigger, day and task text, in both formats, and pages with the filters kept", async () => {
    const cases: [string, string[]][] = [
      ["?status=failed", ["ranger", "failed"]],
      ["?status=failed&agent=scout", ["failed"]],
      ["?agent=%40ranger", ["new", "ranger"]],
      ["?trigger=schedule", ["failed"]],
      ["?from=2026-01-06&to=2026-01-07", ["ranger", "failed"]],
      ["?to=2026-01-05", ["old"]],
      ["?q=OFFSITE", ["old"]],
      ["?q=budget&status=failed", ["ranger"]],
      ["?status=&agent=&trigger=&from=&to=&q=", ["new", "ranger", "failed", "old"]],
      ["?status=running", []],
    ];
    for (const [query, want] of cases) {
      const { md: m, html } = await both(query);
      expect.soft([m.statusCode, keys(m.body)], `md ${query}`).toEqual([200, want]);
      expect.soft([html.statusCode, keys(html.body)], `html ${query}`).toEqual([200, want]);
    }
    // The HTML form shows the filters in use.
    const { html } = await both("?status=failed&agent=scout");
    expect(html.body).toMatch(/<option value="failed" selected>/);
    expect(html.body).toMatch(/<option value="scout" selected>@scout<\/option>/);
  });

  it("pages, keeping its filters in the pager's links", async () => {
    for (let i = 0; i < 21; i++)
      await testPrisma().subagentTaskRun.create({
        data: {
          id: newId(),
          tenantId: w.tenant.id,
          agentId: scout.id,
          triggerKind: "manual",
          task: `Bulk ${i}`,
          status: "cancelled",
          maxSteps: 10,
          timeoutSeconds: 60,
          createdAt: new Date(Date.UTC(2026, 1, 1, 0, i)),
        },
      });
    const first = await md(app, w, w.alice, "GET", "/runs?status=cancelled");
    expect(listed(first.body)).toHaveLength(20);
    expect(first.body).toContain("Page 1 of 2 (21 in all)");
    expect(first.body).toContain("[Next](/runs?status=cancelled&page=2)");
    const second = await md(app, w, w.alice, "GET", "/runs?status=cancelled&page=2");
    expect(listed(second.body)).toHaveLength(1);
    expect(second.body).toContain("Bulk 0");
  });

  it("refuses a filter it cannot read with a 400 naming it, in the request's format", async () => {
    const bad: [string, string, RegExp][] = [
      ["?status=broken", "status", /“broken” is not a run status/],
      ["?agent=bobbot", "agent", /you manage no agent @bobbot/],
      ["?trigger=telepathy", "trigger", /“telepathy” is not a trigger/],
      ["?from=2026-02-30", "from", /a date as YYYY-MM-DD/],
      ["?to=yesterday", "to", /a date as YYYY-MM-DD/],
      ["?from=2026-01-08&to=2026-01-01", "to", /is before from/],
      [`?q=${"x".repeat(201)}`, "q", /at most 200 characters/],
    ];
    for (const [query, field, message] of bad) {
      const { md: m, html } = await both(query);
      expect.soft(m.statusCode, query).toBe(400);
      expect.soft(m.headers["content-type"], query).toContain("text/markdown");
      expect.soft(m.body, query).toContain(`- \`${field}\`: `);
      expect.soft(m.body, query).toMatch(message);
      expect.soft(html.statusCode, query).toBe(400);
      expect.soft(html.headers["content-type"], query).toContain("text/html");
      expect.soft(html.body, query).toContain(`<strong>${field}</strong>: `);
    }
    // Two at once: both named.
    const two = await md(app, w, w.alice, "GET", "/runs?status=x&trigger=y");
    expect(two.body).toMatch(/`status`: .*`trigger`: /s);
  });
});
