// A studio's outgoing webhook answers to a person: its page and the list say who set it up,
// and when that person leaves the studio (removed, or leaving), the endpoint is paused in the
// same transaction, until a remaining admin confirms it. Meanwhile its deliveries wait,
// pending and untried, while the studio's other endpoints deliver; confirming sends what
// waited, once, and makes the confirming admin its owner.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentEnv, startAgents } from "./helpers/agents.ts";
import {
  act,
  addMember,
  buildTestApp,
  makeWorld,
  md,
  type Person,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

let app: FastifyInstance;
let env: AgentEnv;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  app = await buildTestApp();
  env = await startAgents("reach-pause");
});
afterAll(async () => {
  await env.close();
  await app.close();
  await receiver.close();
});

const db = testPrisma;

/** A studio endpoint for General, set up by `who`, hearing finished runs. */
async function studioEndpoint(w: World, who: Person, name: string) {
  const res = await md(
    app,
    w,
    who,
    "POST",
    `/u/${who.handle}/settings/webhooks/actions/create_outgoing_webhook`,
    {
      name,
      url: receiver.url,
      studio: "general",
      run_finished: true,
    },
  );
  expect(res.statusCode, res.body).toBe(201);
  return db().outboundEndpoint.findFirstOrThrow({ where: { tenantId: w.tenant.id, name } });
}

const hitOf = (deliveryId: string) =>
  receiver.hits.filter((hit) => hit.headers["x-cadre-delivery"] === deliveryId);

describe("a studio endpoint whose creator leaves", () => {
  it("is paused until a remaining admin confirms it; its deliveries wait, then go out once", async () => {
    const w = await makeWorld("pause");
    const dana = await addMember(w, "dana", "Dana Diaz", "admin");
    await act(w, w.alice, "/studios/general", "create_subagent", { name: "Scribe", handle: "scribe" });
    const danas = await studioEndpoint(w, dana, "Dana's hook");
    const alices = await studioEndpoint(w, w.alice, "Alice's hook");
    const list = (await md(app, w, w.alice, "GET", "/u/alice/settings/webhooks")).body;
    expect(list).toMatch(/Dana's hook\]\([^)]+\) \| General \| @dana \|/);
    expect((await md(app, w, w.alice, "GET", `/u/alice/settings/webhooks/${danas.id}`)).body).toContain(
      "set up by @dana",
    );

    // Alice removes Dana: the confirmation says what it paused.
    const removed = await md(app, w, w.alice, "POST", "/studios/general/members/actions/remove_member", {
      handle: "dana",
    });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.body).toContain(
      "The outgoing webhook they set up is paused until an admin confirms it; deliveries wait meanwhile",
    );
    expect(await db().outboundEndpoint.findUniqueOrThrow({ where: { id: danas.id } })).toMatchObject({
      pausedReason: "@dana left General",
      ownerId: dana.id,
    });
    expect((await db().outboundEndpoint.findUniqueOrThrow({ where: { id: alices.id } })).pausedAt).toBeNull();

    // A run finishes: Alice's endpoint hears of it; Dana's delivery waits, untried.
    env.llm.setScript([{ tool: { name: "finish", args: { message: "Minutes" } } }]);
    const run = await md(app, w, w.alice, "POST", "/subagents/scribe/run/actions/run_task", {
      task: "Minutes",
    });
    expect(run.statusCode).toBe(201);
    const delivered = await waitFor(
      () => db().outboundDelivery.findFirst({ where: { endpointId: alices.id, status: "delivered" } }),
      15_000,
    );
    expect(hitOf(delivered.id)).toHaveLength(1);
    const waiting = await waitFor(
      () => db().outboundDelivery.findFirst({ where: { endpointId: danas.id } }),
      15_000,
    );
    expect(waiting).toMatchObject({ status: "pending", attempts: 0 });
    expect(hitOf(waiting.id)).toEqual([]);
    const page = `/u/alice/settings/webhooks/${danas.id}`;
    const shown = (await md(app, w, w.alice, "GET", page)).body;
    expect(shown).toContain("**paused** (@dana left General: an admin confirms it; deliveries wait)");
    expect(shown).toContain("confirm_outgoing_webhook");

    // Bob, a member, cannot confirm it; Alice does, and what waited goes out once.
    const bobs = await md(
      app,
      w,
      w.bob,
      "POST",
      `/u/bob/settings/webhooks/${danas.id}/actions/confirm_outgoing_webhook`,
      {
        id: danas.id,
      },
    );
    expect(bobs.statusCode).toBe(404);
    const confirmed = await md(app, w, w.alice, "POST", `${page}/actions/confirm_outgoing_webhook`, {
      id: danas.id,
    });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect(confirmed.body).toContain("sends again, now as yours: 1 waiting delivery goes out in a moment");
    const sent = await waitFor(async () => {
      const row = await db().outboundDelivery.findUniqueOrThrow({ where: { id: waiting.id } });
      return row.status === "delivered" ? row : null;
    }, 30_000);
    expect(sent.attempts).toBe(1);
    expect(hitOf(waiting.id)).toHaveLength(1);
    expect(await db().outboundEndpoint.findUniqueOrThrow({ where: { id: danas.id } })).toMatchObject({
      pausedAt: null,
      ownerId: w.alice.id,
    });
    const again = await md(app, w, w.alice, "POST", `${page}/actions/confirm_outgoing_webhook`, {
      id: danas.id,
    });
    expect(again.statusCode).toBe(409);
  }, 90_000);
});
