// Publishes outbox events to the BullMQ `events` queue, and queued runs to `agent-runs`.
// Woken by NOTIFY on commit and by a slow poll as a safety net (a missed notification,
// Redis down for a while).
// Rows are locked with SKIP LOCKED, so several relays never publish the same batch.
//
// The relay works on one connection of its own, the one that LISTENs. Under load the
// process's pool is busy with the event and agent workers' statements, and a batch
// waiting for a pooled connection was most of an event's lag; a batch is also two round
// trips on it, not Prisma's four plus its runtime. When the connection dies (a restart,
// pg_terminate_backend), the relay opens another with backoff and then drains what
// was committed meanwhile.
import pg from "pg";
import { EVENTS_CHANNEL } from "../services/events-channel.ts";
import { type Queues, runJob } from "./queues.ts";

const BATCH = 200;
// How long a batch waits for Redis before it rolls back and leaves its rows to a later
// drain: a worker's Redis client queues commands while Redis is away, and the batch's
// transaction would stay open, its rows locked, for the whole outage.
const PUBLISH_TIMEOUT_MS = 5000;

/** How the relay's connection shows in pg_stat_activity, unless DATABASE_URL names one itself. */
export const RELAY_APPLICATION_NAME = "cadre-event-relay";

export interface RelayOptions {
  databaseUrl: string;
  queues: Queues;
  pollMs?: number;
  /** Wait before the first reconnection attempt, doubled after each failed one up to `max`. */
  reconnectMs?: { min: number; max: number };
  publishTimeoutMs?: number;
  log?: (msg: string, err?: unknown) => void;
}

interface Row {
  id: string;
  type: string;
  subject_id: string;
  traceparent: string | null;
}

// One simple-protocol query each, so each half of a batch is one round trip (a simple
// query may hold several statements; the extended protocol, with parameters, may not).
const CLAIM = `BEGIN; SELECT id, type, subject_id, traceparent FROM events WHERE published_at IS NULL
  ORDER BY created_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`;

/** Publishes the rows to their queues. A queued run goes straight to agent-runs: one queue hop fewer before it starts. */
async function publish(queues: Queues, rows: Row[]) {
  const runs = rows.filter((r) => r.type === "run.queued");
  const others = rows.filter((r) => r.type !== "run.queued");
  await Promise.all([
    runs.length && queues["agent-runs"].addBulk(runs.map((r) => runJob(r.id, r.subject_id, r.traceparent))),
    others.length &&
      queues.events.addBulk(
        others.map((row) => ({
          name: "event",
          data: row.traceparent ? { eventId: row.id, traceparent: row.traceparent } : { eventId: row.id },
          opts: { jobId: row.id },
        })),
      ),
  ]);
}

function within<T>(p: Promise<T>, milliseconds: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish in ${milliseconds} ms`)), milliseconds);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** One batch on `c`: lock the oldest unpublished rows, publish them, mark them. Returns how many. */
async function drainOnce(c: pg.Client, queues: Queues, timeoutMs: number): Promise<number> {
  try {
    const [, claimed] = (await c.query(CLAIM)) as unknown as pg.QueryResult<Row>[];
    const rows = claimed!.rows;
    if (!rows.length) {
      await c.query("COMMIT");
      return 0;
    }
    // Published twice if this times out and Redis answers later: the job ids make that a no-op.
    await within(publish(queues, rows), timeoutMs, "publishing to Redis");
    // An ISO string with its Z is read as UTC by a timestamp column, as Prisma writes dates.
    const ids = rows.map((r) => c.escapeLiteral(r.id)).join(",");
    await c.query(
      `UPDATE events SET published_at = '${new Date().toISOString()}' WHERE id IN (${ids}); COMMIT`,
    );
    return rows.length;
  } catch (err) {
    await c.query("ROLLBACK").catch(() => undefined);
    throw err;
  }
}

/**
 * A connection that LISTENs for committed events: `notified` on each, `ended` (with the last
 * error it saw) when it closes, however it closes.
 */
async function listen(
  databaseUrl: string,
  notified: () => void,
  ended: (c: pg.Client, err: unknown) => void,
): Promise<pg.Client> {
  const c = new pg.Client({
    connectionString: databaseUrl,
    application_name: RELAY_APPLICATION_NAME,
    // A peer that vanished without closing the socket is noticed too, if late.
    keepAlive: true,
  });
  let lastError: unknown;
  c.on("error", (err) => {
    lastError = err;
  });
  c.on("end", () => ended(c, lastError));
  c.on("notification", notified);
  try {
    await c.connect();
    await c.query(`LISTEN ${EVENTS_CHANNEL}`);
  } catch (err) {
    await c.end().catch(() => undefined);
    throw err;
  }
  return c;
}

export function startEventRelay(relayOptions: RelayOptions) {
  const backoff = relayOptions.reconnectMs ?? { min: 100, max: 2000 };
  const timeoutMs = relayOptions.publishTimeoutMs ?? PUBLISH_TIMEOUT_MS;
  let client: pg.Client | null = null;
  let running = false;
  let again = false;
  let stopped = false;
  let failing = false;
  let wait = backoff.min;
  let retry: ReturnType<typeof setTimeout> | undefined;

  async function drain() {
    if (stopped || !client) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        while (client && (await drainOnce(client, relayOptions.queues, timeoutMs)) === BATCH && !stopped);
      } while (again && client && !stopped);
      if (failing) relayOptions.log?.("event relay: publishing again");
      failing = false;
    } catch (err) {
      // Once per outage, not once per poll; a lost connection is reported where it is noticed.
      if (!failing && client) relayOptions.log?.("event relay: publish failed, will retry", err);
      failing = true;
    } finally {
      running = false;
    }
  }

  async function connect() {
    const c = await listen(relayOptions.databaseUrl, () => void drain(), lost);
    if (stopped) await c.end();
    else client = c;
  }

  function lost(c: pg.Client, err: unknown) {
    if (client !== c || stopped) return;
    client = null;
    relayOptions.log?.("event relay: lost its database connection, reconnecting", err);
    reconnect();
  }

  function reconnect() {
    retry = setTimeout(async () => {
      try {
        await connect();
      } catch {
        wait = Math.min(wait * 2, backoff.max);
        if (!stopped) reconnect();
        return;
      }
      wait = backoff.min;
      relayOptions.log?.("event relay: reconnected");
      // Nothing notified this connection of what was committed while it was away.
      await drain();
    }, wait);
  }

  const timer = setInterval(drain, relayOptions.pollMs ?? 1000);
  const ready = (async () => {
    await connect();
    await drain();
  })();

  return {
    ready,
    drain,
    async stop() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(retry);
      await ready.catch(() => undefined);
      while (running) await new Promise((r) => setTimeout(r, 10));
      await client?.end().catch(() => undefined);
      client = null;
    },
  };
}
