// A studio's outgoing webhook answers to a person: its page and the list say who set it up,
// and when that person leaves the studio (removed, or leaving), the endpoint is paused in the
// same transaction, until a remaining admin confirms it. Meanwhile its deliveries wait,
// pending and untried, while the studio's other endpoints deliver; confirming sends what
// waited, once, and makes the confirming admin its owner. The remaining admins are told in the
// pause's transaction: a notification each, a mail to those who hear of approvals by mail.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mailTo } from "./helpers/account-mail.ts";
import type { AgentEnv } from "./helpers/agents.ts";
import {
  act,
  addMember,
  makeWorld,
  md,
  type Person,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import { type Inbox, startMailing } from "./helpers/inbox.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

let app: FastifyInstance;
let env: AgentEnv;
let receiver: Receiver;
let inbox: Inbox;
let close: () => Promise<void>;
beforeAll(async () => {
  receiver = await startReceiver();
  ({ app, env, inbox, close } = await startMailing("reach-pause"));
});
afterAll(async () => {
  await close();
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

/**
 * The remaining admins were told in the pause's transaction (the notifications, the mail row
 * while still queued, and the paused endpoint share its xmin): each in the app, by mail only who hears of
 * approvals by mail; the person who left, neither.
 */
async function toldOfPause(
  w: World,
  endpointId: string,
  who: { mailed: Person; inAppOnly: Person; gone: Person },
) {
  const told = await db().notification.findMany({
    where: { tenantId: w.tenant.id, path: { contains: endpointId } },
    orderBy: { userId: "asc" },
  });
  expect(told.map((row) => row.userId).sort()).toEqual([who.mailed.id, who.inAppOnly.id].sort());
  for (const row of told) {
    const handle = row.userId === who.mailed.id ? who.mailed.handle : who.inAppOnly.handle;
    expect(row).toMatchObject({ path: `/u/${handle}/settings/webhooks/${endpointId}` });
    expect(row.excerpt).toBe(
      `General's outgoing webhook “Dana's hook” is paused: @dana left General, who set it up. Deliveries wait until an admin confirms it.`,
    );
  }
  const mails = await db().outboundEmail.findMany({
    where: { tenantId: w.tenant.id, kind: "endpoints.paused" },
  });
  expect(mails.map((mail) => mail.userId)).toEqual([who.mailed.id]);
  const xmin = async (table: string, id: string) =>
    (
      await db().$queryRawUnsafe<{ x: string }[]>(`SELECT xmin::text AS x FROM ${table} WHERE id = $1`, id)
    )[0]!.x;
  const paused = await xmin("outbound_endpoints", endpointId);
  for (const row of told) expect(await xmin("notifications", row.id)).toBe(paused);
  // A mail the worker has claimed or sent was rewritten since: only an untouched one still shows its transaction.
  const untouched = await db().$queryRawUnsafe<{ x: string }[]>(
    "SELECT xmin::text AS x FROM outbound_emails WHERE id = $1 AND claimed_until IS NULL AND attempts = 0 AND status = 'queued'",
    mails[0]!.id,
  );
  for (const row of untouched) expect(row.x).toBe(paused);
  const mail = await mailTo(inbox, who.mailed.email, /an outgoing webhook is paused until you confirm it/);
  expect(mail.text).toContain("@dana left General, who set it up");
  expect(mail.text).toContain(`/u/${who.mailed.handle}/settings/webhooks/${endpointId}`);
  expect(inbox.to(who.inAppOnly.email)).toEqual([]);
  expect(
    await db().notification.count({ where: { userId: who.gone.id, path: { contains: endpointId } } }),
  ).toBe(0);
}

describe("a studio endpoint whose creator leaves", () => {
  it("is paused until a remaining admin confirms it; its deliveries wait, then go out once", async () => {
    const w = await makeWorld("pause");
    const dana = await addMember(w, "dana", "Dana Diaz", "admin");
    // A remaining admin who hears of what waits for them in the app only.
    const erin = await addMember(w, "erin", "Erin Eze", "admin");
    await db().user.update({ where: { id: erin.id }, data: { reachPrefs: { approval: "app" } } });
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
    await toldOfPause(w, danas.id, { mailed: w.alice, inAppOnly: erin, gone: dana });

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
