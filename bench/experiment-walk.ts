// The agent-run benchmark's experiment phase (issue 47): an agent's test cases run as dry
// runs by `start_experiment`, each case twice (its current model and a candidate's), in lanes
// of their own. T1 is one case alone (an experiment of 1 case, its 2 runs in 2 lanes); T20 an
// experiment of 20 cases (40 runs in 40 lanes), both on the benchmark's one worker and from
// the action's call until the last of the experiment's runs ended. The target: T20 ≤ 1.5 × T1.
import type { PrismaClient } from "../src/db/prisma.ts";
import type { ChatRequest, FakeLlm, FakeReply } from "../src/dev/fake-llm.ts";
import type { RunStatus } from "../src/generated/prisma/enums.ts";
import { newId } from "../src/lib/ids.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import type { Ctx } from "../src/services/registry/types.ts";
import { cpuSample, cpuUsed } from "./agent-load.ts";
import { fmt, percentile } from "./lib.ts";

const CURRENT = "gpt-4o-mini";
const CANDIDATE = "gpt-4o";
const ENDED: RunStatus[] = ["completed", "failed", "cancelled", "timed_out", "skipped"];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

export interface ExperimentBench {
  db: PrismaClient;
  ctx: Ctx;
  llm: FakeLlm;
  latencyMs: number;
  workerPids: number[];
  redisPid?: number;
  walks: Map<string, (handle: string, n: number, req: ChatRequest) => FakeReply>;
}

/** An agent of the bench's owner, member of its studio, on CURRENT, with `cases` test cases. */
async function agentWithCases(b: ExperimentBench, handle: string, cases: number) {
  const { db, ctx } = b;
  const tenantId = ctx.tenant.id;
  const studio = await db.studio.findFirstOrThrow({ where: { tenantId, handle: "general" } });
  const agent = await db.user.create({
    data: {
      id: newId(),
      tenantId,
      handle,
      name: handle,
      kind: "subagent",
      parentId: ctx.actor.id,
      agentConfig: { max_steps: 20, timeout_seconds: 600, model: CURRENT },
    },
  });
  await db.studioMember.create({ data: { studioId: studio.id, userId: agent.id, tenantId } });
  await db.agentTestCase.createMany({
    data: Array.from({ length: cases }, (_, i) => ({
      id: newId(),
      tenantId,
      agentId: agent.id,
      name: `Case ${i + 1}`,
      // The model below tells the runs apart by this number (and the side by its model).
      task: `Bench case ${i + 1}: read the offsite notes and comment on two of them.`,
      triggerKind: "manual",
      createdById: ctx.actor.id,
    })),
  });
  return agent;
}

/**
 * The model's side: every run navigates, navigates, comments, navigates, comments, finishes.
 * All the experiment's runs are one agent's, so the bench's usual count per handle cannot
 * tell them apart; they are counted per case and model instead (one run each per experiment).
 */
function sixSteps(notes: [string, string], calls: Map<string, number>) {
  return (_handle: string, _n: number, req: ChatRequest): FakeReply => {
    const text = req.messages.map((m) => m.content ?? "").join("\n");
    const key = `${/Bench case (\d+):/.exec(text)?.[1] ?? "?"}:${req.model}`;
    const n = (calls.get(key) ?? 0) + 1;
    calls.set(key, n);
    const comment = {
      name: "add_comment",
      args: { params: { text: "Lisbon gets my vote." }, reason: "the task asks for a view" },
    };
    switch (n) {
      case 1:
        return { tool: { name: "navigate", args: { path: "/studios/general/notes" } } };
      case 2:
        return { tool: { name: "navigate", args: { path: notes[0] } } };
      case 4:
        return { tool: { name: "navigate", args: { path: notes[1] } } };
      case 3:
      case 5:
        return { tool: comment };
      default:
        return { tool: { name: "finish", args: { message: "Commented on two notes." } } };
    }
  };
}

interface Timed {
  seconds: number;
  runs: number;
  statuses: string;
  steps: string;
  /** From the action's call: it returned; the last run claimed (ms). */
  queuedMs: number;
  lastClaimMs: number;
  /** Each run's own time, claimed to ended, p50 / max (ms). */
  runMs: [number, number];
  /** Per step, the LLM call as the worker timed it and the rest, p50 / p90 (ms). */
  llmMs: [number, number];
  restMs: [number, number];
  /** The rest's p50 by step number (ms). */
  restByStep: number[];
  /** CPU seconds: the worker, Postgres, the whole machine (of 2 × wall available). */
  cpu: { workers: number; postgres: number; machine: number };
}

/** Starts an experiment of the agent's cases and waits until every one of its runs ended. */
async function experiment(b: ExperimentBench, handle: string, parallel: number): Promise<Timed> {
  const cpu0 = await cpuSample(b.db, b.workerPids, b.redisPid);
  const t0 = Date.now();
  const started = await registry.run(
    b.ctx,
    `/subagents/${handle}/experiments`,
    "start_experiment",
    { try: "model", model: CANDIDATE, cost_cap_usd: 1000, parallel },
    { form: false },
  );
  const queuedMs = Date.now() - t0;
  const experimentId = String(started.location).split("/").pop()!;
  for (const end = Date.now() + 300_000; ; ) {
    const open = await b.db.subagentTaskRun.count({ where: { experimentId, status: { notIn: ENDED } } });
    if (!open) break;
    if (Date.now() > end) throw new Error(`experiment ${experimentId}: ${open} runs still open`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const used = cpuUsed(cpu0, await cpuSample(b.db, b.workerPids, b.redisPid));
  const runs = await b.db.subagentTaskRun.findMany({ where: { experimentId } });
  // Step 1's gap counts from the claim: the run's start is a step's rest too.
  const gaps = await b.db.$queryRaw<{ gap: number; llm: number; n: number }[]>`
    SELECT gap, llm, n FROM (
      SELECT (extract(epoch FROM s.created_at - coalesce(lag(s.created_at) OVER w, r.started_at)) * 1000)::int AS gap,
        s.llm_ms AS llm, s.number AS n
      FROM subagent_task_run_steps s JOIN subagent_task_runs r ON r.id = s.run_id
      WHERE r.experiment_id = ${experimentId} AND s.llm_ms > 0
      WINDOW w AS (PARTITION BY s.run_id ORDER BY s.number)) x
    WHERE gap IS NOT NULL`;
  const p2 = (v: number[]): [number, number] => [percentile(v, 50), percentile(v, 90)];
  // The end is the last run's own timestamp, not this loop's poll that saw it.
  const last = Math.max(...runs.map((r) => (r.completedAt ?? new Date(0)).getTime()));
  const count = (xs: (string | number)[]) =>
    [...new Set(xs)].map((x) => `${xs.filter((y) => y === x).length} ${x}`).join(", ");
  const runMs = runs.map(
    (r) => (r.completedAt ?? new Date(0)).getTime() - (r.startedAt ?? r.createdAt).getTime(),
  );
  return {
    seconds: (last - t0) / 1000,
    runs: runs.length,
    statuses: count(runs.map((r) => r.status)),
    steps: count(runs.map((r) => r.stepsCount)),
    queuedMs,
    lastClaimMs: Math.max(...runs.map((r) => (r.startedAt?.getTime() ?? t0) - t0)),
    runMs: [percentile(runMs, 50), Math.max(...runMs)],
    llmMs: p2(gaps.map((g) => g.llm)),
    restMs: p2(gaps.map((g) => g.gap - g.llm)),
    restByStep: [...new Set(gaps.map((g) => g.n))]
      .sort((x, y) => x - y)
      .map((n) =>
        percentile(
          gaps.filter((g) => g.n === n).map((g) => g.gap - g.llm),
          50,
        ),
      ),
    cpu: { workers: used.workers, postgres: used.postgres, machine: used.machine },
  };
}

/** ROUNDS rounds of T1 then T20 after one warm-up round of each; medians. */
export async function experimentPhase(b: ExperimentBench): Promise<[string, string][]> {
  const { ctx } = b;
  const note = (title: string) =>
    registry
      .run(ctx, "/studios/general", "create_note", { title, text: "Venues and budget." }, { form: false })
      .then((r) => String(r.location));
  const notes: [string, string] = [await note("Offsite venues"), await note("Offsite budget")];
  await agentWithCases(b, "exp-one", 1);
  await agentWithCases(b, "exp-twenty", 20);
  const calls = new Map<string, number>();
  const reply = sixSteps(notes, calls);
  b.walks.set("exp-one", reply);
  b.walks.set("exp-twenty", reply);
  b.llm.setLatency(b.latencyMs);
  const t1: Timed[] = [];
  const t20: Timed[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    calls.clear();
    const one = await experiment(b, "exp-one", 2);
    calls.clear();
    const twenty = await experiment(b, "exp-twenty", 40);
    const tag = round ? `round ${round}` : "warm-up";
    for (const [name, t] of [
      ["T1 ", one],
      ["T20", twenty],
    ] as const)
      console.log(
        `  experiment ${tag} ${name}: ${fmt(t.seconds, 2)} s; ${t.runs} runs (${t.statuses}; steps ${t.steps}); action ${t.queuedMs} ms, last claim +${t.lastClaimMs} ms, a run p50 / max ${t.runMs.join(" / ")} ms; a step's LLM call / rest p50, p90 ${t.llmMs.join(", ")} / ${t.restMs.join(", ")} ms (rest p50 by step ${t.restByStep.join(" ")}); CPU s worker ${fmt(t.cpu.workers, 2)}, Postgres ${fmt(t.cpu.postgres, 2)}, machine ${fmt(t.cpu.machine, 1)} of ${fmt(2 * t.seconds, 1)}`,
      );
    if (round) {
      t1.push(one);
      t20.push(twenty);
      console.log(`  experiment ${tag}: ratio ${fmt(twenty.seconds / one.seconds, 2)} ×`);
    }
  }
  b.walks.delete("exp-one");
  b.walks.delete("exp-twenty");
  const med = (ts: Timed[], f: (t: Timed) => number) => percentile(ts.map(f), 50);
  const T1 = med(t1, (t) => t.seconds);
  const T20 = med(t20, (t) => t.seconds);
  const ratios = t20.map((t, i) => t.seconds / t1[i]!.seconds);
  const line = `20 cases × 6 steps: T20 = ${fmt(T20, 2)} s, one case T1 = ${fmt(T1, 2)} s, ratio ${fmt(T20 / T1, 2)} × (target ≤ 1.5 ×)`;
  console.log(`experiment: ${line}`);
  return [
    [
      `experiment @${b.latencyMs} ms, one worker, medians of ${ROUNDS}: ${line.split(":")[0]}`,
      line.slice(line.indexOf(":") + 2),
    ],
    ["the same, each round's ratio T20 / T1", ratios.map((r) => `${fmt(r, 2)} ×`).join(" / ")],
    [
      "T20: action's call → last run claimed; a run claimed → ended p50 / max (ms), medians",
      [med(t20, (t) => t.lastClaimMs), med(t20, (t) => t.runMs[0]), med(t20, (t) => t.runMs[1])]
        .map((ms) => fmt(ms, 0))
        .join(" / ")
        .replace(" / ", "; "),
    ],
  ];
}
