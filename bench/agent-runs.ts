// Agent-run benchmark (not a test). Run: `npx tsx bench/agent-runs.ts` with Postgres and
// Redis up (bin/test's prerequisites). Worker processes (src/worker.ts, children, default
// configuration) run the agents; the fake LLM (a real HTTP server) answers from this process.
//
// The load scenario is set by BENCH_CONCURRENT runs (200) of BENCH_STEPS LLM steps (12) at
// BENCH_LATENCY_MS per LLM call (500) over BENCH_WORKERS worker processes (1). Reports:
// trigger → first LLM call latency; orchestration overhead per step excluding LLM time;
// prompt tokens at LLM steps 1, 10, 30 and 120 of one long run whose model notes every
// step; the share of a 20-step and a 6-step walk through a studio a provider's prompt cache
// could serve (cache-walk.ts, prefix-cache.ts); then the load phase: steps/s against the
// LLM-bound ideal, runs per worker, each worker's peak RSS, runs that ended other than
// `completed`, CPU per LLM step, after BENCH_WARMUP runs (20) at no latency have warmed the
// workers (0: cold). BENCH_PHASES=load (or cache, …) runs only those phases.
import type { ChildProcess } from "node:child_process";
import { encode as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { DEFAULT_PROMPT_BUDGET, parseConfig } from "../src/config.ts";
import { createPrisma, type PrismaClient } from "../src/db/prisma.ts";
import { type ChatRequest, type FakeReply, startFakeLlm } from "../src/dev/fake-llm.ts";
import { newId } from "../src/lib/ids.ts";
import { queueRun } from "../src/services/agents/core/runs.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import type { Actor, Ctx } from "../src/services/registry/types.ts";
import { cpuSample, cpuUsed, loopDelay, ownerSampler, ownRedis } from "./agent-load.ts";
import { billedShares, implicitly, seedWalk, walker } from "./cache-walk.ts";
import { experimentPhase } from "./experiment-walk.ts";
import {
  fmt,
  freshDatabase,
  peakRssMb,
  percentile,
  printed,
  seedStudio,
  startEntry,
  stopChild,
} from "./lib.ts";
import { startSink } from "./otlp-sink.ts";

const env = parseConfig(process.env);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 200);
const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 500);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1);
const STEPS = Number(process.env.BENCH_STEPS ?? 12);
/** BENCH_WARMUP runs (20) of the load phase's shape at no latency before it: 0 measures a cold worker. */
const WARMUP = Math.min(Number(process.env.BENCH_WARMUP ?? 20), CONCURRENT);
const PHASES = (process.env.BENCH_PHASES ?? "trigger,overhead,prompt,cache,load,experiment").split(",");
/** BENCH_TRACES=1: the workers export traces to a local OTLP/HTTP receiver in this process. */
const TRACES = process.env.BENCH_TRACES === "1";
const LONG_STEPS = 121;
/** The 20-step walk's input at `87b3f45`, before prompts were built for a cache: all of it uncached (bench/README.md). */
const BEFORE_CACHE = 49_912;
/** The first phases use agents 0–50, the cache phase 51–52; the load phase needs at least CONCURRENT. */
const AGENTS = Math.max(CONCURRENT, 54);

interface World {
  ctx: Ctx;
  studio: string;
  agents: { id: string; handle: string }[];
}

async function seed(db: PrismaClient, agents: number): Promise<World> {
  const { tenant, person, studio } = await seedStudio(db, "owner", "Owner");
  await db.tenant.update({ where: { id: tenant.id }, data: { settings: { trigger_rate_per_minute: 1000 } } });
  const list = Array.from({ length: agents }, (_, i) => ({ id: newId(), handle: `agent${i}` }));
  await db.user.createMany({
    data: list.map((a, i) => ({
      id: a.id,
      tenantId: tenant.id,
      handle: a.handle,
      name: `Agent ${i}`,
      kind: "subagent" as const,
      parentId: person.id,
      agentConfig: { max_steps: 50, timeout_seconds: 3600 },
    })),
  });
  await db.studioMember.createMany({
    data: list.map((a) => ({ studioId: studio.id, userId: a.id, tenantId: tenant.id })),
  });
  const fresh = await db.tenant.findUniqueOrThrow({ where: { id: tenant.id } });
  return { ctx: { db, tenant: fresh, actor: person as Actor }, studio: studio.handle, agents: list };
}

/**
 * Scripted model: navigates between two pages until the run has taken `steps` LLM steps,
 * then finishes. Agents are reused across phases, so each phase starts from `calls.clear()`:
 * otherwise an agent's earlier calls count towards its next run, which then finishes early.
 */
function script(
  stepsPerRun: (handle: string) => number,
  firstCall: Map<string, number>,
  calls: Map<string, number>,
  /** Agents whose model leaves a note with every step, and whose requests are kept. */
  noting: Map<string, ChatRequest[]>,
  /** Agents walking through a studio (cache-walk.ts): their model instead. */
  walks: Map<string, (handle: string, n: number, req: ChatRequest) => FakeReply>,
) {
  return (req: ChatRequest): FakeReply => {
    const handle = /\(@([\w-]+)\), an AI agent/.exec(String(req.messages[0]?.content ?? ""))?.[1] ?? "?";
    const n = (calls.get(handle) ?? 0) + 1;
    calls.set(handle, n);
    if (n === 1) firstCall.set(handle, Date.now());
    const walk = walks.get(handle);
    if (walk) return walk(handle, n, req);
    noting.get(handle)?.push(req);
    if (n >= stepsPerRun(handle)) return { tool: { name: "finish", args: { message: "done" } } };
    const path = n % 2 ? "/studios/general" : "/studios/general/notes";
    const note = noting.has(handle)
      ? `Step ${n}: looked at ${path} again; still nothing about the offsite budget, next the other list.`
      : undefined;
    return { tool: { name: "navigate", args: { path, note } } };
  };
}

/** What a request sends, messages and tools, as o200k counts it. */
const promptTokens = (req: ChatRequest | undefined) =>
  req
    ? o200k(req.messages.map((m) => String(m.content ?? "")).join("\n")).length +
      o200k(JSON.stringify(req.tools ?? [])).length
    : Number.NaN;

function startWorker(
  databaseUrl: string,
  redisUrl: string,
  llmUrl: string,
  prefix: string,
  otlp?: string,
): ChildProcess {
  const profile = process.env.BENCH_PROFILE
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`]
    : [];
  // BENCH_HEAP: the worker prints its heap in use on SIGUSR2 (heap-probe.mjs), read mid-phase.
  const heap = process.env.BENCH_HEAP ? ["--expose-gc", "--import", "./bench/heap-probe.mjs"] : [];
  // BENCH_NODE_ARGS: node or V8 flags for the workers, e.g. a heap setting under trial.
  const extra = process.env.BENCH_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  return startEntry(
    "src/worker.ts",
    {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      LLM_BASE_URL: llmUrl,
      LLM_DEFAULT_MODEL: "bench-model",
      // info: the worker says it is running at that level (and logs nothing per step).
      LOG_LEVEL: "info",
      ...(otlp && { OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_SERVICE_NAME: "cadre-bench" }),
    },
    [...profile, ...heap, ...extra],
  );
}

async function waitDone(db: PrismaClient, tenantId: string, count: number, timeoutMs: number) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const done = await db.subagentTaskRun.count({
      where: { tenantId, status: { in: ["completed", "failed", "timed_out", "cancelled"] } },
    });
    if (done >= count) return;
    if (Date.now() > end) throw new Error(`only ${done}/${count} runs finished in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The agent's one run, once it has ended. */
async function endOf(db: PrismaClient, agentId: string) {
  for (let waited = 0; waited < 60_000; waited += 100) {
    const run = await db.subagentTaskRun.findFirst({ where: { agentId } });
    if (run && !["queued", "running"].includes(run.status)) return run;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the run of ${agentId} did not end in time`);
}

async function manualRuns(w: World, agents: { id: string }[], maxSteps = 50, model: string | null = null) {
  await w.ctx.db.$transaction(
    async (tx) => {
      for (const a of agents)
        await queueRun(tx, {
          tenantId: w.ctx.tenant.id,
          agentId: a.id,
          initiatedById: w.ctx.actor.id,
          triggerKind: "manual",
          chainDepth: 0,
          task: "Look around the studio.",
          model,
          maxSteps,
          timeoutSeconds: 3600,
        });
    },
    { timeout: 120_000 },
  );
}

/** The heap a worker holds after a full GC (BENCH_HEAP), in MB: used, external, RSS. */
function heapOf(worker: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    const on = (d: Buffer) => {
      const m = /heap (\d+) (\d+) (\d+)/.exec(d.toString());
      if (!m) return;
      worker.stdout!.off("data", on);
      resolve(
        m
          .slice(1)
          .map((x) => fmt(Number(x) / 2 ** 20))
          .join(" / "),
      );
    };
    worker.stdout!.on("data", on);
    worker.kill("SIGUSR2");
  });
}

type Rows = [string, string][];

interface Bench {
  db: PrismaClient;
  w: World;
  workers: ChildProcess[];
  redisPid?: number;
  llm: Awaited<ReturnType<typeof startFakeLlm>>;
  calls: Map<string, number>;
  firstCall: Map<string, number>;
  noting: Map<string, ChatRequest[]>;
  walks: Map<string, (handle: string, n: number, req: ChatRequest) => FakeReply>;
  setPerRun(n: number): void;
}

/** Phases 1–3: trigger latency, per-step overhead, prompt tokens of a long run (LLM at zero latency). */
async function firstPhases(b: Bench): Promise<Rows> {
  const { db, w, calls, firstCall } = b;
  // 1. Trigger → first LLM call, one mention at a time.
  b.setPerRun(1);
  const note = await registry.run(
    w.ctx,
    "/studios/general",
    "create_note",
    { text: "Bench note" },
    { form: false },
  );
  const latencies: number[] = [];
  for (const a of w.agents.slice(0, 40)) {
    const t0 = Date.now();
    await registry.run(w.ctx, note.location, "add_comment", { text: `@${a.handle} ping` }, { form: false });
    while (!firstCall.has(a.handle)) await new Promise((r) => setTimeout(r, 1));
    latencies.push(firstCall.get(a.handle)! - t0);
  }
  await waitDone(db, w.ctx.tenant.id, 40, 60_000);

  // 2. Orchestration overhead per step: 10 runs of 20 steps, one at a time, so the number
  // is the cost of a step itself, not of waiting behind other runs.
  b.setPerRun(20);
  calls.clear();
  const sample = w.agents.slice(40, 50);
  const before = await db.subagentTaskRun.count({ where: { tenantId: w.ctx.tenant.id } });
  for (const [i, a] of sample.entries()) {
    await manualRuns(w, [a]);
    await waitDone(db, w.ctx.tenant.id, before + i + 1, 60_000);
  }
  const steps = await db.subagentTaskRunStep.findMany({
    where: { run: { agentId: { in: sample.map((a) => a.id) } } },
    orderBy: [{ runId: "asc" }, { number: "asc" }],
  });
  const overhead: number[] = [];
  for (let i = 1; i < steps.length; i++) {
    const [prev, cur] = [steps[i - 1]!, steps[i]!];
    if (prev.runId !== cur.runId) continue;
    overhead.push(cur.createdAt.getTime() - prev.createdAt.getTime() - cur.llmMs);
  }

  return [
    [
      "trigger → first LLM call p50 / p99 (ms)",
      `${fmt(percentile(latencies, 50))} / ${fmt(percentile(latencies, 99))}`,
    ],
    [
      "orchestration overhead per step p50 / p99 (ms)",
      `${fmt(percentile(overhead, 50))} / ${fmt(percentile(overhead, 99))}`,
    ],
    await longRun(b),
  ];
}

/** 3. Prompt tokens at LLM steps 1, 10, 30 and 120 of one long run, its model noting every step. */
async function longRun(b: Bench): Promise<Rows[number]> {
  const { db, w, calls, noting } = b;
  b.setPerRun(LONG_STEPS);
  calls.clear();
  const long = w.agents[50]!;
  const longRequests: ChatRequest[] = [];
  noting.set(long.handle, longRequests);
  const before = await db.subagentTaskRun.count({ where: { tenantId: w.ctx.tenant.id } });
  await manualRuns(w, [long], LONG_STEPS + 5);
  await waitDone(db, w.ctx.tenant.id, before + 1, 120_000);
  noting.delete(long.handle);
  const tokensAt = (k: number) => promptTokens(longRequests[k - 1]);
  return [
    `prompt tokens (o200k) at LLM step 1 / 10 / 30 / 120, budget ${DEFAULT_PROMPT_BUDGET}`,
    `${tokensAt(1)} / ${tokensAt(10)} / ${tokensAt(30)} / ${tokensAt(120)} (largest of ${longRequests.length}: ${Math.max(...longRequests.map(promptTokens))})`,
  ];
}

/**
 * Phase 4: how much of a run's input a provider's prefix cache could serve (OpenAI's rules,
 * prefix-cache.ts): a 20-step walk through a studio and a 6-step run, one after the other.
 */
async function cachePhase(b: Bench): Promise<Rows> {
  const { db, w } = b;
  const walk = await seedWalk(w.ctx);
  const rows: Rows = [];
  for (const [agent, steps] of [
    [w.agents[51]!, 20],
    [w.agents[52]!, 6],
  ] as const) {
    const { reply, caches } = walker(walk, steps);
    b.walks.set(agent.handle, reply);
    b.calls.delete(agent.handle);
    const before = await db.subagentTaskRun.count({ where: { tenantId: w.ctx.tenant.id } });
    await manualRuns(w, [agent]);
    await waitDone(db, w.ctx.tenant.id, before + 1, 60_000);
    b.walks.delete(agent.handle);
    const c = caches.get(agent.handle)!;
    const [run] = await db.subagentTaskRun.findMany({
      where: { agentId: agent.id },
      orderBy: { createdAt: "desc" },
      take: 1,
    });
    rows.push([
      `${steps}-step walk through a studio (${run!.status}, ${run!.stepsCount} steps): input tokens (o200k); cacheable by OpenAI's rules; effective (uncached + 10 % of cached)`,
      `${c.input}; ${fmt(100 * c.share)} %; ${fmt(c.effective, 0)}`,
    ]);
    if (steps === 20)
      rows.push([
        `the same: effective input tokens against \`87b3f45\`'s ${BEFORE_CACHE.toLocaleString("en")} (nothing cached then)`,
        `${fmt((100 * c.effective) / BEFORE_CACHE)} %`,
      ]);
  }
  rows.push(await gpt56Walk(b, walk));
  // The long run's row too, so that this phase alone prints the whole cache table (issue 48).
  if (!PHASES.includes("trigger")) rows.push(await longRun(b));
  return rows;
}

/**
 * The 20-step walk on a GPT-5.6 model, billed by the fake's cache of that model (reads at a
 * tenth, writes at 1.25 × input): from the ledger as the run recorded it, and for the same
 * requests left to implicit caching.
 */
async function gpt56Walk(b: Bench, walk: (string | null)[]): Promise<Rows[number]> {
  const { db, w, llm } = b;
  const agent = w.agents[53]!;
  const model = "gpt-5.6-luna";
  const { reply } = walker(walk, 20, { simulated: true });
  b.walks.set(agent.handle, reply);
  const first = llm.requests.length;
  await manualRuns(w, [agent], 50, model);
  const run = await endOf(db, agent.id);
  b.walks.delete(agent.handle);
  const sums = await db.llmUsage.aggregate({
    where: { runId: run.id },
    _sum: { inputTokens: true, cachedTokens: true, cacheWriteTokens: true },
  });
  const ours = billedShares({
    input: sums._sum.inputTokens ?? 0,
    read: sums._sum.cachedTokens ?? 0,
    written: sums._sum.cacheWriteTokens ?? 0,
  });
  const left = implicitly(
    llm.requests
      .slice(first)
      .filter((r) => r.wire.model === model)
      .map((r) => r.wire),
  );
  const show = (s: typeof ours) => `${fmt(s.read)} / ${fmt(s.written)} / ${fmt(s.effective)} %`;
  return [
    `20-step walk on ${model} (${run.status}, ${run.stepsCount} steps), its cache's rules: read / written / effective (uncached + 10 % read + 125 % written), % of input: our breakpoints; left implicit`,
    `${show(ours)}; ${show(left)}`,
  ];
}

/** Phase 5: CONCURRENT runs of STEPS LLM steps at LATENCY_MS, spread over the workers. */
/**
 * Runs the load phase's first agents through STEPS steps each at no latency, so the phase
 * measures a warm worker, as a long-lived one is, and as the peers' bench measures each
 * framework (`../shared/peer-overhead` warms its process with ten runs first).
 */
async function warmUp(b: Bench) {
  const { db, w, llm } = b;
  const tenantId = w.ctx.tenant.id;
  llm.setLatency(0);
  b.setPerRun(STEPS);
  const all = await db.subagentTaskRun.count({ where: { tenantId } });
  await manualRuns(w, w.agents.slice(0, WARMUP));
  await waitDone(db, tenantId, all + WARMUP, 120_000);
}

async function loadPhase(b: Bench): Promise<Rows> {
  const { db, w, llm, workers } = b;
  const tenantId = w.ctx.tenant.id;
  if (WARMUP) await warmUp(b);
  llm.setLatency(LATENCY_MS);
  b.setPerRun(STEPS);
  b.calls.clear();
  b.firstCall.clear();
  const all = await db.subagentTaskRun.count({ where: { tenantId } });
  const queuedAt = new Date();
  const heapIdle = process.env.BENCH_HEAP ? await Promise.all(workers.map(heapOf)) : [];
  await manualRuns(w, w.agents.slice(0, CONCURRENT));
  // From the commit that makes the runs visible to the workers, to the last run's end: the
  // benchmark's own inserts before it, and its 100 ms polling after, are not the workers'.
  const t0 = Date.now();
  const pids = workers.map((c) => c.pid!);
  const cpu0 = await cpuSample(db, pids, b.redisPid);
  const owners = ownerSampler(db, tenantId, queuedAt);
  const lag = loopDelay();
  // Mid-phase, every run is waiting on the model: what the workers hold then.
  const heapMid = process.env.BENCH_HEAP
    ? new Promise<string[]>((r) =>
        setTimeout(() => r(Promise.all(workers.map(heapOf))), (STEPS * LATENCY_MS) / 2),
      )
    : Promise.resolve([]);
  await waitDone(db, tenantId, all + CONCURRENT, 600_000);
  const cpu1 = await cpuSample(db, pids, b.redisPid);
  const delay = lag();
  const held = await owners.stop();
  const loadRuns = { tenantId, createdAt: { gte: queuedAt } };
  const last = await db.subagentTaskRun.aggregate({ where: loadRuns, _max: { completedAt: true } });
  const wall = (last._max.completedAt!.getTime() - t0) / 1000;
  const loadSteps = await db.subagentTaskRunStep.count({ where: { run: loadRuns, inputTokens: { gt: 0 } } });
  const ended = await db.subagentTaskRun.groupBy({ by: ["status"], where: loadRuns, _count: true });
  const notCompleted = ended.filter((e) => e.status !== "completed");
  const claims = await db.subagentTaskRun.count({ where: { ...loadRuns, attempts: { gt: 1 } } });
  const gaps = await db.$queryRaw<{ gap: number; llm: number }[]>`
    SELECT gap, llm FROM (
      SELECT (extract(epoch FROM s.created_at - lag(s.created_at) OVER w) * 1000)::int AS gap, s.llm_ms AS llm
      FROM subagent_task_run_steps s JOIN subagent_task_runs r ON r.id = s.run_id
      WHERE r.tenant_id = ${tenantId} AND r.created_at >= ${queuedAt} AND s.number > 1
      WINDOW w AS (PARTITION BY s.run_id ORDER BY s.number)) x
    WHERE gap IS NOT NULL`;
  const [claimed] = await db.$queryRaw<{ ms: number[] }[]>`
    SELECT array_agg(round(extract(epoch FROM started_at - ${new Date(t0)}::timestamptz) * 1000)::int) AS ms
    FROM subagent_task_runs WHERE tenant_id = ${tenantId} AND created_at >= ${queuedAt}`;
  const used = cpuUsed(cpu0, cpu1);
  const ramp = [...b.firstCall.values()].map((t) => t - t0);
  const ideal = (CONCURRENT * 1000) / LATENCY_MS;
  const rate = loadSteps / wall;
  const p3 = (v: number[]) => [50, 90, 99].map((p) => percentile(v, p)).join(" / ");
  const msPerStep = (s: number) => fmt((1000 * s) / loadSteps, 2);
  const share = pids.map((pid) => `${fmt((100 * (held.perPid.get(pid) ?? 0)) / Math.max(1, held.seen))} %`);
  const rows: Rows = [
    [
      `${CONCURRENT} runs × ${STEPS} steps @${LATENCY_MS} ms, ${WORKERS} worker(s), ${WARMUP ? `warmed by ${WARMUP} runs` : "cold"}: LLM steps/s (ideal ${ideal})`,
      `${fmt(rate)} (${fmt((100 * rate) / ideal)}% of ideal; ${loadSteps} steps in ${fmt(wall, 2)} s)`,
    ],
    [
      "runs ended other than completed; runs claimed more than once",
      `${notCompleted.map((e) => `${e._count} ${e.status}`).join(", ") || "0"}; ${claims} (held by two workers: ${held.twice})`,
    ],
    ["runs held by each worker (of those sampled)", `${share.join(" / ")} (${held.seen} runs seen)`],
    ["each worker's peak RSS (MB)", pids.map((p) => fmt(peakRssMb(p))).join(" / ")],
    [
      "commit → run claimed p50 / max; → first LLM call p50 / max (ms)",
      `${fmt(percentile(claimed!.ms, 50))} / ${fmt(Math.max(...claimed!.ms))}; ${fmt(percentile(ramp, 50))} / ${fmt(Math.max(...ramp))}`,
    ],
    [
      "per step, the LLM call as the worker timed it / the rest, p50 / p90 / p99 (ms)",
      `${p3(gaps.map((x) => x.llm))}; ${p3(gaps.map((x) => x.gap - x.llm))}`,
    ],
    [
      "CPU ms per LLM step: workers + Postgres + Redis (workers / Postgres / Redis)",
      `${msPerStep(used.workers + used.postgres + used.redis)} (${msPerStep(used.workers)} / ${msPerStep(used.postgres)} / ${msPerStep(used.redis)})`,
    ],
    [
      "CPU s of the phase: machine (all processes) / this process (fake LLM)",
      `${fmt(used.machine, 1)} of ${fmt(wall * 2, 1)} / ${fmt(used.bench, 1)}; its event-loop delay p99 / max ${fmt(delay.p99)} / ${fmt(delay.max)} ms`,
    ],
  ];
  if (process.env.BENCH_HEAP) {
    const mid = await heapMid;
    rows.push([
      "heap after GC, idle → mid-phase (MB used / external / RSS)",
      workers.map((_, i) => `${heapIdle[i]} → ${mid[i]}`).join("; "),
    ]);
  }
  return rows;
}

async function main() {
  const database = await freshDatabase(env.DATABASE_URL, "runs");
  const db = createPrisma(database.url, 20);
  // BENCH_EXPLAIN_MS: Postgres logs the plan of every statement of the workers slower than this (auto_explain).
  if (process.env.BENCH_EXPLAIN_MS) {
    const name = new URL(database.url).pathname.slice(1);
    await db.$executeRawUnsafe(`ALTER DATABASE "${name}" SET session_preload_libraries = 'auto_explain'`);
    await db.$executeRawUnsafe(
      `ALTER DATABASE "${name}" SET auto_explain.log_min_duration = ${Number(process.env.BENCH_EXPLAIN_MS)}`,
    );
  }
  const redis = await ownRedis();
  const firstCall = new Map<string, number>();
  const calls = new Map<string, number>();
  let perRun = 1;
  const noting = new Map<string, ChatRequest[]>();
  const walks: Bench["walks"] = new Map();
  const llm = await startFakeLlm({ script: script(() => perRun, firstCall, calls, noting, walks) });
  const prefix = `cadre-bench-${newId(6)}`;
  const sink = TRACES ? await startSink() : null;
  const workers = Array.from({ length: WORKERS }, () =>
    startWorker(database.url, redis?.url ?? env.REDIS_URL, llm.url, prefix, sink?.url),
  );
  try {
    await Promise.all(workers.map((c) => printed(c, "running")));
    const w = await seed(db, AGENTS);
    const b: Bench = {
      db,
      w,
      workers,
      redisPid: redis?.pid,
      llm,
      calls,
      firstCall,
      noting,
      walks,
      setPerRun: (n) => {
        perRun = n;
      },
    };
    const rows = PHASES.includes("trigger") ? await firstPhases(b) : [];
    if (PHASES.includes("cache")) rows.push(...(await cachePhase(b)));
    if (PHASES.includes("load")) rows.push(...(await loadPhase(b)));
    if (PHASES.includes("experiment"))
      rows.push(
        ...(await experimentPhase({
          db,
          ctx: w.ctx,
          llm,
          latencyMs: LATENCY_MS,
          workerPids: workers.map((c) => c.pid!),
          redisPid: redis?.pid,
          walks,
        })),
      );
    // An ordinary run is never held (issue 42): what waited for approval, and how much of it for what it would disclose.
    const [pending] = await db.$queryRaw<{ held: number; disclosure: number }[]>`
      SELECT count(*)::int AS held, count(*) FILTER (WHERE disclosure IS NOT NULL)::int AS disclosure
      FROM agent_pending_actions WHERE tenant_id = ${w.ctx.tenant.id}`;
    rows.push([
      "actions held for approval; of them for a disclosure",
      `${pending!.held}; ${pending!.disclosure}`,
    ]);
    // What the receiver got by the end of the phase (the worker's last batch may still be on its way).
    if (sink)
      rows.push([
        "traces received (requests / spans / MB)",
        `${sink.seen.requests} / ${sink.seen.spans} / ${fmt(sink.seen.bytes / 2 ** 20, 1)}`,
      ]);
    console.log(
      `\nAgent runs benchmark (${redis ? "own Redis" : "shared Redis: its CPU not counted"}${sink ? ", traces on" : ""})`,
    );
    for (const [k, v] of rows) console.log(`  ${k.padEnd(80)} ${v}`);
  } finally {
    await Promise.all(workers.map((c) => stopChild(c)));
    await llm.close();
    await sink?.close();
    await db.$disconnect();
    await database.drop();
    await redis?.stop();
  }
}

await main();
process.exit(0);
