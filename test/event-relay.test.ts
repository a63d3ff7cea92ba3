// The outbox relay when its database connection dies (it reconnects with backoff, logs
// the outage once, and publishes promptly again, long before its poll would) and when
// Redis does (it holds no transaction open meanwhile); and a triggered run's job, sent by
// the worker that queued the run before the relay gets to it. The file's database is its
// own (test/file-database.ts), so no other relay publishes these events.
import type { Job } from "bullmq";
import type { Redis } from "ioredis";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { createRedis } from "../src/db/redis.ts";
import { RELAY_APPLICATION_NAME, startEventRelay } from "../src/jobs/event-relay.ts";
import { eventProcessor } from "../src/jobs/process-event.ts";
import { createQueues, type Queues } from "../src/jobs/queues.ts";
import { startRelayThread } from "../src/jobs/relay-thread.ts";
import { newId } from "../src/lib/ids.ts";
import { emitEvent } from "../src/services/events.ts";
import { makeAgent } from "./helpers/agents.ts";
import { act, fileDatabaseUrl, makeWorld, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { privateRedis } from "./helpers/faults.ts";

const db = testPrisma();
// Far longer than any wait below: whatever is published, the poll did not publish it.
const POLL_MS = 60_000;
// Published "at once": well before the poll, however busy the machine.
const AT_ONCE_MS = 20_000;
let redis: Redis;
let queues: Queues;
let w: World;
let relay: ReturnType<typeof startEventRelay>;
let logs: string[];

beforeAll(async () => {
  redis = createRedis(inject("redisUrl"), "worker");
  queues = createQueues(redis, `${inject("queuePrefix")}-relay`);
  w = await makeWorld("rl");
});
afterEach(async () => relay?.stop());
afterAll(async () => {
  for (const q of Object.values(queues)) await q.obliterate({ force: true });
  await Promise.all(Object.values(queues).map((q) => q.close()));
  await redis.quit();
});

async function startRelay(o: Partial<Parameters<typeof startEventRelay>[0]> = {}) {
  logs = [];
  relay = startEventRelay({
    databaseUrl: fileDatabaseUrl(),
    queues,
    pollMs: POLL_MS,
    reconnectMs: { min: 50, max: 200 },
    log: (msg) => logs.push(msg),
    ...o,
  });
  await relay.ready;
}

/** The relay's backends and their states, found by the application name it connects with. */
async function relayBackends(): Promise<number[]> {
  return (await relayStates()).map((r) => r.pid);
}
async function relayStates() {
  return db.$queryRaw<{ pid: number; state: string }[]>`
    SELECT pid, state FROM pg_stat_activity WHERE application_name = ${RELAY_APPLICATION_NAME} AND datname = current_database()`;
}

const emit = () =>
  db.$transaction((tx) =>
    emitEvent(tx, {
      tenantId: w.tenant.id,
      actorId: w.alice.id,
      type: "test.ping",
      subjectType: "note",
      subjectId: newId(),
    }),
  );

/** Milliseconds until the event is published and its job is on the queue. */
async function publishedWithin(eventId: string, timeoutMs: number, since = Date.now(), on = queues) {
  await waitFor(async () => {
    const e = await db.event.findUniqueOrThrow({ where: { id: eventId } });
    return e.publishedAt && (await on.events.getJob(eventId));
  }, timeoutMs);
  return Date.now() - since;
}

describe("waking the relay", () => {
  it("an event inserted by any statement, not only emitEvent, is published at once, not at the next poll", async () => {
    await startRelay();
    // As a ledger batch or a run's end inserts its events: plain SQL, no NOTIFY of its own.
    const id = newId();
    await db.$executeRaw`INSERT INTO events (id, tenant_id, type, actor_id, subject_type, subject_id)
      VALUES (${id}, ${w.tenant.id}, 'test.ping', ${w.alice.id}, 'note', ${newId()})`;
    expect(await publishedWithin(id, AT_ONCE_MS)).toBeLessThan(AT_ONCE_MS);
  });
});

describe("the event relay's connection", () => {
  it("is reconnected after pg_terminate_backend, and a new commit is published at once, not at the next poll", async () => {
    await startRelay();
    const [pid] = await relayBackends();
    expect(pid).toBeTypeOf("number");
    // By pid: other test files' relays share the application name, on databases of their own.
    await db.$queryRaw`SELECT pg_terminate_backend(${pid}::int)`;
    await waitFor(async () => {
      const pids = await relayBackends();
      return pids.length === 1 && pids[0] !== pid;
    }, 5000);

    const id = await emit();
    expect(await publishedWithin(id, AT_ONCE_MS)).toBeLessThan(AT_ONCE_MS);
    expect(logs.filter((m) => /lost/.test(m))).toHaveLength(1);
  });

  it("retries with backoff while the database refuses connections, logs once, and publishes what was committed meanwhile", async () => {
    await startRelay();
    const name = new URL(fileDatabaseUrl()).pathname.slice(1);
    const admin = new URL(fileDatabaseUrl());
    admin.pathname = "/postgres";
    const adminClient = new pg.Client({ connectionString: admin.toString() });
    await adminClient.connect();
    try {
      const [pid] = await relayBackends();
      await adminClient.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
      await adminClient.query("SELECT pg_terminate_backend($1::int)", [pid]);
      // A commit nobody hears (the relay is not listening), while its attempts fail.
      const id = await emit();
      await new Promise((r) => setTimeout(r, 1000));
      expect((await db.event.findUniqueOrThrow({ where: { id } })).publishedAt).toBeNull();

      await adminClient.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
      const back = Date.now();
      expect(await publishedWithin(id, AT_ONCE_MS, back)).toBeLessThan(AT_ONCE_MS);
      expect(logs).toEqual([
        expect.stringMatching(/lost its database connection/),
        expect.stringMatching(/reconnected/),
      ]);
    } finally {
      await adminClient.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
      await adminClient.end();
    }
  });

  it("rolls a batch back when Redis does not answer, holding no transaction open, and publishes it once Redis is back", async () => {
    const redisServer = await privateRedis();
    const connection = createRedis(redisServer.url, "worker");
    connection.on("error", () => undefined); // Redis is down on purpose
    const own = createQueues(connection, `${inject("queuePrefix")}-relay-down`);
    for (const q of Object.values(own)) q.on("error", () => undefined);
    let down = false;
    try {
      await startRelay({ queues: own, publishTimeoutMs: 300 });
      redisServer.kill();
      down = true;
      await waitFor(async () => connection.status !== "ready", 5000);
      const id = await emit();
      // The notified batch gives up on Redis and rolls back (its ROLLBACK precedes the log).
      await waitFor(async () => logs.some((m) => /publish failed/.test(m)), 5000);
      expect((await relayStates()).map((r) => r.state)).toEqual(["idle"]);
      expect((await db.event.findUniqueOrThrow({ where: { id } })).publishedAt).toBeNull();

      await redisServer.start();
      down = false;
      await waitFor(async () => connection.status === "ready", 5000);
      await relay.drain(); // what the poll does every second
      await publishedWithin(id, 5000, Date.now(), own);
      expect(logs).toEqual([
        expect.stringMatching(/publish failed/),
        expect.stringMatching(/publishing again/),
      ]);
    } finally {
      if (down) await redisServer.start(); // else a batch still waiting for it would hold stop()
      await relay.stop();
      await Promise.all(Object.values(own).map((q) => q.close()));
      connection.disconnect();
      redisServer.kill();
    }
  });

  it("runs on a thread of its own: an event is published while the worker's event loop is busy", async () => {
    const thread = startRelayThread({
      databaseUrl: fileDatabaseUrl(),
      redisUrl: inject("redisUrl"),
      queuePrefix: `${inject("queuePrefix")}-relay`,
    });
    try {
      await thread.ready;
      const id = await emit();
      // What a worker busy with event and agent jobs looks like to a relay sharing its loop.
      const until = Date.now() + 1000;
      while (Date.now() < until);
      const e = await db.event.findUniqueOrThrow({ where: { id } });
      expect(e.publishedAt).not.toBeNull();
      expect(e.publishedAt!.getTime()).toBeLessThan(until);
      expect(await queues.events.getJob(id)).toBeTruthy();
    } finally {
      await thread.stop();
    }
  });
});

describe("a triggered run's job", () => {
  it("is sent by the worker that queued the run as soon as it commits; the relay's copy is a no-op", async () => {
    await makeAgent(w, w.alice, "relayed");
    const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Ping", text: "Hi" });
    await act(w, w.alice, note.location, "add_comment", { text: "@relayed are you there?" });
    const mention = await db.event.findFirstOrThrow({
      where: { tenantId: w.tenant.id, type: "comment.created" },
    });
    // No relay runs yet: what follows is the event worker's doing alone.
    const out = (await eventProcessor(db, queues)({ data: { eventId: mention.id } } as Job)) as {
      runs: string[];
    };
    expect(out.runs).toHaveLength(1);
    const queued = await db.event.findFirstOrThrow({ where: { type: "run.queued", subjectId: out.runs[0] } });
    expect(queued.publishedAt).toBeNull();
    const job = await queues["agent-runs"].getJob(`run-${queued.id}`);
    expect(job?.data).toEqual({ runId: out.runs[0] });

    await startRelay();
    await waitFor(
      async () => (await db.event.findUniqueOrThrow({ where: { id: queued.id } })).publishedAt,
      5000,
    );
    const jobs = await queues["agent-runs"].getJobs(["waiting", "active", "completed", "failed", "delayed"]);
    expect(jobs.map((j) => j.id)).toEqual([`run-${queued.id}`]);
  });
});
