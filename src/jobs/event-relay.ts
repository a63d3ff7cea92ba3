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

function within<T>(promise: Promise<T>, milliseconds: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish in ${milliseconds} ms`)), milliseconds);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** One batch on `client`: lock the oldest unpublished rows, publish them, mark them. Returns how many. */
async function drainOnce(client: pg.Client, queues: Queues, timeoutMs: number): Promise<number> {
  try {
    const [, claimed] = (await client.query(CLAIM)) as unknown as pg.QueryResult<Row>[];
    const rows = claimed!.rows;
    if (!rows.length) {
      await client.query("COMMIT");
      return 0;
    }
    // Published twice if this times out and Redis answers later: the job ids make that a no-op.
    await within(publish(queues, rows), timeoutMs, "publishing to Redis");
    // An ISO string with its Z is read as UTC by a timestamp column, as Prisma writes dates.
    const ids = rows.map((row) => client.escapeLiteral(row.id)).join(",");
    await client.query(
      `UPDATE events SET published_at = '${new Date().toISOString()}' WHERE id IN (${ids}); COMMIT`,
    );
    return rows.length;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
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
  ended: (client: pg.Client, err: unknown) => void,
): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    application_name: RELAY_APPLICATION_NAME,
    // A peer that vanished without closing the socket is noticed too, if late.
    keepAlive: true,
  });
  let lastError: unknown;
  client.on("error", (err) => {
    lastError = err;
  });
  client.on("end", () => ended(client, lastError));
  client.on("notification", notified);
  try {
    await client.connect();
    await client.query(`LISTEN ${EVENTS_CHANNEL}`);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return client;
}

/** The relay's state, shared by its steps: one connection, one drain at a time. */
interface Relay {
  options: RelayOptions;
  backoff: { min: number; max: number };
  timeoutMs: number;
  client: pg.Client | null;
  /** A drain is under way; `again`: something was committed meanwhile, drain once more. */
  running: boolean;
  again: boolean;
  stopped: boolean;
  /** Publishing failed and has not succeeded since: the outage is logged once. */
  failing: boolean;
  /** The wait before the next reconnection attempt. */
  wait: number;
  retry: ReturnType<typeof setTimeout> | undefined;
}

export function startEventRelay(relayOptions: RelayOptions) {
  const relay: Relay = {
    options: relayOptions,
    backoff: relayOptions.reconnectMs ?? { min: 100, max: 2000 },
    timeoutMs: relayOptions.publishTimeoutMs ?? PUBLISH_TIMEOUT_MS,
    client: null,
    running: false,
    again: false,
    stopped: false,
    failing: false,
    wait: 0,
    retry: undefined,
  };
  relay.wait = relay.backoff.min;
  const timer = setInterval(() => drain(relay), relayOptions.pollMs ?? 1000);
  const ready = (async () => {
    await connect(relay);
    await drain(relay);
  })();
  return {
    ready,
    drain: () => drain(relay),
    async stop() {
      relay.stopped = true;
      clearInterval(timer);
      clearTimeout(relay.retry);
      await ready.catch(() => undefined);
      while (relay.running) await new Promise((resolve) => setTimeout(resolve, 10));
      await relay.client?.end().catch(() => undefined);
      relay.client = null;
    },
  };
}

/** Publishes batches until none is full; a drain asked for while one runs makes it go round again. */
async function drain(relay: Relay) {
  if (relay.stopped || !relay.client) return;
  if (relay.running) {
    relay.again = true;
    return;
  }
  relay.running = true;
  try {
    do {
      relay.again = false;
      while (
        relay.client &&
        (await drainOnce(relay.client, relay.options.queues, relay.timeoutMs)) === BATCH &&
        !relay.stopped
      );
    } while (relay.again && relay.client && !relay.stopped);
    if (relay.failing) relay.options.log?.("event relay: publishing again");
    relay.failing = false;
  } catch (err) {
    // Once per outage, not once per poll; a lost connection is reported where it is noticed.
    if (!relay.failing && relay.client) relay.options.log?.("event relay: publish failed, will retry", err);
    relay.failing = true;
  } finally {
    relay.running = false;
  }
}

async function connect(relay: Relay) {
  const client = await listen(
    relay.options.databaseUrl,
    () => void drain(relay),
    (ended, err) => lost(relay, ended, err),
  );
  if (relay.stopped) await client.end();
  else relay.client = client;
}

function lost(relay: Relay, client: pg.Client, err: unknown) {
  if (relay.client !== client || relay.stopped) return;
  relay.client = null;
  relay.options.log?.("event relay: lost its database connection, reconnecting", err);
  reconnect(relay);
}

function reconnect(relay: Relay) {
  relay.retry = setTimeout(async () => {
    try {
      await connect(relay);
    } catch {
      relay.wait = Math.min(relay.wait * 2, relay.backoff.max);
      if (!relay.stopped) reconnect(relay);
      return;
    }
    relay.wait = relay.backoff.min;
    relay.options.log?.("event relay: reconnected");
    // Nothing notified this connection of what was committed while it was away.
    await drain(relay);
  }, relay.wait);
}
