// Event-relay benchmark (not a test). Run: `npx tsx bench/event-relay.ts` with Postgres
// and Redis up (bin/test's prerequisites). The real web server (src/server.ts) and one real
// worker (src/worker.ts) run as children on a fresh database, dropped at the end.
//
// Two phases, each open loop (a write is sent when due, whether or not the ones before it
// have answered), BENCH_RATE writes a second (150) for BENCH_SECONDS (20):
// 1. `add_comment` over HTTP with an API token, what the relay is there for;
// 2. the same rows (a comment, its comment.created event, NOTIFY) written straight to
//    Postgres, so the relay sees the full rate even when the web server cannot answer it.
// BENCH_PHASES=http or =outbox runs one of them.
//
// Reports per phase: the write rate achieved and the writes' latency; each event's relay
// lag (`published_at - created_at`) and the time until its job completed in the worker;
// events committed against events published; CPU by process while writing.
import type { ChildProcess } from "node:child_process";
import { Agent, request } from "node:http";
import { loadavg } from "node:os";
import { Queue } from "bullmq";
import pg from "pg";
import { parseConfig } from "../src/config.ts";
import { createPrisma, type PrismaClient } from "../src/db/prisma.ts";
import { createRedis } from "../src/db/redis.ts";
import { QUEUE_NAMES } from "../src/jobs/queues.ts";
import { newId } from "../src/lib/ids.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import { EVENTS_CHANNEL } from "../src/services/events.ts";
import type { Actor, Ctx } from "../src/services/registry/types.ts";
import { createApiToken } from "../src/services/tokens.ts";
import {
  fmt,
  freePort,
  freshDatabase,
  machineCpuSeconds,
  peakRssMb,
  percentile,
  printed,
  processCpuSeconds,
  seedStudio,
  startEntry,
  stopChild,
} from "./lib.ts";

const env = parseConfig(process.env);
const RATE = Number(process.env.BENCH_RATE ?? 150);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
// The comments go round-robin to this many notes, so no page the action answers with grows past a few hundred.
const NOTES = 20;
const PHASES = (process.env.BENCH_PHASES ?? "http,outbox").split(",");

interface Target {
  port: number;
  host: string;
  token: string;
  agent: Agent;
}

/** One Bearer-token request; resolves with its status. node:http, not fetch: the tenant comes from Host. */
function send(t: Target, path: string, body?: unknown): Promise<number> {
  const payload = body === undefined ? "" : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: t.port,
        method: body === undefined ? "GET" : "POST",
        path,
        agent: t.agent,
        headers: {
          host: t.host,
          accept: "text/markdown",
          authorization: `Bearer ${t.token}`,
          ...(body !== undefined && {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(payload),
          }),
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

async function seed(db: PrismaClient) {
  const { tenant, person, studio } = await seedStudio(db, "writer", "Writer");
  const ctx: Ctx = { db, tenant, actor: person as Actor };
  const note = async (text: string) =>
    (await registry.run(ctx, "/studios/general", "create_note", { text }, { form: false })).location;
  const notes = async (label: string) => {
    const list: string[] = [];
    for (let i = 0; i < NOTES; i++) list.push(await note(`${label} ${i}`));
    return list;
  };
  const { token } = await createApiToken(db, tenant.id, person.id, "bench");
  return {
    tenant,
    studioId: studio.id,
    personId: person.id,
    token,
    warm: [await note("Warm-up note")],
    http: await notes("HTTP load note"),
    outbox: await notes("Outbox load note"),
  };
}
type World = Awaited<ReturnType<typeof seed>>;

/** add_comment over HTTP with the writer's API token: what the benchmark is about. */
function httpWriter(t: Target, notes: string[]) {
  return (i: number) => send(t, `${notes[i % notes.length]}/actions/add_comment`, { text: `Comment ${i}` });
}

/**
 * The rows and notification add_comment commits (a comment, its comment.created event,
 * NOTIFY on commit) in one statement from this process: 150 commits a second that do not
 * depend on how many requests the web server can answer on this machine. `committedAt`
 * keeps when each event's commit was acknowledged, to split its lag at the commit.
 */
function outboxWriter(pool: pg.Pool, w: World, notes: string[]) {
  const committedAt = new Map<string, number>();
  const sql = `
    WITH c AS (
      INSERT INTO comments (id, tenant_id, studio_id, author_id, subject_type, subject_id, text, created_at)
      VALUES ($1, $2, $3, $4, 'note', $5, $6, $7) RETURNING *
    ), e AS (
      INSERT INTO events (id, tenant_id, type, actor_id, studio_id, subject_type, subject_id, parent_chain, created_at)
      SELECT $8, tenant_id, 'comment.created', author_id, studio_id, 'comment', id,
             jsonb_build_array(jsonb_build_object('type', 'note', 'id', subject_id)), $7
      FROM c RETURNING id
    )
    SELECT pg_notify('${EVENTS_CHANNEL}', id) FROM e`;
  const write = async (i: number) => {
    const note = notes[i % notes.length]!.split("/").pop()!;
    const eventId = newId();
    // An ISO string with its Z, as Prisma writes dates: UTC whatever the session's time zone.
    const at = new Date().toISOString();
    await pool.query({
      name: "bench-outbox",
      text: sql,
      values: [newId(), w.tenant.id, w.studioId, w.personId, note, `Comment ${i}`, at, eventId],
    });
    committedAt.set(eventId, Date.now());
    return 201;
  };
  return { write, committedAt };
}

/**
 * Calls `write` `count` times at `rate` a second, each at its due time (open loop), and
 * returns each one's latency from that due time, so a write the loop sent late counts its wait.
 */
async function load(write: (i: number) => Promise<number>, rate: number, count: number) {
  const start = performance.now() + 20;
  const sent: Promise<{ ms: number; status: number }>[] = [];
  let lateMax = 0;
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    lateMax = Math.max(lateMax, performance.now() - due);
    sent.push(
      write(i).then(
        (status) => ({ ms: performance.now() - due, status }),
        () => ({ ms: performance.now() - due, status: 0 }),
      ),
    );
  }
  const lastSent = performance.now();
  const results = await Promise.all(sent);
  return { results, sendSeconds: (lastSent - start) / 1000, lateMax };
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Procs {
  server: ChildProcess;
  worker: ChildProcess;
}

const cpu = (p: Procs) => ({
  machine: machineCpuSeconds(),
  server: processCpuSeconds(p.server.pid!),
  worker: processCpuSeconds(p.worker.pid!),
});

/** The part of the lag after the commit was acknowledged: the relay's own, less the writer's wake-up. */
function commitSplit(
  published: { id: string; published: Date | null }[],
  committedAt: Map<string, number>,
): [string, string] {
  const after = published.flatMap((e) => {
    const at = committedAt.get(e.id);
    return at === undefined ? [] : [e.published!.getTime() - at];
  });
  const p = [50, 95, 99].map((q) => fmt(percentile(after, q), 0)).join(" / ");
  return ["  of which commit acknowledged → published (ms)", `${p} / ${fmt(Math.max(...after), 0)}`];
}

/** One load phase: the writes, then each of their events' lag and job, printed. */
async function phase(
  name: string,
  db: PrismaClient,
  events: Queue,
  procs: Procs,
  write: (i: number) => Promise<number>,
  notes: string[],
  committedAt?: Map<string, number>,
) {
  const load0 = loadavg();
  const cpu0 = cpu(procs);
  const w = await load(write, RATE, RATE * SECONDS);
  const cpu1 = cpu(procs);

  // The phase's events: those whose comment is on one of its notes.
  const noteIds = notes.map((p) => p.split("/").pop()!);
  const loadEvents = async () =>
    db.$queryRaw<{ id: string; created: Date; published: Date | null }[]>`
      SELECT e.id, e.created_at AS created, e.published_at AS published
      FROM events e JOIN comments c ON c.id = e.subject_id
      WHERE e.type = 'comment.created' AND c.subject_id = ANY(${noteIds})`;
  await waitFor(
    "every event published",
    async () => (await loadEvents()).every((e) => e.published),
    60_000,
  ).catch((err) => console.error(String(err)));
  const rows = await loadEvents();
  const published = rows.filter((e) => e.published);
  const lag = published.map((e) => e.published!.getTime() - e.created.getTime());
  const batches = new Set(published.map((e) => e.published!.getTime())).size;
  await waitFor(
    "every event job done",
    async () => {
      const c = await events.getJobCounts("waiting", "active", "delayed", "prioritized");
      return Object.values(c).every((n) => n === 0);
    },
    120_000,
  ).catch((err) => console.error(String(err)));
  const jobs = await Promise.all(published.map((e) => events.getJob(e.id)));
  const done = published.flatMap((e, i) => {
    const f = jobs[i]?.finishedOn;
    return f ? [f - e.created.getTime()] : [];
  });
  const created = rows.map((e) => e.created.getTime());
  const commitSeconds = (Math.max(...created) - Math.min(...created)) / 1000;

  const ok = w.results.filter((r) => r.status === 201);
  const latency = w.results.map((r) => r.ms);
  const p = (v: number[]) => [50, 95, 99].map((q) => fmt(percentile(v, q), 0)).join(" / ");
  const lines: [string, string][] = [
    ["load average (1 / 5 / 15 min) at the start", load0.map((x) => fmt(x, 2)).join(" / ")],
    [
      `writes sent (target ${RATE}/s for ${SECONDS} s)`,
      `${w.results.length} in ${fmt(w.sendSeconds, 2)} s = ${fmt(w.results.length / w.sendSeconds)}/s (latest send ${fmt(w.lateMax, 0)} ms after its time)`,
    ],
    ["writes answered 201", `${ok.length} (${w.results.length - ok.length} other)`],
    ["write latency p50 / p95 / p99 / max (ms)", `${p(latency)} / ${fmt(Math.max(...latency), 0)}`],
    [
      "events committed / published",
      `${rows.length} / ${published.length} (committed over ${fmt(commitSeconds, 2)} s = ${fmt(rows.length / commitSeconds)}/s)`,
    ],
    ["relay lag p50 / p95 / p99 / max (ms)", `${p(lag)} / ${fmt(Math.max(...lag), 0)}`],
    // A batch stamps its rows with one published_at: fewer, larger batches cost less CPU and wait longer.
    ["relay batches (events each, mean)", `${batches} (${fmt(published.length / batches, 2)})`],
    ...(committedAt ? [commitSplit(published, committedAt)] : []),
    [
      "created → event job completed p50 / p95 / p99 / max (ms)",
      `${p(done)} / ${fmt(Math.max(...done), 0)} (${done.length} jobs)`,
    ],
    [
      "CPU seconds while writing: machine / server / worker",
      `${fmt(cpu1.machine - cpu0.machine, 2)} / ${fmt(cpu1.server - cpu0.server, 2)} / ${fmt(cpu1.worker - cpu0.worker, 2)} (of ${fmt(2 * w.sendSeconds, 1)} on 2 cores)`,
    ],
    ["worker peak RSS so far (MB)", fmt(peakRssMb(procs.worker.pid!), 0)],
  ];
  console.log(`\nEvent relay benchmark: ${name}`);
  for (const [k, v] of lines) console.log(`  ${k.padEnd(58)} ${v}`);
}

async function main() {
  const database = await freshDatabase(env.DATABASE_URL, "relay");
  const db = createPrisma(database.url, 5);
  const pool = new pg.Pool({ connectionString: database.url, max: 8 });
  const prefix = `cadre-bench-${newId(6)}`;
  const redis = createRedis(env.REDIS_URL, "worker");
  const events = new Queue("events", { connection: redis, prefix });
  const port = await freePort();
  const common = { DATABASE_URL: database.url, QUEUE_PREFIX: prefix, LOG_LEVEL: "warn" };
  const profile = process.env.BENCH_PROFILE
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`]
    : [];
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const procs: Procs = {
    // info: the worker says it is running at that level (and logs nothing per event).
    worker: startEntry("src/worker.ts", { ...common, LOG_LEVEL: "info" }, profile),
    // Limits out of reach (their Redis round trip still counted): one token sends 150 calls/s.
    server: startEntry(
      "src/server.ts",
      {
        ...common,
        HOST: "127.0.0.1",
        PORT: String(port),
        API_RATE_LIMIT_PER_TOKEN: "1000000",
        API_RATE_LIMIT_PER_TENANT: "1000000",
      },
      profile,
    ),
  };
  try {
    const w = await seed(db);
    await printed(procs.worker, "running");
    const t: Target = {
      port,
      host: `${w.tenant.subdomain}.localhost`,
      token: w.token,
      agent,
    };
    await waitFor(
      "the web server",
      () =>
        send(t, "/healthz").then(
          () => true,
          () => false,
        ),
      30_000,
    );

    // Warm up (JIT, pools, plans) on a note of its own, then let the relay catch up.
    await load(httpWriter(t, w.warm), RATE, RATE);
    await waitFor(
      "the warm-up's events",
      async () => !(await db.event.count({ where: { publishedAt: null } })),
      60_000,
    );

    if (PHASES.includes("http"))
      await phase("add_comment over HTTP", db, events, procs, httpWriter(t, w.http), w.http);
    if (PHASES.includes("outbox")) {
      const outbox = outboxWriter(pool, w, w.outbox);
      await phase(
        "the same rows written straight to Postgres",
        db,
        events,
        procs,
        outbox.write,
        w.outbox,
        outbox.committedAt,
      );
    }
  } finally {
    agent.destroy(); // the server's close waits for open keep-alive sockets
    await Promise.all([stopChild(procs.server), stopChild(procs.worker)]);
    for (const name of QUEUE_NAMES) {
      const q = new Queue(name, { connection: redis, prefix });
      await q.obliterate({ force: true });
      await q.close();
    }
    await events.close();
    redis.disconnect();
    await pool.end();
    await db.$disconnect();
    await database.drop();
  }
}

await main();
process.exit(0);
