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
function agentsWhere(f: UsageFilter): Prisma.Sql {
  if (f.kind === "owner") return Prisma.sql`AND a.parent_id = ${f.ownerId}`;
  if (f.kind === "studio") return Prisma.sql`AND a.owner_studio_id = ${f.studioId}`;
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
}

const dayKey = (date: Date) => date.toISOString().slice(0, 10);
const startOfDay = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
export const startOfMonth = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
/** The first moment of the dashboards' window: today and the DAYS - 1 UTC days before it. The CSV export uses it too. */
export const windowStart = (now: Date) => new Date(startOfDay(now).getTime() - (DAYS - 1) * 86_400_000);

type Sums = {
  calls: bigint;
  input: bigint | null;
  cached: bigint | null;
  output: bigint | null;
  cost: bigint | null;
};
const totals = (r: Sums | undefined): Totals => ({
  calls: Number(r?.calls ?? 0),
  input: Number(r?.input ?? 0),
  cached: Number(r?.cached ?? 0),
  output: Number(r?.output ?? 0),
  costMicros: Number(r?.cost ?? 0),
});
const SUMS = Prisma.sql`sum(u.calls) AS calls, sum(u.input_tokens) AS input, sum(u.cached_tokens) AS cached,
  sum(u.output_tokens) AS output, sum(u.cost_micros) AS cost`;

export async function loadUsage(db: PrismaClient, f: UsageFilter, now = new Date()): Promise<Usage> {
  const from = windowStart(now);
  const monthStart = startOfMonth(now);
  // One scan covers the chart's 30 days and the month so far, whichever starts first.
  const scanFrom = new Date(Math.min(monthStart.getTime(), from.getTime()));
  const w = usageWhere(f);
  const [daily, byModel, byKey, topRuns, agents] = await Promise.all([
    db.$queryRaw<(Sums & { day: Date })[]>`
      SELECT u.day, ${SUMS} FROM llm_usage_daily u
      WHERE ${w} AND u.day >= ${dayKey(scanFrom)}::date
      GROUP BY 1`,
    db.$queryRaw<(Sums & { model: string; unpriced: boolean })[]>`
      SELECT u.model, sum(u.unpriced_calls) > 0 AS unpriced, ${SUMS}
      FROM llm_usage_daily u WHERE ${w} AND u.day >= ${dayKey(from)}::date
      GROUP BY u.model ORDER BY cost DESC NULLS LAST, calls DESC`,
    db.$queryRaw<
      (Sums & { key_id: string; label: string | null; hint: string | null; revoked: boolean | null })[]
    >`
      SELECT s.*, k.label, k.key_hint AS hint, k.revoked_at IS NOT NULL AS revoked
      FROM (SELECT u.key_ref AS key_id, ${SUMS} FROM llm_usage_daily u
            WHERE ${w} AND u.day >= ${dayKey(from)}::date GROUP BY u.key_ref) s
      LEFT JOIN agent_api_keys k ON k.id = s.key_id
      ORDER BY s.cost DESC NULLS LAST, s.calls DESC`,
    // Runs carry their own totals (moved with the ledger): the costliest started in the window.
    db.$queryRaw<
      {
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
      }[]
    >`
      SELECT r.id, r.steps_count AS steps, r.input_tokens::bigint + r.output_tokens AS tokens, r.cost_micros AS cost,
             r.agent_id, a.handle, r.task, r.trigger_kind, coalesce(r.trigger_ref, r.trigger_event_id) AS trigger_id,
             r.label, r.status::text AS status, r.created_at
      FROM subagent_task_runs r JOIN users a ON a.id = r.agent_id
      WHERE r.tenant_id = ${f.tenantId} AND r.created_at >= ${from} AND r.cost_micros > 0
        ${f.kind === "agent" ? Prisma.sql`AND r.agent_id = ${f.agentId}` : Prisma.empty}
        ${agentsWhere(f)}
      ORDER BY r.cost_micros DESC, r.id LIMIT 10`,
    f.kind === "agent"
      ? Promise.resolve([])
      : db.$queryRaw<
          {
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
          }[]
        >`
          SELECT a.id, a.handle, a.name, coalesce('@' || o.handle, os.name) AS owner, a.agent_config, a.paused_at, a.paused_kind,
                 m.calls, m.input_tokens + m.output_tokens AS tokens, m.cost_micros AS cost
          FROM users a
          LEFT JOIN users o ON o.id = a.parent_id LEFT JOIN studios os ON os.id = a.owner_studio_id
          LEFT JOIN agent_usage_months m ON m.agent_id = a.id AND m.month = ${now.toISOString().slice(0, 7)}
          WHERE a.tenant_id = ${f.tenantId} AND a.kind = 'subagent'
            ${agentsWhere(f)}
          ORDER BY m.cost_micros DESC NULLS LAST, a.handle`,
  ]);

  const byDay = new Map(daily.map((r) => [dayKey(r.day), totals(r)]));
  const days: Day[] = [];
  for (let index = 0; index < DAYS; index++) {
    const d = dayKey(new Date(from.getTime() + index * 86_400_000));
    days.push({ day: d, ...(byDay.get(d) ?? totals(undefined)) });
  }
  const sum = (rows: Totals[]): Totals =>
    rows.reduce(
      (a, r) => ({
        calls: a.calls + r.calls,
        input: a.input + r.input,
        cached: a.cached + r.cached,
        output: a.output + r.output,
        costMicros: a.costMicros + r.costMicros,
      }),
      totals(undefined),
    );
  const monthKey = dayKey(monthStart);
  return {
    from,
    now,
    monthStart,
    days,
    month: sum([...byDay].filter(([d]) => d >= monthKey).map(([, t]) => t)),
    last30: sum(days),
    byModel: byModel.map((r) => ({ key: r.model, label: r.model, unpriced: r.unpriced, ...totals(r) })),
    byKey: byKey.map((r) => ({
      key: r.key_id,
      label: r.label ? `${r.label} (…${r.hint})${r.revoked ? " — revoked" : ""}` : "shared endpoint",
      ...totals(r),
    })),
    topRuns: topRuns.map((r) => ({
      runId: r.id,
      agentId: r.agent_id,
      agentHandle: r.handle,
      task: r.task,
      triggerKind: r.trigger_kind,
      triggerId: r.trigger_id,
      label: r.label,
      status: r.status,
      createdAt: r.created_at,
      steps: r.steps,
      tokens: Number(r.tokens),
      costMicros: Number(r.cost),
    })),
    agents: agents.map((a) => ({
      agentId: a.id,
      handle: a.handle,
      name: a.name,
      owner: a.owner,
      agentConfig: a.agent_config,
      pausedAt: a.paused_at,
      pausedKind: a.paused_kind,
      costMicros: Number(a.cost ?? 0),
      calls: Number(a.calls ?? 0),
      tokens: Number(a.tokens ?? 0),
    })),
  };
}

/** Month-end spend at this month's pace so far. */
export function projectMonth(spentMicros: number, now: Date): number {
  const start = startOfMonth(now).getTime();
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  const elapsed = Math.max(now.getTime() - start, 3_600_000);
  return Math.round((spentMicros * (end - start)) / elapsed);
}
