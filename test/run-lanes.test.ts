// Lanes: an agent runs one run at a time per lane. Its own lane ('') stays one at a time; an
// experiment's lanes run beside it and beside each other, each one run after another.
import { describe, expect, it } from "vitest";
import { createPrisma } from "../src/db/prisma.ts";
import { sweep } from "../src/jobs/sweeper.ts";
import { claimNext, queueRun } from "../src/services/agents/core/runs.ts";
import { makeAgent } from "./helpers/agents.ts";
import { fileDatabaseUrl, makeWorld, testPrisma, waitFor } from "./helpers/app.ts";

const db = testPrisma();

/** An agent with a run queued in each of `lanes`, in that order (oldest first). */
async function world(lanes: string[]) {
  const w = await makeWorld("lane");
  const agent = await makeAgent(w, w.alice, "scout");
  const ids: string[] = [];
  for (const [i, lane] of lanes.entries()) {
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
      lane,
    });
    ids.push(run!.id);
  }
  return { agent, ids };
}

const end = (id: string) =>
  db.subagentTaskRun.update({
    where: { id },
    data: { status: "completed", leaseOwner: null, leaseExpiresAt: null },
  });

const running = async (agentId: string) =>
  (
    await db.subagentTaskRun.findMany({
      where: { agentId, status: "running" },
      orderBy: { createdAt: "asc" },
    })
  ).map((r) => r.id);

describe("lanes", () => {
  it("runs of other lanes are claimed beside the agent's own; each lane, its own too, one at a time", async () => {
    const { agent, ids } = await world(["", "", "experiment:e1:0", "experiment:e1:1", "experiment:e1:0"]);
    const [own, ownNext, slot0, slot1, slot0Next] = ids;
    expect((await claimNext(db, { agentId: agent.id }, "w1", 30)).start?.run).toMatchObject({
      id: own,
      lane: "",
    });
    expect((await claimNext(db, { runId: slot0! }, "w1", 30)).start?.run).toMatchObject({
      id: slot0,
      lane: "experiment:e1:0",
    });
    expect((await claimNext(db, { runId: slot1! }, "w1", 30)).start?.run.id).toBe(slot1);
    expect(await running(agent.id)).toEqual([own, slot0, slot1]);
    // The second of a lane waits for the first, the agent's own lane as before.
    expect((await claimNext(db, { runId: slot0Next! }, "w2", 30)).start).toBeNull();
    expect((await claimNext(db, { agentId: agent.id, lane: "experiment:e1:0" }, "w2", 30)).start).toBeNull();
    expect((await claimNext(db, { runId: ownNext! }, "w2", 30)).start).toBeNull();
    await end(slot0!);
    expect((await claimNext(db, { runId: slot0Next! }, "w2", 30)).start?.run.id).toBe(slot0Next);
    expect((await claimNext(db, { agentId: agent.id }, "w2", 30)).start).toBeNull();
    await end(own!);
    expect((await claimNext(db, { agentId: agent.id }, "w2", 30)).start?.run.id).toBe(ownNext);
  });

  it("a claim by lane takes that lane's next run, never another lane's", async () => {
    const { agent, ids } = await world(["experiment:e1:0", "", "experiment:e1:1", "experiment:e1:0"]);
    const [first, own, other, next] = ids;
    const claim = await claimNext(db, { runId: first! }, "w1", 30);
    // What the worker claims with next, once this run ends.
    expect(claim).toMatchObject({ agentId: agent.id, lane: "experiment:e1:0" });
    await end(first!);
    const follow = await claimNext(db, { agentId: claim.agentId!, lane: claim.lane! }, "w1", 30);
    expect(follow).toMatchObject({
      agentId: agent.id,
      lane: "experiment:e1:0",
      start: { run: { id: next } },
    });
    await end(next!);
    // The lane is empty now: older runs of other lanes wait for jobs of their own.
    expect((await claimNext(db, { agentId: agent.id, lane: "experiment:e1:0" }, "w1", 30)).start).toBeNull();
    expect(await running(agent.id)).toEqual([]);
    expect((await claimNext(db, { agentId: agent.id }, "w1", 30)).start?.run.id).toBe(own);
    expect((await claimNext(db, { runId: other! }, "w1", 30)).start?.run.id).toBe(other);
  });

  it("claims of one agent's different lanes in one statement each claim their lane's run", async () => {
    const { agent, ids } = await world(["", "experiment:e1:0", "experiment:e1:1", "experiment:e1:1"]);
    const blocker = await world([""]);
    // A batch in flight (a claim waiting for a lock held here) makes the claims after it one
    // batch of their own: the group commit sends whatever waited as the next statement.
    const pool = createPrisma(fileDatabaseUrl(), 2);
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      let locked!: (xid: string) => void;
      const isLocked = new Promise<string>((r) => {
        locked = r;
      });
      const holder = pool.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT id FROM users WHERE id = ${blocker.agent.id} FOR UPDATE`;
        const [row] = await tx.$queryRaw<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS xid`;
        locked(row!.xid);
        await held;
      });
      const xid = await isLocked;
      const first = claimNext(db, { agentId: blocker.agent.id }, "w1", 30);
      // The claim waits for the holder's transaction: the batch is in flight.
      await waitFor(async () => {
        const [row] = await pool.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'transactionid' AND transactionid::text = ${xid} AND NOT granted`;
        return (row?.n ?? 0) >= 1 || null;
      });
      const batch = Promise.all([
        claimNext(db, { agentId: agent.id }, "w1", 30),
        claimNext(db, { agentId: agent.id, lane: "experiment:e1:0" }, "w1", 30),
        claimNext(db, { runId: ids[3]! }, "w1", 30),
      ]);
      release();
      await holder;
      expect((await first).start?.run.id).toBe(blocker.ids[0]);
      const claims = await batch;
      expect(claims.map((c) => c.start?.run.id)).toEqual([ids[0], ids[1], ids[2]]);
      expect(claims.map((c) => c.lane)).toEqual(["", "experiment:e1:0", "experiment:e1:1"]);
      // One statement claimed the three: one transaction wrote them.
      const [row] = await db.$queryRaw<{ n: number }[]>`
        SELECT count(DISTINCT xmin::text)::int AS n FROM subagent_task_runs WHERE id IN (${ids[0]}, ${ids[1]}, ${ids[2]})`;
      expect(row!.n).toBe(1);
    } finally {
      await pool.$disconnect();
    }
  });

  it("the sweeper sends a job for a queued run in each lane, beside the agent's running one", async () => {
    const { agent, ids } = await world(["", "", "experiment:e1:0", "experiment:e1:0", "experiment:e1:1"]);
    expect((await claimNext(db, { agentId: agent.id }, "w1", 30)).start?.run.id).toBe(ids[0]);
    const sent: string[] = [];
    const queues = {
      "agent-runs": { add: async (_: string, data: { runId: string }) => sent.push(data.runId) },
    };
    await sweep(db, queues as unknown as Parameters<typeof sweep>[1], 0);
    // The agent's own lane is busy: its next run waits. Each experiment slot gets its oldest.
    expect(sent.filter((id) => ids.includes(id)).sort()).toEqual([ids[2], ids[4]].sort());
  });
});
