// Housekeeping of what reached people: the worker's maintenance sweep deletes mails that went
// out and deliveries that settled once they are a month old, and review links a month past
// their expiry; nothing still waiting to go out is touched, however old.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { OUTBOUND_RETENTION_DAYS } from "../src/services/reach/sweep.ts";
import { type AgentEnv, makeAgent, startAgents } from "./helpers/agents.ts";
import { act, makeWorld, testPrisma, type World, waitFor } from "./helpers/app.ts";

let env: AgentEnv;
beforeAll(async () => {
  env = await startAgents("reach-retention");
});
afterAll(async () => {
  await env.close();
});

const db = testPrisma;
const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000);
const OLD = OUTBOUND_RETENTION_DAYS + 1;
const RECENT = OUTBOUND_RETENTION_DAYS - 1;

function mail(w: World, label: string, status: "queued" | "held" | "sent" | "digested", age: number) {
  const at = daysAgo(age);
  return db().outboundEmail.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, userId: w.alice.id, eventId: `ev-${label}`, kind: "approval" },
      ...{ subject: label, text: label, html: label, status, createdAt: at, nextAttemptAt: at },
      ...(status === "sent" && { sentAt: at }),
    },
  });
}

async function deliveries(w: World) {
  await act(w, w.alice, "/u/alice/settings/webhooks", "create_outgoing_webhook", {
    name: "Ops",
    url: "https://hooks.example.com/cadre",
    run_failed: true,
  });
  const ep = await db().outboundEndpoint.findFirstOrThrow({ where: { tenantId: w.tenant.id } });
  const row = (label: string, status: "pending" | "delivered" | "failed", age: number, next = age) =>
    db().outboundDelivery.create({
      data: {
        ...{
          id: newId(),
          tenantId: w.tenant.id,
          endpointId: ep.id,
          eventId: `ev-${label}`,
          eventType: label,
        },
        ...{ body: "{}", status, createdAt: daysAgo(age), nextAttemptAt: daysAgo(next) },
      },
    });
  await row("delivered-old", "delivered", OLD);
  await row("failed-old", "failed", OLD);
  await row("delivered-recent", "delivered", RECENT);
  // Waiting for its next try (in an hour): made long ago, still to go out.
  await row("pending-old", "pending", OLD, -1 / 24);
}

async function links(w: World) {
  const scout = await makeAgent(w, w.alice);
  const pending = await db().agentPendingAction.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, agentId: scout.id, actionName: "create_note", params: {} },
      ...{ pagePath: "/studios/general", contextSummary: "test", matchedRule: "requires_approval" },
      expiresAt: daysAgo(OLD),
    },
  });
  const link = (label: string, expiresAt: Date) =>
    db().reviewLink.create({
      data: {
        ...{ id: newId(), tenantId: w.tenant.id, pendingId: pending.id, userId: w.alice.id },
        ...{ decision: label, tokenHash: `hash-${label}`, paramsHash: "p", expiresAt },
      },
    });
  await link("long-expired", daysAgo(OLD));
  // Expired yesterday: its page still says so, rather than that it never existed.
  await link("just-expired", daysAgo(1));
  await link("live", new Date(Date.now() + 86_400_000));
}

describe("retention of what reached people", () => {
  it("the sweep deletes sent mails and settled deliveries a month old, and links a month expired", async () => {
    const w = await makeWorld();
    await mail(w, "sent-old", "sent", OLD);
    await mail(w, "digested-old", "digested", OLD);
    await mail(w, "sent-recent", "sent", RECENT);
    await mail(w, "held-old", "held", OLD);
    await mail(w, "queued-old", "queued", OLD);
    await deliveries(w);
    await links(w);

    const where = { tenantId: w.tenant.id };
    await waitFor(async () => (await db().outboundEmail.count({ where })) === 3, 10_000);
    await waitFor(async () => (await db().reviewLink.count({ where })) === 2, 10_000);
    await waitFor(async () => (await db().outboundDelivery.count({ where })) === 2, 10_000);
    const left = {
      mails: (await db().outboundEmail.findMany({ where })).map((m) => m.subject).sort(),
      deliveries: (await db().outboundDelivery.findMany({ where })).map((d) => d.eventType).sort(),
      links: (await db().reviewLink.findMany({ where })).map((l) => l.decision).sort(),
    };
    expect(left).toEqual({
      mails: ["held-old", "queued-old", "sent-recent"],
      deliveries: ["delivered-recent", "pending-old"],
      links: ["just-expired", "live"],
    });
  });
});
