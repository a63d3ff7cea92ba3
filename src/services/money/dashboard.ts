// Usage dashboards, aggregated by SQL from the ledger's daily rollup (llm_usage_daily:
// one row per agent, day, model and key), so a month is a few hundred rows to sum however
// many calls the tenant made. The CSV export reads the ledger itself.
import type { PrismaClient } from "../../db/prisma.ts";
import { Prisma } from "../../generated/prisma/client.ts";

export const DAYS = 30;

export type UsageFilter =
  | { kind: "agent"; tenantId: string; agentId: string }
  | { kind: "owner"; tenantId: string; ownerId: string }
  /** The agents a studio owns now (whoever owned them when they spent). */
  | { kind: "studio"; tenantId: string; studioId: string }
  | { kind: "tenant"; tenantId: string };

/** The filter on a usage table aliased `u` (the ledger or its daily rollup: same columns). */
export function usageWhere(usageFilter: UsageFilter): Prisma.Sql {
  if (usageFilter.kind === "agent")
    return Prisma.sql`u.tenant_id = ${usageFilter.tenantId} AND u.agent_id = ${usageFilter.agentId}`;
  if (usageFilter.kind === "owner")
    return Prisma.sql`u.tenant_id = ${usageFilter.tenantId} AND u.owner_id = ${usageFilter.ownerId}`;
  if (usageFilter.kind === "studio")
    return Prisma.sql`u.tenant_id = ${usageFilter.tenantId} AND u.agent_id IN (
      SELECT id FROM users WHERE tenant_id = ${usageFilter.tenantId} AND owner_studio_id = ${usageFilter.studioId})`;
  return Prisma.sql`u.tenant_id = ${usageFilter.tenantId}`;
}

/** The filter's agents, on an agent row aliased `a` (an empty condition for a whole tenant). */
function agentsWhere(filter: UsageFilter): Prisma.Sql {
  if (filter.kind === "owner") return Prisma.sql`AND a.parent_id = ${filter.ownerId}`;
  if (filter.kind === "studio") return Prisma.sql`AND a.owner_studio_id = ${filter.studioId}`;
  return Prisma.empty;
}

export interface Totals {
  calls: number;
  input: number;
  cached: number;
  output: number;
  costMicros: number;
}

export interface Day extends Totals {
  day: string;
}

export interface Slice extends Totals {
  key: string;
  label: string;
  /** A model in no price list: its cost shows as zero. */
  unpriced?: boolean;
}

export interface TopRun {
  runId: string;
  agentId: string;
  agentHandle: string;
  task: string;
  /** What woke it (`mention`, `schedule`…) and the trigger's id: what a reader outside its label sees instead of its task. */
  triggerKind: string;
  triggerId: string | null;
  /** Who could read what it took in (agents/policy/labels.ts): who may read its task. */
  label: unknown;
  status: string;
  createdAt: Date;
  steps: number;
  tokens: number;
  costMicros: number;
}

export interface AgentMonth {
  agentId: string;
  handle: string;
  name: string;
  /** Who owns it, as the dashboard names it: `@alice`, or the studio's name. */
  owner: string | null;
  agentConfig: unknown;
  pausedAt: Date | null;
  pausedKind: string | null;
  costMicros: number;
  calls: number;
  tokens: number;
}

export interface Usage {
  from: Date;
  now: Date;
  monthStart: Date;
  days: Day[];
  month: Totals;
  last30: Totals;
  byModel: Slice[];
  byKey: Slice[];
  topRuns: TopRun[];
  agents: AgentMonth[];
  /** Dry runs started in the window (docs/testing-agents.md): spend on trying an agent, not on its work. */
  evaluation: Evaluation;
}

export interface Evaluation {
  runs: number;
  tokens: number;
  costMicros: number;
  /** Of them, rubric grades: their grader's calls (agents/runtime/rubric-grader.ts). */
  grades: number;
  gradingMicros: number;
}

const dayKey = (date: Date) => date.toISOString().slice(0, 10);
const startOfDay = (date: Date) =>
  new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
export const startOfMonth = (date: Date) => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));
/** The first moment of the dashboards' window: today and the DAYS - 1 UTC days before it. The CSV export uses it too. */
export const windowStart = (now: Date) => new Date(startOfDay(now).getTime() - (DAYS - 1) * 86_400_000);

type Sums = {
  calls: bigint;
  input: bigint | null;
  cached: bigint | null;
  output: bigint | null;
  cost: bigint | null;
};
const totals = (row: Sums | undefined): Totals => ({
  calls: Number(row?.calls ?? 0),
  input: Number(row?.input ?? 0),
  cached: Number(row?.cached ?? 0),
  output: Number(row?.output ?? 0),
  costMicros: Number(row?.cost ?? 0),
});
const SUMS = Prisma.sql`sum(u.calls) AS calls, sum(u.input_tokens) AS input, sum(u.cached_tokens) AS cached,
  sum(u.output_tokens) AS output, sum(u.cost_micros) AS cost`;

const sumTotals = (rows: Totals[]): Totals =>
  rows.reduce(
    (sum, row) => ({
      calls: sum.calls + row.calls,
      input: sum.input + row.input,
      cached: sum.cached + row.cached,
      output: sum.output + row.output,
      costMicros: sum.costMicros + row.costMicros,
    }),
    totals(undefined),
  );

/** Each day's totals since `scanFrom`, by `YYYY-MM-DD` (days without calls are absent). */
async function dailyTotals(
  db: PrismaClient,
  filter: UsageFilter,
  scanFrom: Date,
): Promise<Map<string, Totals>> {
  const rows = await db.$queryRaw<(Sums & { day: Date })[]>`
    SELECT u.day, ${SUMS} FROM llm_usage_daily u
    WHERE ${usageWhere(filter)} AND u.day >= ${dayKey(scanFrom)}::date
    GROUP BY 1`;
  return new Map(rows.map((row) => [dayKey(row.day), totals(row)]));
}

/** The window's DAYS days in order, a day without calls as zeros. */
function windowDays(byDay: Map<string, Totals>, from: Date): Day[] {
  const days: Day[] = [];
  for (let index = 0; index < DAYS; index++) {
    const day = dayKey(new Date(from.getTime() + index * 86_400_000));
    days.push({ day, ...(byDay.get(day) ?? totals(undefined)) });
  }
  return days;
}

async function modelSlices(db: PrismaClient, filter: UsageFilter, from: Date): Promise<Slice[]> {
  const rows = await db.$queryRaw<(Sums & { model: string; unpriced: boolean })[]>`
    SELECT u.model, sum(u.unpriced_calls) > 0 AS unpriced, ${SUMS}
    FROM llm_usage_daily u WHERE ${usageWhere(filter)} AND u.day >= ${dayKey(from)}::date
    GROUP BY u.model ORDER BY cost DESC NULLS LAST, calls DESC`;
  return rows.map((row) => ({ key: row.model, label: row.model, unpriced: row.unpriced, ...totals(row) }));
}

async function keySlices(db: PrismaClient, filter: UsageFilter, from: Date): Promise<Slice[]> {
  const rows = await db.$queryRaw<
    (Sums & { key_id: string; label: string | null; hint: string | null; revoked: boolean | null })[]
  >`
    SELECT s.*, k.label, k.key_hint AS hint, k.revoked_at IS NOT NULL AS revoked
    FROM (SELECT u.key_ref AS key_id, ${SUMS} FROM llm_usage_daily u
          WHERE ${usageWhere(filter)} AND u.day >= ${dayKey(from)}::date GROUP BY u.key_ref) s
    LEFT JOIN agent_api_keys k ON k.id = s.key_id
    ORDER BY s.cost DESC NULLS LAST, s.calls DESC`;
  return rows.map((row) => ({
    key: row.key_id,
    label: row.label ? `${row.label} (…${row.hint})${row.revoked ? " — revoked" : ""}` : "shared endpoint",
    ...totals(row),
  }));
}

type RunRow = {
  id: string;
  steps: number;
  tokens: bigint;
  cost: bigint;
  agent_id: string;
  handle: string;
  task: string;
  trigger_kind: string;
  trigger_id: string | null;
  label: unknown;
  status: string;
  created_at: Date;
};

/** Runs carry their own totals (moved with the ledger): the costliest started in the window. */
async function costliestRuns(db: PrismaClient, filter: UsageFilter, from: Date): Promise<TopRun[]> {
  const rows = await db.$queryRaw<RunRow[]>`
    SELECT r.id, r.steps_count AS steps, r.input_tokens::bigint + r.output_tokens AS tokens, r.cost_micros AS cost,
           r.agent_id, a.handle, r.task, r.trigger_kind, coalesce(r.trigger_ref, r.trigger_event_id) AS trigger_id,
           r.label, r.status::text AS status, r.created_at
    FROM subagent_task_runs r JOIN users a ON a.id = r.agent_id
    WHERE r.tenant_id = ${filter.tenantId} AND r.created_at >= ${from} AND r.cost_micros > 0
      ${filter.kind === "agent" ? Prisma.sql`AND r.agent_id = ${filter.agentId}` : Prisma.empty}
      ${agentsWhere(filter)}
    ORDER BY r.cost_micros DESC, r.id LIMIT 10`;
  return rows.map((row) => ({
    runId: row.id,
    agentId: row.agent_id,
    agentHandle: row.handle,
    task: row.task,
    triggerKind: row.trigger_kind,
    triggerId: row.trigger_id,
    label: row.label,
    status: row.status,
    createdAt: row.created_at,
    steps: row.steps,
    tokens: Number(row.tokens),
    costMicros: Number(row.cost),
  }));
}

/** The window's dry runs, by the totals each run carries (a partial index holds only them). */
async function evaluationSpend(db: PrismaClient, filter: UsageFilter, from: Date): Promise<Evaluation> {
  const agent = filter.kind === "agent" ? Prisma.sql`AND r.agent_id = ${filter.agentId}` : Prisma.empty;
  const [[row], [graded]] = await Promise.all([
    db.$queryRaw<{ runs: bigint; tokens: bigint | null; cost: bigint | null }[]>`
    SELECT count(*) AS runs, sum(r.input_tokens::bigint + r.output_tokens) AS tokens, sum(r.cost_micros) AS cost
    FROM subagent_task_runs r JOIN users a ON a.id = r.agent_id
    WHERE r.tenant_id = ${filter.tenantId} AND r.dry AND r.created_at >= ${from}
      ${agent} ${agentsWhere(filter)}`,
    // A grade's call is charged when it is made: counted in the window it was made in.
    db.$queryRaw<{ grades: bigint; tokens: bigint | null; cost: bigint | null }[]>`
    SELECT count(*) AS grades, sum(r.input_tokens::bigint + r.output_tokens) AS tokens, sum(r.cost_micros) AS cost
    FROM agent_rubric_grades r JOIN users a ON a.id = r.agent_id
    WHERE r.tenant_id = ${filter.tenantId} AND r.cost_micros > 0 AND r.claimed_at >= ${from}
      ${agent} ${agentsWhere(filter)}`,
  ]);
  const gradingMicros = Number(graded?.cost ?? 0);
  return {
    runs: Number(row?.runs ?? 0),
    tokens: Number(row?.tokens ?? 0) + Number(graded?.tokens ?? 0),
    costMicros: Number(row?.cost ?? 0) + gradingMicros,
    grades: Number(graded?.grades ?? 0),
    gradingMicros,
  };
}

type AgentRow = {
  id: string;
  handle: string;
  name: string;
  owner: string | null;
  agent_config: unknown;
  paused_at: Date | null;
  paused_kind: string | null;
  calls: number | null;
  tokens: bigint | null;
  cost: bigint | null;
};

/** The filter's agents with this month's spend, costliest first (a whole tenant's, or an owner's or studio's). */
async function agentMonths(db: PrismaClient, filter: UsageFilter, now: Date): Promise<AgentMonth[]> {
  const rows = await db.$queryRaw<AgentRow[]>`
    SELECT a.id, a.handle, a.name, coalesce('@' || o.handle, os.name) AS owner, a.agent_config, a.paused_at, a.paused_kind,
           m.calls, m.input_tokens + m.output_tokens AS tokens, m.cost_micros AS cost
    FROM users a
    LEFT JOIN users o ON o.id = a.parent_id LEFT JOIN studios os ON os.id = a.owner_studio_id
    LEFT JOIN agent_usage_months m ON m.agent_id = a.id AND m.month = ${now.toISOString().slice(0, 7)}
    WHERE a.tenant_id = ${filter.tenantId} AND a.kind = 'subagent'
      ${agentsWhere(filter)}
    ORDER BY m.cost_micros DESC NULLS LAST, a.handle`;
  return rows.map((row) => ({
    agentId: row.id,
    handle: row.handle,
    name: row.name,
    owner: row.owner,
    agentConfig: row.agent_config,
    pausedAt: row.paused_at,
    pausedKind: row.paused_kind,
    costMicros: Number(row.cost ?? 0),
    calls: Number(row.calls ?? 0),
    tokens: Number(row.tokens ?? 0),
  }));
}

export async function loadUsage(db: PrismaClient, filter: UsageFilter, now = new Date()): Promise<Usage> {
  const from = windowStart(now);
  const monthStart = startOfMonth(now);
  // One scan covers the chart's 30 days and the month so far, whichever starts first.
  const scanFrom = new Date(Math.min(monthStart.getTime(), from.getTime()));
  const [byDay, byModel, byKey, topRuns, agents, evaluation] = await Promise.all([
    dailyTotals(db, filter, scanFrom),
    modelSlices(db, filter, from),
    keySlices(db, filter, from),
    costliestRuns(db, filter, from),
    // An agent's own dashboard has no list of agents.
    filter.kind === "agent" ? Promise.resolve([]) : agentMonths(db, filter, now),
    evaluationSpend(db, filter, from),
  ]);
  const monthKey = dayKey(monthStart);
  const days = windowDays(byDay, from);
  return {
    from,
    now,
    monthStart,
    days,
    month: sumTotals([...byDay].filter(([day]) => day >= monthKey).map(([, dayTotals]) => dayTotals)),
    last30: sumTotals(days),
    byModel,
    byKey,
    topRuns,
    agents,
    evaluation,
  };
}

/** Month-end spend at this month's pace so far. */
export function projectMonth(spentMicros: number, now: Date): number {
  const start = startOfMonth(now).getTime();
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  const elapsed = Math.max(now.getTime() - start, 3_600_000);
  return Math.round((spentMicros * (end - start)) / elapsed);
}
