// Claiming runs in one statement: one running run per agent, oldest first, however many
// workers claim at once; a run whose worker died is claimed again, then given up.
import { describe, expect, it } from "vitest";
import { createPrisma } from "../src/db/prisma.ts";
import { newId } from "../src/lib/ids.ts";
import { claimNext, MAX_WORKER_LOSSES, queueRun, requeue } from "../src/services/agents/core/runs.ts";
import { readWhoami } from "../src/services/agents/core/whoami-read.ts";
import { toActor } from "../src/services/registry/types.ts";
import { makeAgent } from "./helpers/agents.ts";
import { fileDatabaseUrl, makeWorld, testPrisma, waitFor } from "./helpers/app.ts";

const db = testPrisma();

async function world(runs: number) {
  const w = await makeWorld("claim");
  const agent = await makeAgent(w, w.alice, "scout");
  const ids: string[] = [];
  for (let i = 0; i < runs; i++) {
    const run = await queueRun(db, {
      tenantId: w.tenant.id,
      agentId: agent.id,
      initiatedById: w.alice.id,
      triggerKind: "manual",
      chainDepth: 0,
      task: `task ${i}`,
      model: null,
      maxSteps: 5,
      timeoutSeconds: 60,
    });
    ids.push(run!.id);
  }
  return { agent, ids };
}

describe("claimNext", () => {
  it("under 12 concurrent claims, exactly one run is claimed, and it is the oldest", async () => {
    const { agent, ids } = await world(3);
    // Separate connections and transactions, as claims from several workers would be (one
    // worker's claims at once go together: the next test), so they really race inside
    // Postgres; the agent's row is held meanwhile, so every claim takes its snapshot before
    // any of them commits.
    const pool = createPrisma(fileDatabaseUrl(), 13);
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => {
        locked = r;
      });
      const holder = pool.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT id FROM users WHERE id = ${agent.id} FOR UPDATE`;
        locked();
        await held;
      });
      await isLocked;
      const racing = Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          pool.$transaction(
            (tx) => claimNext(tx, i % 2 ? { agentId: agent.id } : { runId: ids[2]! }, `worker-${i}`, 30),
            { maxWait: 20_000, timeout: 20_000 },
          ),
        ),
      );
      await waitFor(async () => {
        const [row] = await db.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`;
        return (row?.n ?? 0) >= 12 || null;
      });
      release();
      await holder;
      const claims = await racing;
      const won = claims.filter((c) => c.start);
      expect(won).toHaveLength(1);
      expect(won[0]!.start?.run).toMatchObject({ id: ids[0], status: "running", attempts: 1 });
      expect(claims.every((c) => c.agentId === agent.id && !c.retry)).toBe(true);
      const running = await db.subagentTaskRun.findMany({ where: { agentId: agent.id, status: "running" } });
      expect(running.map((r) => r.id)).toEqual([ids[0]]);
    } finally {
      await pool.$disconnect();
    }
  });

  it("one worker's claims at once go together: one claims the oldest run, the others find the agent busy", async () => {
    const { agent, ids } = await world(3);
    const other = await world(1);
    const claims = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) =>
        claimNext(db, i % 2 ? { agentId: agent.id } : { runId: ids[1 + (i % 2)]! }, "w1", 30),
      ),
      claimNext(db, { runId: other.ids[0]! }, "w1", 30),
    ]);
    const won = claims.filter((c) => c.start);
    expect(won.map((c) => c.start!.run.id).sort()).toEqual([ids[0], other.ids[0]].sort());
    expect(claims.slice(0, 6).every((c) => c.agentId === agent.id && !c.retry)).toBe(true);
    expect(claims[6]!.start?.agent.id).toBe(other.agent.id);
    const [row] = await db.$queryRaw<{ n: number }[]>`
      SELECT count(DISTINCT xmin::text)::int AS n FROM subagent_task_runs WHERE id IN (${ids[0]}, ${other.ids[0]})`;
    expect(row!.n).toBeLessThanOrEqual(2);
  });

  it("claims nothing while the agent's run holds a live lease; the next one after it ends", async () => {
    const { agent, ids } = await world(2);
    expect((await claimNext(db, { agentId: agent.id }, "w1", 30)).start?.run.id).toBe(ids[0]);
    expect((await claimNext(db, { agentId: agent.id }, "w2", 30)).start).toBeNull();
    await db.subagentTaskRun.update({
      where: { id: ids[0] },
      data: { status: "completed", leaseOwner: null },
    });
    expect((await claimNext(db, { agentId: agent.id }, "w2", 30)).start?.run.id).toBe(ids[1]);
  });

  it("reclaims a run whose lease expired, then gives it up after MAX_WORKER_LOSSES and moves on", async () => {
    const { agent, ids } = await world(2);
    const expire = () =>
      db.subagentTaskRun.update({
        where: { id: ids[0] },
        data: { leaseExpiresAt: new Date(Date.now() - 1000) },
      });
    for (let attempt = 1; attempt <= MAX_WORKER_LOSSES; attempt++) {
      const claim = await claimNext(db, { agentId: agent.id }, `w${attempt}`, 30);
      expect(claim.start?.run).toMatchObject({ id: ids[0], attempts: attempt, leaseOwner: `w${attempt}` });
      await expire();
    }
    const gaveUp = await claimNext(db, { agentId: agent.id }, "w-last", 30);
    expect(gaveUp).toMatchObject({ start: null, retry: true });
    expect(await db.subagentTaskRun.findUniqueOrThrow({ where: { id: ids[0] } })).toMatchObject({
      status: "failed",
      stopReason: "worker_lost",
      leaseOwner: null,
      error: expect.stringContaining(`lost ${MAX_WORKER_LOSSES} times in a row`),
    });
    expect((await claimNext(db, { agentId: agent.id }, "w-last", 30)).start?.run.id).toBe(ids[1]);
  });

  it("takes the limit of lost workers from the worker, and does not count a wait for a person as one", async () => {
    const { agent, ids } = await world(1);
    const expire = () =>
      db.subagentTaskRun.update({
        where: { id: ids[0] },
        data: { leaseExpiresAt: new Date(Date.now() - 1000) },
      });
    const claimed = await claimNext(db, { agentId: agent.id }, "w1", 30, 1);
    expect(claimed.start?.run).toMatchObject({ id: ids[0], attempts: 1 });
    // It asked its owner and was answered: queued again, a fresh stretch of work.
    await db.subagentTaskRun.update({ where: { id: ids[0] }, data: { status: "waiting" } });
    await requeue(db, claimed.start!.run, agent.id);
    expect((await claimNext(db, { agentId: agent.id }, "w2", 30, 1)).start?.run).toMatchObject({
      attempts: 1,
    });
    await expire();
    expect(await claimNext(db, { agentId: agent.id }, "w3", 30, 1)).toMatchObject({
      start: null,
      retry: true,
    });
    expect(await db.subagentTaskRun.findUniqueOrThrow({ where: { id: ids[0] } })).toMatchObject({
      stopReason: "worker_lost",
      error: expect.stringContaining("lost 1 time in a row"),
    });
  });

  it("a claim brings what the run starts with: its agent and owner, the tenant, its /whoami", async () => {
    const { agent, ids } = await world(1);
    const row = await db.user.findUniqueOrThrow({ where: { id: agent.id } });
    const config = { model: "m-1", identity_prompt: "Be brief.", cost_limit_usd: 7 };
    await db.user.update({ where: { id: agent.id }, data: { agentConfig: config } });
    const month = new Date().toISOString().slice(0, 7);
    await db.agentUsageMonth.create({
      data: { agentId: agent.id, month, tenantId: row.tenantId, calls: 2, costMicros: 1_234_567n },
    });
    // Last month's spend is not this month's.
    await db.agentUsageMonth.create({
      data: { agentId: agent.id, month: "2001-01", tenantId: row.tenantId, calls: 1, costMicros: 9n },
    });
    const tenant = await db.tenant.findUniqueOrThrow({ where: { id: row.tenantId } });
    const owner = await db.user.findUniqueOrThrow({ where: { id: agent.ownerId } });
    // Two notifications for the agent, one dismissed: /whoami shows the unread one.
    for (const dismissedAt of [null, new Date()]) {
      const event = await db.event.create({
        data: {
          id: newId(),
          tenantId: row.tenantId,
          type: "note.created",
          actorId: owner.id,
          subjectType: "note",
          subjectId: "n1",
        },
      });
      await db.notification.create({
        data: {
          ...{ id: newId(), tenantId: row.tenantId, userId: agent.id, actorId: owner.id, eventId: event.id },
          ...{ kind: "mention", path: "/studios/general/notes/n1", excerpt: "@scout look", dismissedAt },
        },
      });
    }

    // A run woken in General: its /whoami names General (a label that reads nothing names no studio).
    const label = [{ studio: (await db.studio.findFirstOrThrow({ where: { tenantId: row.tenantId } })).id }];
    await db.subagentTaskRun.update({ where: { id: ids[0]! }, data: { label } });
    const { start } = await claimNext(db, { runId: ids[0]! }, "w1", 30);
    expect(start?.run).toMatchObject({ id: ids[0], agentId: agent.id, task: "task 0", model: null });
    expect(start?.run).toMatchObject({ maxSteps: 5, timeoutSeconds: 60, stepsCount: 0, leaseOwner: "w1" });
    expect(start?.agent).toEqual({
      id: agent.id,
      tenantId: row.tenantId,
      handle: "scout",
      name: row.name,
      kind: "subagent",
      parentId: owner.id,
      ownerStudioId: null,
      tenantAdmin: false,
      agentConfig: config,
    });
    // The tenant as Prisma reads it, its creation time to the millisecond (UTC, whatever the zone).
    expect(start?.tenant).toEqual(tenant);
    expect(start?.whoami).toMatchObject({
      user: {
        handle: "scout",
        kind: "subagent",
        agentConfig: config,
        parent: { name: owner.name, handle: owner.handle },
      },
      studios: [{ handle: "general", role: "member" }],
      unread: [{ kind: "mention", excerpt: "@scout look", actor: { handle: owner.handle } }],
      unreadCount: 1,
      spentMicros: 1_234_567n,
    });
    // The claim's /whoami is the one the page reads by itself: one query, two callers.
    const ctx = {
      db,
      tenant,
      actor: toActor(await db.user.findUniqueOrThrow({ where: { id: agent.id } })),
      flow: { label: () => label, read: async () => {} },
    };
    expect(start?.whoami).toEqual(await readWhoami(ctx));
  });

  it("an unknown run claims nothing", async () => {
    expect(await claimNext(db, { runId: "no-such-run" }, "w", 30)).toEqual({
      start: null,
      agentId: null,
      lane: null,
      retry: false,
    });
  });
});
