// Publishes outbox events to the BullMQ `events` queue, and queued runs to `agent-runs`.
// Woken by NOTIFY on commit and by a slow poll as a safety net (a missed notification,
// Redis down for a while).
// Rows are locked with SKIP LOCKED, so several relays never publish the same batch.
import pg from "pg";
import type { PrismaClient } from "../db/prisma.ts";
import { EVENTS_CHANNEL } from "../services/events.ts";
import type { Queues } from "./queues.ts";

const BATCH = 200;

export interface RelayOptions {
  prisma: PrismaClient;
  databaseUrl: string;
  queues: Queues;
  pollMs?: number;
  log?: (msg: string, err?: unknown) => void;
}

export function startEventRelay(o: RelayOptions) {
  let running = false;
  let again = false;
  let stopped = false;
  const listener = new pg.Client({ connectionString: o.databaseUrl });

  async function drainOnce(): Promise<number> {
    return o.prisma.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<{ id: string; type: string; subject_id: string }[]>`
        SELECT id, type, subject_id FROM events WHERE published_at IS NULL
        ORDER BY created_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`;
      if (!rows.length) return 0;
      // A queued run goes straight to the agent-runs queue: it needs nothing the event
      // worker would read, and one queue hop fewer is what a run waits for before it starts.
      const runs = rows.filter((r) => r.type === "run.queued");
      const others = rows.filter((r) => r.type !== "run.queued");
      await Promise.all([
        runs.length &&
          o.queues["agent-runs"].addBulk(
            runs.map((r) => ({ name: "run", data: { runId: r.subject_id }, opts: { jobId: `run-${r.id}` } })),
          ),
        others.length &&
          o.queues.events.addBulk(
            others.map((r) => ({ name: "event", data: { eventId: r.id }, opts: { jobId: r.id } })),
          ),
      ]);
      await tx.event.updateMany({
        where: { id: { in: rows.map((r) => r.id) } },
        data: { publishedAt: new Date() },
      });
      return rows.length;
    });
  }

  async function drain() {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        while ((await drainOnce()) === BATCH && !stopped);
      } while (again && !stopped);
    } catch (err) {
      o.log?.("event relay: publish failed, will retry", err);
    } finally {
      running = false;
    }
  }

  const timer = setInterval(drain, o.pollMs ?? 1000);
  const ready = (async () => {
    listener.on("notification", () => void drain());
    listener.on("error", (err) => o.log?.("event relay: listener error", err));
    await listener.connect();
    await listener.query(`LISTEN ${EVENTS_CHANNEL}`);
    await drain();
  })();

  return {
    ready,
    drain,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await ready.catch(() => undefined);
      await listener.end().catch(() => undefined);
      while (running) await new Promise((r) => setTimeout(r, 10));
    },
  };
}
