// Outgoing webhooks against a real HTTP receiver in this process: deliveries signed as
// inbound webhooks are, retried with backoff on a 500, an endpoint turned off (and its owner
// told) after repeated failures, a Slack-compatible body, a delivery log in both formats,
// a test event, a studio's endpoint kept by all its admins, and never a delivery to another
// workspace's endpoint.
import { createHmac } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { runById } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents } from "./helpers/agents.ts";
import {
  act,
  addMember,
  buildTestApp,
  login,
  makeWorld,
  md,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import { type Harness, noteStep, runTask, setupAgent } from "./helpers/approvals.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

let app: FastifyInstance;
let env: AgentEnv;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  app = await buildTestApp();
  // Three attempts a delivery, 200 ms then 400 ms apart; two failed deliveries turn it off.
  env = await startAgents("reach-hooks", {
    OUTBOUND_ATTEMPTS: "3",
    OUTBOUND_BACKOFF_MS: "200",
    OUTBOUND_DISABLE_AFTER: "2",
  });
});
afterAll(async () => {
  await env.close();
  await app.close();
  await receiver.close();
});

const db = testPrisma;
const h: Harness = { app: () => app, env: () => env };
const PAGE = "/u/alice/settings/webhooks";

async function endpoint(w: World, body: Record<string, unknown>) {
  const res = await md(app, w, w.alice, "POST", `${PAGE}/actions/create_outgoing_webhook`, {
    name: "Ops channel",
    url: receiver.url,
    approval_requested: true,
    run_failed: true,
    run_finished: true,
    ...body,
  });
  expect(res.statusCode, res.body).toBe(201);
  const secret = /whsec_[A-Za-z0-9_-]+/.exec(res.body)?.[0];
  expect(secret).toBeTruthy();
  const row = await db().outboundEndpoint.findFirstOrThrow({
    where: { tenantId: w.tenant.id },
    orderBy: { createdAt: "desc" },
  });
  return { row, secret: secret! };
}

const hitsFor = (w: World) => receiver.hits.filter((x) => x.body.includes(w.tenant.subdomain));

/** Slack's incoming webhooks take `text`, and `blocks` of sections and actions with buttons. */
const slackBody = z
  .object({
    text: z.string().min(1),
    blocks: z.array(
      z.discriminatedUnion("type", [
        z.object({
          type: z.literal("section"),
          text: z.object({ type: z.literal("mrkdwn"), text: z.string().min(1) }),
        }),
        z.object({
          type: z.literal("actions"),
          elements: z.array(
            z.object({
              type: z.literal("button"),
              text: z.object({ type: z.literal("plain_text"), text: z.string() }),
              url: z.string().url(),
            }),
          ),
        }),
      ]),
    ),
  })
  .strict();

describe("outgoing webhooks", () => {
  it("an approval request is delivered signed, with a review link; the log shows it in both formats", async () => {
    receiver.answer(200);
    const { w } = await setupAgent(h, { requires_approval: ["create_note"] }, () => [noteStep]);
    const { row, secret } = await endpoint(w, {});
    await runTask(h, w);
    const hit = await waitFor(
      async () => hitsFor(w).find((x) => x.headers["x-cadre-event"] === "approval.requested") ?? null,
      10_000,
    );
    const sig = String(hit.headers["x-cadre-signature"]);
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig) ?? [];
    expect(v1).toBe(createHmac("sha256", secret).update(`${t}.${hit.body}`).digest("hex"));
    const body = JSON.parse(hit.body);
    expect(body).toMatchObject({
      event: "approval.requested",
      workspace: w.tenant.subdomain,
      agent: { handle: "scout" },
      summary: "@scout wants your approval to post a note, in the studio General",
      pending_action: { action: "create_note" },
    });
    expect(body.url).toMatch(/\/subagents\/scout\/pending\/\w+$/);
    expect(hit.body).not.toContain("All good");
    expect(hit.headers["x-cadre-delivery"]).toBe(body.id);
    const log = await md(app, w, w.alice, "GET", `${PAGE}/${row.id}`);
    expect(log.body).toContain("`approval.requested` | **delivered** | 1 |");
    const browser = await login(app, w, w.alice);
    expect((await browser.get(`${PAGE}/${row.id}`)).body).toContain("delivered");
    // The secret was shown once: never on the page again.
    expect(log.body).not.toContain(secret);
  });

  it("a 500 is retried with backoff; repeated failures turn the endpoint off and tell its owner", async () => {
    receiver.answer(500);
    const { w } = await setupAgent(h, {}, () => []);
    const { row } = await endpoint(w, { run_finished: true });
    env.llm.setScript([{ tool: { name: "finish", args: { message: "one" } } }]);
    await runTask(h, w, "First");
    const first = await waitFor(
      () => db().outboundDelivery.findFirst({ where: { endpointId: row.id, status: "failed" } }),
      15_000,
    );
    expect(first.attempts).toBe(3);
    expect(first.lastStatus).toBe(500);
    expect(first.lastError).toContain("receiver says no");
    const times = hitsFor(w).map((x) => x.at);
    expect(times).toHaveLength(3);
    // Exponential from OUTBOUND_BACKOFF_MS (200): at least 200 ms, then at least 400 ms. Only
    // lower bounds (less 50 ms for timer granularity): a loaded machine makes waits longer,
    // never shorter, so comparing the two waits with each other would race.
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(150);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(350);
    expect((await db().outboundEndpoint.findUniqueOrThrow({ where: { id: row.id } })).enabled).toBe(true);

    env.llm.setScript([{ tool: { name: "finish", args: { message: "two" } } }]);
    await runTask(h, w, "Second");
    await waitFor(async () => {
      const ep = await db().outboundEndpoint.findUniqueOrThrow({ where: { id: row.id } });
      return ep.enabled ? null : ep;
    }, 15_000);
    const told = await waitFor(
      () => db().notification.findFirst({ where: { userId: w.alice.id, path: `${PAGE}/${row.id}` } }),
      10_000,
    );
    expect(told.excerpt).toContain("was turned off: 2 deliveries in a row failed");
    // Off: a third run sends nothing.
    const before = hitsFor(w).length;
    env.llm.setScript([{ tool: { name: "finish", args: { message: "three" } } }]);
    const third = await runTask(h, w, "Third");
    await waitFor(async () => (await runById(third)).status === "completed" || null, 20_000);
    await new Promise((r) => setTimeout(r, 800));
    expect(hitsFor(w).length).toBe(before);
    // On again: its count starts over.
    receiver.answer(200);
    const on = await md(app, w, w.alice, "POST", `${PAGE}/${row.id}/actions/enable_outgoing_webhook`, {
      id: row.id,
    });
    expect(on.statusCode).toBe(200);
    expect((await db().outboundEndpoint.findUniqueOrThrow({ where: { id: row.id } })).failures).toBe(0);
  }, 40_000);

  it("Slack format: a body an incoming webhook accepts, with a link to review", async () => {
    receiver.answer(200);
    const { w } = await setupAgent(h, { requires_approval: ["create_note"] }, () => [noteStep]);
    await endpoint(w, { format: "slack" });
    await runTask(h, w);
    // A Slack body has no workspace field: its review link names the workspace.
    const slack = await waitFor(
      async () => hitsFor(w).find((x) => x.body.includes("wants your approval")) ?? null,
      10_000,
    );
    // Every delivery to it is Slack's shape (the run's end too).
    for (const x of hitsFor(w)) slackBody.parse(JSON.parse(x.body));
    const body = slackBody.parse(JSON.parse(slack.body));
    expect(body.text).toMatch(
      /@scout wants your approval to post a note, in the studio General <http:\/\/\S+\/pending\/\w+\|Review>/,
    );
  });

  it("the test event goes through the queue, signed", async () => {
    receiver.answer(200);
    const { w } = await setupAgent(h, {}, () => []);
    const { row } = await endpoint(w, {});
    const res = await md(app, w, w.alice, "POST", `${PAGE}/${row.id}/actions/test_outgoing_webhook`, {
      id: row.id,
    });
    expect(res.statusCode).toBe(200);
    const hit = await waitFor(
      async () => hitsFor(w).find((x) => x.headers["x-cadre-event"] === "ping") ?? null,
      10_000,
    );
    expect(JSON.parse(hit.body)).toMatchObject({ event: "ping", workspace: w.tenant.subdomain });
  });

  it("bad input: a URL that is not one, no event ticked, a studio the person does not admin", async () => {
    const { w } = await setupAgent(h, {}, () => []);
    const bad = async (body: Record<string, unknown>, field: string) => {
      const res = await md(
        app,
        w,
        w.bob,
        "POST",
        "/u/bob/settings/webhooks/actions/create_outgoing_webhook",
        {
          name: "x",
          url: receiver.url,
          run_failed: true,
          ...body,
        },
      );
      expect(res.statusCode, res.body).toBe(400);
      expect(res.body).toContain(field);
    };
    await bad({ url: "ftp://example.com" }, "`url`");
    await bad({ run_failed: false }, "`events`");
    await bad({ studio: "general" }, "`studio`");
  });

  it("never delivers one workspace's events to another's endpoint", async () => {
    receiver.answer(200);
    const a = await setupAgent(h, { requires_approval: ["create_note"] }, () => [noteStep]);
    const b = await makeWorld();
    await makeAgent(b, b.alice, "scout");
    const { row: bEndpoint } = await endpoint(b, {});
    const { row: aEndpoint } = await endpoint(a.w, {});
    await runTask(h, a.w);
    await waitFor(
      () => db().outboundDelivery.findFirst({ where: { endpointId: aEndpoint.id, status: "delivered" } }),
      10_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(await db().outboundDelivery.count({ where: { endpointId: bEndpoint.id } })).toBe(0);
    const bPage = await md(app, b, b.alice, "GET", `${PAGE}/${aEndpoint.id}`);
    expect(bPage.statusCode).toBe(404);
  });

  it("a studio's endpoint hears the studio agent's runs; every admin keeps it and is told when it turns off", async () => {
    receiver.answer(200);
    const w = await makeWorld();
    const dana = await addMember(w, "dana", "Dana Diaz", "admin");
    await act(w, w.alice, "/studios/general", "create_subagent", { name: "Scribe", handle: "scribe" });
    const { row } = await endpoint(w, { studio: "general", approval_requested: false });
    expect(row.studioId).toBe(w.studio.id);
    const run = (message: string) => {
      env.llm.setScript([{ tool: { name: "finish", args: { message } } }]);
      return md(app, w, w.alice, "POST", "/subagents/scribe/run/actions/run_task", { task: message });
    };
    expect((await run("Minutes")).statusCode).toBe(201);
    const hit = await waitFor(async () => hitsFor(w).find((x) => x.body.includes('"run.finished"')), 10_000);
    expect(JSON.parse(hit.body)).toMatchObject({ event: "run.finished", agent: { handle: "scribe" } });

    // Dana, who did not make it, sees and manages it under her own settings; bob, a member, cannot.
    const mine = `/u/dana/settings/webhooks/${row.id}`;
    expect((await md(app, w, dana, "GET", "/u/dana/settings/webhooks")).body).toContain("Ops channel");
    const off = await md(app, w, dana, "POST", `${mine}/actions/disable_outgoing_webhook`, { id: row.id });
    expect([off.statusCode, off.body]).toEqual([200, expect.stringContaining("is off")]);
    const bobs = await md(
      app,
      w,
      w.bob,
      "POST",
      `/u/bob/settings/webhooks/${row.id}/actions/enable_outgoing_webhook`,
      {
        id: row.id,
      },
    );
    expect(bobs.statusCode).toBe(404);
    const on = await md(app, w, dana, "POST", `${mine}/actions/enable_outgoing_webhook`, { id: row.id });
    expect(on.statusCode).toBe(200);

    // Two failed deliveries turn it off: alice and dana are each told once, at their own page.
    receiver.answer(500);
    await run("First");
    await waitFor(
      () => db().outboundDelivery.findFirst({ where: { endpointId: row.id, status: "failed" } }),
      15_000,
    );
    await run("Second");
    const told = await waitFor(async () => {
      const rows = await db().notification.findMany({ where: { path: { endsWith: row.id } } });
      return rows.length >= 2 ? rows : null;
    }, 15_000);
    await new Promise((r) => setTimeout(r, 300));
    const all = await db().notification.findMany({ where: { path: { endsWith: row.id } } });
    expect(all.map((n) => [n.userId, n.path]).sort()).toEqual(
      [
        [w.alice.id, `${PAGE}/${row.id}`],
        [dana.id, mine],
      ].sort(),
    );
    expect(told[0]!.excerpt).toContain("General's outgoing webhook “Ops channel” was turned off");
    expect((await md(app, w, dana, "GET", "/notifications")).body).toContain("was turned off");
    receiver.answer(200);
  }, 40_000);
});
