// Agent-run benchmark (not a test). Run: `npx tsx bench/agent-runs.ts` with Postgres and
// Redis up (bin/test's prerequisites). One worker process (src/worker.ts, a child) runs
// the agents; the fake LLM (a real HTTP server) answers from this process.
//
// Reports: trigger → first LLM call latency; orchestration overhead per step excluding
// LLM time; steps/s and peak RSS with 200 concurrent runs at 500 ms LLM latency; prompt
// tokens at LLM steps 1, 10, 30 and 120 of one long run whose model notes every step.
import type { ChildProcess } from "node:child_process";
import { encode as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { parseConfig } from "../src/config.ts";
import { createPrisma, type PrismaClient } from "../src/db/prisma.ts";
import { type ChatRequest, type FakeReply, startFakeLlm } from "../src/dev/fake-llm.ts";
import { newId } from "../src/lib/ids.ts";
import { DEFAULT_PROMPT_BUDGET } from "../src/services/agents/prompt.ts";
import { queueRun } from "../src/services/agents/runs.ts";
import { registry } from "../src/services/catalog.ts";
import type { Actor, Ctx } from "../src/services/registry/types.ts";
import {
  fmt,
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
const CONCURRENT = Number(process.env.BENCH_CONCURRENT ?? 200);
const LONG_STEPS = 121;

interface World {
  ctx: Ctx;
  studio: string;
  agents: { id: string; handle: string }[];
}

async function seed(db: PrismaClient, agents: number): Promise<World> {
  const { tenant, person, studio } = await seedStudio(db, "owner", "Owner");
  await db.tenant.update({ where: { id: tenant.id }, data: { settings: { trigger_rate_per_minute: 1000 } } });
  const list = [];
  for (let i = 0; i < agents; i++) {
    const a = await db.user.create({
      data: {
        id: newId(),
        tenantId: tenant.id,
        handle: `agent${i}`,
        name: `Agent ${i}`,
        kind: "subagent",
        parentId: person.id,
        agentConfig: { max_steps: 50, timeout_seconds: 3600 },
      },
    });
    await db.studioMember.create({ data: { studioId: studio.id, userId: a.id, tenantId: tenant.id } });
    list.push({ id: a.id, handle: a.handle });
  }
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
) {
  return (req: ChatRequest): FakeReply => {
    const handle = /\(@([\w-]+)\), an AI agent/.exec(String(req.messages[0]?.content ?? ""))?.[1] ?? "?";
    const n = (calls.get(handle) ?? 0) + 1;
    calls.set(handle, n);
    if (n === 1) firstCall.set(handle, Date.now());
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

function startWorker(databaseUrl: string, llmUrl: string, prefix: string): ChildProcess {
  const profile = process.env.BENCH_PROFILE
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`]
    : [];
  return startEntry(
    "src/worker.ts",
    {
      DATABASE_URL: databaseUrl,
      QUEUE_PREFIX: prefix,
      LLM_BASE_URL: llmUrl,
      LLM_DEFAULT_MODEL: "bench-model",
      WORKER_CONCURRENCY: String(CONCURRENT),
      // info: the worker says it is running at that level (and logs nothing per step).
      LOG_LEVEL: "info",
    },
    profile,
  );
}

/** CPU seconds so far: the whole machine's (all cores), one process's, this process's. */
function cpuSeconds(workerPid: number) {
  const self = process.cpuUsage();
  return {
    machine: machineCpuSeconds(),
    worker: processCpuSeconds(workerPid),
    bench: (self.user + self.system) / 1e6,
  };
}

async function waitDone(db: PrismaClient, tenantId: string, count: number, timeoutMs: number) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const done = await db.subagentTaskRun.count({
      where: { tenantId, status: { in: ["completed", "failed", "timed_out"] } },
    });
    if (done >= count) return;
    if (Date.now() > end) throw new Error(`only ${done}/${count} runs finished in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function manualRuns(w: World, agents: { id: string }[], maxSteps = 50) {
  await w.ctx.db.$transaction(async (tx) => {
    for (const a of agents)
      await queueRun(tx, {
        tenantId: w.ctx.tenant.id,
        agentId: a.id,
        initiatedById: w.ctx.actor.id,
        triggerKind: "manual",
        chainDepth: 0,
        task: "Look around the studio.",
        model: null,
        maxSteps,
        timeoutSeconds: 3600,
      });
  });
}

async function main() {
  const database = await freshDatabase(env.DATABASE_URL, "runs");
  const db = createPrisma(database.url, 20);
  const firstCall = new Map<string, number>();
  const calls = new Map<string, number>();
  let perRun = 1;
  const noting = new Map<string, ChatRequest[]>();
  const llm = await startFakeLlm({ script: script(() => perRun, firstCall, calls, noting) });
  const prefix = `cadre-bench-${newId(6)}`;
  const worker = startWorker(database.url, llm.url, prefix);
  try {
    await printed(worker, "running");
    const w = await seed(db, CONCURRENT);

    // 1. Trigger → first LLM call, one mention at a time, LLM at zero latency.
    perRun = 1;
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

    // 2. Orchestration overhead per step (LLM at zero latency): 10 runs of 20 steps, one at a
    // time, so the number is the cost of a step itself, not of waiting behind other runs.
    perRun = 20;
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

    // 3. Prompt tokens at LLM steps 1, 10, 30 and 120 of one long run, its model noting every step.
    perRun = LONG_STEPS;
    calls.clear();
    const long = w.agents[50]!;
    const longRequests: ChatRequest[] = [];
    noting.set(long.handle, longRequests);
    await manualRuns(w, [long], LONG_STEPS + 5);
    await waitDone(db, w.ctx.tenant.id, before + sample.length + 1, 120_000);
    noting.delete(long.handle);
    const tokensAt = (k: number) => promptTokens(longRequests[k - 1]);

    // 4. 200 concurrent runs at 500 ms LLM latency: steps/s against the LLM-bound ideal.
    llm.setLatency(500);
    perRun = 12;
    calls.clear();
    firstCall.clear();
    const all = await db.subagentTaskRun.count({ where: { tenantId: w.ctx.tenant.id } });
    const queuedAt = new Date();
    await manualRuns(w, w.agents);
    // From the commit that makes the 200 runs visible to the worker, to the last run's end:
    // the benchmark's own 600 inserts before it, and its 100 ms polling after, are not the worker's.
    const t0 = Date.now();
    const cpu0 = cpuSeconds(worker.pid!);
    await waitDone(db, w.ctx.tenant.id, all + w.agents.length, 300_000);
    const cpu1 = cpuSeconds(worker.pid!);
    const loadRuns = { tenantId: w.ctx.tenant.id, createdAt: { gte: queuedAt } };
    const last = await db.subagentTaskRun.aggregate({ where: loadRuns, _max: { completedAt: true } });
    const wall = (last._max.completedAt!.getTime() - t0) / 1000;
    const loadSteps = await db.subagentTaskRunStep.count({
      where: { run: loadRuns, inputTokens: { gt: 0 } },
    });
    const perSecond = await db.$queryRaw<{ s: number; n: number }[]>`
      SELECT floor(extract(epoch FROM s.created_at - ${new Date(t0)}::timestamptz))::int AS s, count(*)::int AS n
      FROM subagent_task_run_steps s JOIN subagent_task_runs r ON r.id = s.run_id
      WHERE r.tenant_id = ${w.ctx.tenant.id} AND r.created_at >= ${queuedAt} AND s.input_tokens > 0
      GROUP BY 1 ORDER BY 1`;
    if (process.env.BENCH_VERBOSE) {
      console.log("LLM steps per second of the load phase:", perSecond.map((r) => r.n).join(" "));
      // Where the ramp goes: the claim, then the run's first step (its /whoami read).
      const [stages] = await db.$queryRaw<{ claimed: number[]; whoami: number[] }[]>`
        SELECT array_agg(round(extract(epoch FROM r.started_at - ${new Date(t0)}::timestamptz) * 1000)::int ORDER BY r.started_at) AS claimed,
               array_agg(round(extract(epoch FROM s.created_at - ${new Date(t0)}::timestamptz) * 1000)::int ORDER BY s.created_at) AS whoami
        FROM subagent_task_runs r JOIN subagent_task_run_steps s ON s.run_id = r.id AND s.number = 1
        WHERE r.tenant_id = ${w.ctx.tenant.id} AND r.created_at >= ${queuedAt}`;
      const q = (v: number[]) =>
        [0, 25, 50, 75, 100]
          .map((p) => v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))])
          .join(" / ");
      const used = (k: keyof typeof cpu0) => fmt(cpu1[k] - cpu0[k], 2);
      console.log(
        `CPU seconds in the load phase: machine ${used("machine")} (of ${fmt(((Date.now() - t0) / 1000) * 2, 1)} on 2 cores), worker ${used("worker")}, benchmark + fake LLM ${used("bench")}, the rest (Postgres, Redis) ${fmt(cpu1.machine - cpu0.machine - (cpu1.worker - cpu0.worker) - (cpu1.bench - cpu0.bench), 2)}`,
      );
      // Between two LLM steps of a run: the LLM call as the worker timed it, and the rest.
      const gaps = await db.$queryRaw<{ gap: number; llm: number }[]>`
        SELECT gap, llm FROM (
          SELECT (extract(epoch FROM s.created_at - lag(s.created_at) OVER w) * 1000)::int AS gap, s.llm_ms AS llm
          FROM subagent_task_run_steps s JOIN subagent_task_runs r ON r.id = s.run_id
          WHERE r.tenant_id = ${w.ctx.tenant.id} AND r.created_at >= ${queuedAt} AND s.number > 1
          WINDOW w AS (PARTITION BY s.run_id ORDER BY s.number)) x
        WHERE gap IS NOT NULL`;
      const p3 = (v: number[]) => [50, 90, 99].map((p) => percentile(v, p)).join(" / ");
      console.log(
        `load phase, per LLM step (p50 / p90 / p99 ms): the LLM call as the worker timed it ${p3(gaps.map((x) => x.llm))}; the rest ${p3(gaps.map((x) => x.gap - x.llm))}`,
      );
      console.log(
        `ramp, ms after the commit (min / p25 / p50 / p75 / max): claimed ${q(stages!.claimed)}; /whoami recorded ${q(stages!.whoami)}`,
      );
      // Whether a few runs are late or all of them: the spread of the runs' ends.
      const [ends] = await db.$queryRaw<{ ms: number[] }[]>`
        SELECT array_agg(round(extract(epoch FROM completed_at - ${new Date(t0)}::timestamptz) * 1000)::int
          ORDER BY completed_at) AS ms
        FROM subagent_task_runs WHERE tenant_id = ${w.ctx.tenant.id} AND created_at >= ${queuedAt}`;
      console.log(`runs ended, ms after the commit (min / p25 / p50 / p75 / max): ${q(ends!.ms)}`);
    }
    // The ramp: how long after the commit each run made its first LLM call.
    const ramp = [...firstCall.values()].map((t) => t - t0);
    const ideal = CONCURRENT / 0.5;
    const rate = loadSteps / wall;

    const rows: [string, string][] = [
      [
        "trigger → first LLM call p50 / p99 (ms)",
        `${fmt(percentile(latencies, 50))} / ${fmt(percentile(latencies, 99))}`,
      ],
      [
        "orchestration overhead per step p50 / p99 (ms)",
        `${fmt(percentile(overhead, 50))} / ${fmt(percentile(overhead, 99))}`,
      ],
      [
        `${CONCURRENT} concurrent runs @500 ms: LLM steps/s (ideal ${ideal})`,
        `${fmt(rate)} (${fmt((100 * rate) / ideal)}% of ideal; ${loadSteps} steps in ${fmt(wall, 2)} s)`,
      ],
      [
        `${CONCURRENT} concurrent runs: commit → first LLM call p50 / max (ms)`,
        `${fmt(percentile(ramp, 50))} / ${fmt(Math.max(...ramp))}`,
      ],
      ["worker peak RSS (MB)", fmt(peakRssMb(worker.pid!))],
      [
        `prompt tokens (o200k) at LLM step 1 / 10 / 30 / 120, budget ${DEFAULT_PROMPT_BUDGET}`,
        `${tokensAt(1)} / ${tokensAt(10)} / ${tokensAt(30)} / ${tokensAt(120)} (largest of ${longRequests.length}: ${Math.max(...longRequests.map(promptTokens))})`,
      ],
    ];
    console.log("\nAgent runs benchmark");
    for (const [k, v] of rows) console.log(`  ${k.padEnd(58)} ${v}`);
  } finally {
    await stopChild(worker);
    await llm.close();
    await db.$disconnect();
    await database.drop();
  }
}

await main();
process.exit(0);
