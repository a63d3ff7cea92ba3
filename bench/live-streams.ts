// Live-stream benchmark (not a test). Run: `npx tsx bench/live-streams.ts` with Postgres and
// Redis up (bin/test's prerequisites). The real web server (src/server.ts) runs as a child on
// a fresh database, dropped at the end.
//
// What it answers: can one web process hold BENCH_STREAMS (1,000) open run streams with
// bounded memory, and how long after a step commits does it reach them? The streams watch
// BENCH_RUNS (200) running runs, BENCH_STREAMS / BENCH_RUNS each, as people watching a run
// page do; BENCH_PAUSED (50) more never read (a tab in the background, a stalled network),
// to show a slow client holds back only its own stream.
//
// Phases: the server's memory idle; after opening the streams; then steps committed open
// loop (each at its due time) at BENCH_RATE a second (50) for BENCH_SECONDS (20), round
// robin over the runs, each the row and steps_count a worker commits (a 2 KB page in its
// detail), and after it the "LLM call started" notice a worker sends. Each delivery's
// latency is the time from the commit's acknowledgement to the event's arrival, both on
// this process's clock. BENCH_RATES=50,200 runs the load once per rate.
import type { ChildProcess } from "node:child_process";
import http from "node:http";
import pg from "pg";
import { parseConfig } from "../src/config.ts";
import { createPrisma } from "../src/db/prisma.ts";
import { newId } from "../src/lib/ids.ts";
import { LIVE_CHANNEL } from "../src/services/events-channel.ts";
import { createApiToken } from "../src/services/tokens.ts";
import {
  fmt,
  freePort,
  freshDatabase,
  peakRssMb,
  percentile,
  processCpuSeconds,
  seedStudio,
  startEntry,
  stopChild,
} from "./lib.ts";

const env = parseConfig(process.env);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 1000);
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const PAUSED = Number(process.env.BENCH_PAUSED ?? 50);
const RATES = (process.env.BENCH_RATES ?? process.env.BENCH_RATE ?? "50").split(",").map(Number);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const PAGE = `# General\n\n${"A line of the studio page an agent read, as a step records it.\n".repeat(32)}`;

interface Heap {
  heap: number;
  external: number;
  rss: number;
}

/** The child's memory after a garbage collection (bench/heap-probe.mjs answers SIGUSR2). */
function heap(child: ChildProcess): Promise<Heap> {
  return new Promise((resolve) => {
    const read = (d: Buffer) => {
      const m = /heap (\d+) (\d+) (\d+)/.exec(d.toString());
      if (!m) return;
      child.stdout!.off("data", read);
      resolve({ heap: Number(m[1]), external: Number(m[2]), rss: Number(m[3]) });
    };
    child.stdout!.on("data", read);
    child.kill("SIGUSR2");
  });
}

const mb = (bytes: number) => fmt(bytes / 1024 / 1024);
const heapLine = (h: Heap) => `heap ${mb(h.heap)} MB, buffers ${mb(h.external)} MB, RSS ${mb(h.rss)} MB`;

interface Watch {
  run: number;
  res?: http.IncomingMessage;
}

async function seed(url: string) {
  const db = createPrisma(url, 2);
  const { tenant, person } = await seedStudio(db, "alice", "Alice");
  const agent = await db.user.create({
    data: {
      id: newId(),
      tenantId: tenant.id,
      handle: "scout",
      name: "Scout",
      kind: "subagent",
      parentId: person.id,
    },
  });
  const runs: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    const run = await db.subagentTaskRun.create({
      data: {
        id: newId(),
        tenantId: tenant.id,
        agentId: agent.id,
        triggerKind: "manual",
        task: `Bench run ${i}`,
        maxSteps: 1000,
        timeoutSeconds: 3600,
        status: "running",
        startedAt: new Date(),
      },
    });
    runs.push(run.id);
  }
  const { token } = await createApiToken(db, tenant.id, person.id, "bench");
  await db.$disconnect();
  return { host: `${tenant.subdomain}.localhost`, token, runs };
}

/** Opens a run page's stream; `onStep(n)` for each step event that arrives. */
function open(port: number, host: string, token: string, path: string, onStep?: (n: number) => void) {
  return new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get({
      host: "127.0.0.1",
      port,
      path,
      agent: false,
      headers: { host, accept: "text/event-stream", authorization: `Bearer ${token}` },
    });
    req.on("error", reject);
    req.on("response", (res) => {
      if (res.statusCode !== 200) reject(new Error(`stream answered ${res.statusCode}`));
      res.setEncoding("utf8");
      let tail = "";
      if (onStep)
        res.on("data", (chunk: string) => {
          const text = tail + chunk;
          for (const m of text.matchAll(/event: step\nid: (\d+)/g)) onStep(Number(m[1]));
          tail = text.slice(-40);
        });
      resolve(res);
    });
  });
}

async function healthy(port: number) {
  const end = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > end) throw new Error("the web server did not start");
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main() {
  const db = await freshDatabase(env.DATABASE_URL, "live");
  const port = await freePort();
  const server = startEntry(
    "src/server.ts",
    {
      DATABASE_URL: db.url,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      LIVE_STREAM_MAX_SECONDS: "3600",
    },
    ["--expose-gc", "--import", "./bench/heap-probe.mjs"],
  );
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  try {
    const w = await seed(db.url);
    await healthy(port);
    const pid = server.pid!;
    server.stdout!.resume();
    const page = (i: number) => `/subagents/scout/runs/${w.runs[i]}`;
    // Warm-up: the pages and a stream, so what follows measures streams, not first use.
    for (let i = 0; i < 5; i++) (await open(port, w.host, w.token, page(i))).destroy();
    await new Promise((r) => setTimeout(r, 1000));
    const idle = await heap(server);

    const committed = new Map<string, number>();
    const early = new Map<string, number>();
    const latencies: number[] = [];
    const acknowledged = (key: string) => {
      committed.set(key, performance.now());
      for (let i = early.get(key) ?? 0; i > 0; i--) latencies.push(0);
      early.delete(key);
    };
    const watches: Watch[] = Array.from({ length: STREAMS }, (_, i) => ({ run: i % RUNS }));
    const t0 = performance.now();
    for (let i = 0; i < watches.length; i += 50)
      await Promise.all(
        watches.slice(i, i + 50).map(async (wt) => {
          wt.res = await open(port, w.host, w.token, page(wt.run), (n) => {
            const key = `${wt.run}:${n}`;
            const at = committed.get(key);
            if (at !== undefined) latencies.push(performance.now() - at);
            // Here before this process heard its commit acknowledged: counted as 0 ms, when it is.
            else early.set(key, (early.get(key) ?? 0) + 1);
          });
        }),
      );
    const paused = await Promise.all(
      Array.from({ length: PAUSED }, async (_, i) => {
        const res = await open(port, w.host, w.token, page(i % RUNS));
        res.pause();
        return res;
      }),
    );
    const openSeconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 2000));
    const opened = await heap(server);
    const n = STREAMS + PAUSED;
    console.log(
      `streams: ${STREAMS} reading + ${PAUSED} paused on ${RUNS} runs, opened in ${fmt(openSeconds)} s`,
    );
    console.log(`server memory idle:        ${heapLine(idle)}`);
    console.log(`with the streams open:     ${heapLine(opened)}`);
    console.log(`  per stream: ${fmt((opened.heap - idle.heap) / 1024 / n)} KB of heap`);

    let step = 0;
    for (const rate of RATES) {
      latencies.length = 0;
      const count = rate * SECONDS;
      const cpu0 = processCpuSeconds(pid);
      const start = performance.now() + 20;
      const writes: Promise<void>[] = [];
      let late = 0;
      for (let i = 0; i < count; i++) {
        const due = start + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        late = Math.max(late, performance.now() - due);
        const run = (step + i) % RUNS;
        const number = Math.floor((step + i) / RUNS) + 1;
        writes.push(commitStep(pool, w.runs[run]!, number, () => acknowledged(`${run}:${number}`)));
      }
      await Promise.all(writes);
      step += count;
      const expected = count * (STREAMS / RUNS);
      const end = Date.now() + 10_000;
      while (latencies.length < expected && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      const cpu = processCpuSeconds(pid) - cpu0;
      console.log(
        `\n${rate} steps/s for ${SECONDS} s (sender at most ${fmt(late)} ms late): ${latencies.length} of ${expected} deliveries`,
      );
      console.log(
        `  commit → stream: p50 ${fmt(percentile(latencies, 50))} ms, p90 ${fmt(percentile(latencies, 90))} ms, p99 ${fmt(percentile(latencies, 99))} ms, max ${fmt(Math.max(...latencies))} ms`,
      );
      console.log(`  server CPU ${fmt(cpu)} s (${fmt((cpu / SECONDS) * 100)} % of a core)`);
      console.log(`  server memory after:     ${heapLine(await heap(server))}`);
    }
    console.log(`\nserver peak RSS ${fmt(peakRssMb(pid))} MB`);
    for (const wt of watches) wt.res?.destroy();
    for (const res of paused) res.destroy();
  } finally {
    await stopChild(server);
    await pool.end();
    await db.drop();
  }
}

/** A step as a worker commits it (the row and the run's counter), then the notice of the next call. */
async function commitStep(pool: pg.Pool, runId: string, number: number, acknowledged: () => void) {
  await pool.query({
    name: "bench-step",
    text: `WITH s AS (
        INSERT INTO subagent_task_run_steps (id, run_id, tenant_id, number, type, path, detail, input_tokens,
          output_tokens, llm_ms, duration_ms, model_text, created_at)
        SELECT $1, r.id, r.tenant_id, $3, 'navigate', '/studios/general',
          jsonb_build_object('ok', true, 'resultPath', '/studios/general', 'page', $4::text, 'note', 'Noted.'),
          1400, 50, 400, 410, 'Reading the studio page.', now()
        FROM subagent_task_runs r WHERE r.id = $2 RETURNING run_id, number)
      UPDATE subagent_task_runs SET steps_count = s.number FROM s WHERE id = s.run_id`,
    values: [newId(), runId, number, PAGE],
  });
  acknowledged();
  await pool.query(`SELECT pg_notify($1, $2)`, [LIVE_CHANNEL, `call ${runId} ${number + 1} ${Date.now()}`]);
}

await main();
process.exit(0);
