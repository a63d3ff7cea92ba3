// The usage ledger: one row per LLM call, and every total that derives from it (the run,
// the key, the agent's month, the daily rollup the dashboards read) moved by the same SQL
// statement, so a total is always the sum of its rows. The month row's lock orders
// concurrent calls of one agent: each call sees the total before and after itself, so a
// threshold is crossed by exactly one call, and the call that reaches the limit pauses
// the agent in that same statement.
import { batchRows, grouped } from "../../db/group-commit.ts";
import { type Db, hotQuery, type PrismaClient } from "../../db/prisma.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import { bounded, llmCost, llmTokens } from "../../metrics/metrics.ts";
import {
  type AgentConfig,
  DEFAULT_ALERT_THRESHOLDS_USD,
  DEFAULT_COST_LIMIT_USD,
  MAX_COST_LIMIT_USD,
  sharedAgentConfig,
  storedAgentConfig,
} from "../agents/core/settings.ts";
import { STEP_COLUMNS, type StepRecord, stepColumns, stepGateSql, steppedSql } from "../agents/core/steps.ts";
import { emitEvent } from "../events.ts";
import { type Priced, type Usage, usd } from "./pricing.ts";

/** Calendar month in UTC, `2026-11`: the period limits and thresholds apply to. */
export const monthOf = (date: Date) => date.toISOString().slice(0, 7);

export const toMicros = (dollars: number) => BigInt(Math.round(dollars * 1e6));

export interface UsageEntry {
  tenantId: string;
  agentId: string;
  ownerId: string | null;
  runId: string | null;
  stepNumber: number;
  apiKeyId: string | null;
  model: string;
  usage: Usage;
  latencyMs: number;
  price: Priced;
}

export interface Recorded {
  monthMicros: bigint;
  crossed: number;
  paused: boolean;
  /** The budget as this call left it: what the check before the agent's next call needs. */
  budget: Budget;
  /** With a step: whether it was recorded (false: this worker lost the run's lease). */
  stepped: boolean;
}

export const limitReason = (limitUsd: number) =>
  `reached its monthly cost limit of ${usd(toMicros(limitUsd))}`;

const MAX_THRESHOLDS = 10;

interface UsageItem {
  entry: UsageEntry;
  calledAt: Date;
  step?: { owner: string | null; record: StepRecord };
}

// A worker's calls go out in groups (db/group-commit.ts); a transaction's, as it makes
// them. An agent's calls never share a statement: each must see the total the one
// before it left, and one statement cannot upsert its month twice.
const writeCall = grouped<UsageItem, Recorded>({
  write: writeUsage,
  key: (usageItem) => usageItem.entry.agentId,
});

/**
 * Writes one call's ledger row and moves every total. The agent's limit and alerts are
 * read from its row inside the statement, as they are when the call is recorded, not as
 * they were before a call that may have taken minutes: an owner who raised the limit
 * meanwhile is not paused at the old one, and a new alert this call crosses fires. The
 * pause re-checks the limit on the row it locks, so a concurrent set_cost_limit is seen.
 */
export async function recordUsage(
  db: Db,
  usageEntry: UsageEntry,
  calledAt = new Date(),
  step?: { owner: string | null; record: StepRecord },
): Promise<Recorded> {
  const recorded = await writeCall(db, { entry: usageEntry, calledAt, step });
  countCharged(usageEntry);
  return recorded;
}

/** A batch's calls as the statement's input rows (`jsonb_to_recordset`). */
function usageInput(items: UsageItem[]) {
  return items.map(({ entry, calledAt, step }, index) => ({
    i: index,
    ledger_id: newId(),
    tenant_id: entry.tenantId,
    agent_id: entry.agentId,
    owner_id: entry.ownerId,
    run_id: entry.runId,
    call_step: entry.stepNumber,
    api_key_id: entry.apiKeyId,
    model: entry.model,
    pricing_version: entry.price.version,
    priced: entry.price.priced,
    input_tokens: entry.usage.input,
    cached_tokens: entry.usage.cached,
    cache_write_tokens: entry.usage.cacheWrite ?? 0,
    output_tokens: entry.usage.output,
    cost_micros: String(entry.price.costMicros),
    latency_ms: Math.round(entry.latencyMs),
    at: calledAt.toISOString(),
    month: monthOf(calledAt),
    event_ids: Array.from({ length: MAX_THRESHOLDS + 1 }, () => newId()),
    ...stepColumns(step?.owner ?? null, step?.record),
  }));
}

const DEFAULT_LIMIT = JSON.stringify(DEFAULT_COST_LIMIT_USD);
const DEFAULT_ALERTS = JSON.stringify(DEFAULT_ALERT_THRESHOLDS_USD);
// The limit in micro-dollars, from a config that may lack it (its default applies).
const LIMIT_SQL = Prisma.sql`(round((CASE WHEN jsonb_typeof(users.agent_config -> 'cost_limit_usd') = 'number'
    THEN users.agent_config -> 'cost_limit_usd' ELSE ${DEFAULT_LIMIT}::jsonb END)::text::numeric * 1000000))::bigint`;
// The dashboards' rollups (daily, monthly, per key) sum these; cache writes are kept on the
// call's row and its run's only (what the run page shows), their cost is in cost_micros everywhere.
const SUMS = Prisma.raw(["input_tokens", "cached_tokens", "output_tokens", "cost_micros"].join(", "));

/** What every call moves: the ledger row, the step's gate, the run's totals, its key's, the day's and the month's. */
const TOTALS_SQL = Prisma.sql`
    ledger AS (
      INSERT INTO llm_usage (id, tenant_id, agent_id, owner_id, run_id, step_number, api_key_id, model,
        pricing_version, priced, ${SUMS}, cache_write_tokens, latency_ms, created_at)
      SELECT ledger_id, tenant_id, agent_id, owner_id, run_id, call_step, api_key_id, model, pricing_version,
        priced, ${SUMS}, cache_write_tokens, latency_ms, at
      FROM input
      RETURNING id
    ), ${stepGateSql}, run AS (
      -- The run's totals move with each call; its step counter only with a step that may be
      -- recorded (one statement changes a row once). A run with no model yet takes the one
      -- its calls ran on (resolved from a default), so the run page names it.
      UPDATE subagent_task_runs r
      SET input_tokens = r.input_tokens + input.input_tokens, cached_tokens = r.cached_tokens + input.cached_tokens,
          cache_write_tokens = r.cache_write_tokens + input.cache_write_tokens,
          output_tokens = r.output_tokens + input.output_tokens, cost_micros = r.cost_micros + input.cost_micros,
          model = COALESCE(r.model, input.model),
          steps_count = CASE WHEN cur.advance THEN input.step_number ELSE r.steps_count END
      FROM cur JOIN input ON input.i = cur.i
      WHERE r.id = cur.id
      RETURNING r.id
    ), keys AS (
      SELECT k.id FROM agent_api_keys k WHERE k.id IN (SELECT api_key_id FROM input) ORDER BY k.id FOR UPDATE
    ), api_key AS (
      UPDATE agent_api_keys k
      SET total_calls = k.total_calls + t.calls, total_input_tokens = k.total_input_tokens + t.input_tokens,
          total_cached_tokens = k.total_cached_tokens + t.cached_tokens,
          total_output_tokens = k.total_output_tokens + t.output_tokens,
          total_cost_micros = k.total_cost_micros + t.cost_micros, last_used_at = t.at
      FROM keys JOIN (
        SELECT api_key_id, count(*)::int AS calls, sum(input_tokens) AS input_tokens, sum(cached_tokens) AS cached_tokens,
          sum(output_tokens) AS output_tokens, sum(cost_micros) AS cost_micros, max(at) AS at
        FROM input GROUP BY api_key_id) t ON t.api_key_id = keys.id
      WHERE k.id = keys.id
      RETURNING k.id
    ), daily AS (
      INSERT INTO llm_usage_daily AS d (agent_id, day, model, key_ref, tenant_id, owner_id, calls, unpriced_calls, ${SUMS})
      SELECT agent_id, at::date, model, COALESCE(api_key_id, 'shared'), tenant_id, owner_id, 1,
        CASE WHEN priced THEN 0 ELSE 1 END, ${SUMS}
      FROM input ORDER BY agent_id
      ON CONFLICT (agent_id, day, model, key_ref) DO UPDATE
      SET calls = d.calls + 1, unpriced_calls = d.unpriced_calls + EXCLUDED.unpriced_calls,
          input_tokens = d.input_tokens + EXCLUDED.input_tokens,
          cached_tokens = d.cached_tokens + EXCLUDED.cached_tokens,
          output_tokens = d.output_tokens + EXCLUDED.output_tokens,
          cost_micros = d.cost_micros + EXCLUDED.cost_micros
      RETURNING 1
    ), month AS (
      INSERT INTO agent_usage_months AS m (agent_id, month, tenant_id, calls, ${SUMS})
      SELECT agent_id, month, tenant_id, 1, ${SUMS} FROM input ORDER BY agent_id
      ON CONFLICT (agent_id, month) DO UPDATE
      SET calls = m.calls + 1, input_tokens = m.input_tokens + EXCLUDED.input_tokens,
          cached_tokens = m.cached_tokens + EXCLUDED.cached_tokens,
          output_tokens = m.output_tokens + EXCLUDED.output_tokens,
          cost_micros = m.cost_micros + EXCLUDED.cost_micros
      RETURNING agent_id, cost_micros
    )`;

/** What the month's new total crosses: spend alerts (an event each) and the limit (the agent paused, and an event). */
const LIMITS_SQL = Prisma.sql`
    config AS (
      SELECT input.i, input.agent_id, input.cost_micros AS call_micros, ${LIMIT_SQL} AS limit_micros,
        users.agent_config, COALESCE(users.agent_config -> 'alert_thresholds_usd', ${DEFAULT_ALERTS}::jsonb) AS alerts
      FROM input JOIN users ON users.id = input.agent_id
    ), crossed AS (
      -- Each call crosses the thresholds between the total before it and after it. An
      -- amount past any possible limit (a hand-edited config) can never alert and must
      -- not overflow bigint: skipped. Two relations joined, not three: with input too, the
      -- planner looped over the batch once per call (6 of 11 ms for a batch of 64).
      SELECT config.i, (round(t.usd * 1000000))::bigint AS threshold, t.ord
      FROM config JOIN month ON month.agent_id = config.agent_id,
        LATERAL (SELECT a.value::text::numeric AS usd, a.ord FROM jsonb_array_elements(
          CASE WHEN jsonb_typeof(config.alerts) = 'array' THEN config.alerts ELSE '[]'::jsonb END
        ) WITH ORDINALITY AS a(value, ord) WHERE jsonb_typeof(a.value) = 'number') t
      WHERE t.ord <= ${MAX_THRESHOLDS} AND t.usd > 0 AND t.usd <= ${MAX_COST_LIMIT_USD}
        AND round(t.usd * 1000000) > month.cost_micros - config.call_micros
        AND round(t.usd * 1000000) <= month.cost_micros
    ), paused AS (
      UPDATE users SET paused_at = input.at, paused_kind = 'cost_limit',
        paused_reason = 'reached its monthly cost limit of $' || to_char(${LIMIT_SQL} / 1000000.0, 'FM999999990.00')
      FROM input JOIN month ON month.agent_id = input.agent_id
      WHERE users.id = input.agent_id AND users.paused_at IS NULL AND month.cost_micros >= ${LIMIT_SQL}
      RETURNING users.id AS agent_id
    ), notices AS (
      INSERT INTO events (id, tenant_id, type, actor_id, subject_type, subject_id, payload, run_id)
      SELECT input.event_ids[c.ord], input.tenant_id, 'usage.threshold', input.agent_id, 'user', input.agent_id,
        jsonb_build_object('threshold_micros', c.threshold, 'spent_micros', month.cost_micros,
          'limit_micros', config.limit_micros, 'month', input.month),
        input.run_id
      FROM crossed c JOIN input ON input.i = c.i JOIN month ON month.agent_id = input.agent_id
        JOIN config ON config.i = input.i
      UNION ALL
      SELECT input.event_ids[${MAX_THRESHOLDS + 1}], input.tenant_id, 'agent.paused', input.agent_id, 'user',
        input.agent_id, jsonb_build_object('reason', 'cost_limit', 'spent_micros', month.cost_micros,
          'limit_micros', config.limit_micros, 'month', input.month),
        input.run_id
      FROM paused p JOIN input ON input.agent_id = p.agent_id JOIN month ON month.agent_id = input.agent_id
        JOIN config ON config.i = input.i
      RETURNING id
    )`;

/**
 * Calls of distinct agents in one statement, each as if alone. Rows that lock the same
 * table are taken in one order (runs by id, months and days by agent, keys by id), the
 * order other batches take them in, so concurrent batches never deadlock.
 */
async function writeUsage(db: Db, items: UsageItem[]): Promise<Recorded[]> {
  const input = usageInput(items);
  const rows = await hotQuery<BudgetRow & { i: number; crossed: number; paused: boolean; stepped: boolean }>(
    db,
    Prisma.sql`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS x(i int, ledger_id text,
        tenant_id text, agent_id text, owner_id text, run_id text, call_step int, api_key_id text, model text,
        pricing_version text, priced boolean, input_tokens int, cached_tokens int, cache_write_tokens int, output_tokens int,
        cost_micros bigint, latency_ms int, at timestamp, month text, event_ids text[], ${STEP_COLUMNS}) ${batchRows(input.length)}
    ), ${TOTALS_SQL}, ${LIMITS_SQL}
    SELECT input.i, month.cost_micros AS spent, config.agent_config::text AS agent_config,
      ${keyGoneSql(Prisma.sql`input.api_key_id`)} AS key_gone, ${agentsOffSql(Prisma.sql`input.tenant_id`)} AS agents_off,
      (SELECT count(*) FROM crossed c WHERE c.i = input.i)::int AS crossed,
      EXISTS (SELECT 1 FROM paused p WHERE p.agent_id = input.agent_id) AS paused,
      ${steppedSql} AS stepped
    FROM input JOIN month ON month.agent_id = input.agent_id LEFT JOIN config ON config.i = input.i`,
    { groupCommit: true },
  );
  const byItem = new Map(rows.map((r) => [Number(r.i), r]));
  return items.map((_, index) => {
    const row = byItem.get(index)!;
    const budget = budgetOf(row);
    return {
      monthMicros: budget.spentMicros,
      crossed: Number(row.crossed),
      paused: row.paused,
      budget,
      stepped: row.stepped,
    };
  });
}

/** The agent's spend so far this (UTC) month, in micro-dollars. */
export async function spentThisMonth(db: Db, agentId: string, now = new Date()): Promise<bigint> {
  const usageMonth = await db.agentUsageMonth.findUnique({
    where: { agentId_month: { agentId, month: monthOf(now) } },
  });
  return usageMonth?.costMicros ?? 0n;
}

export interface Budget {
  cfg: AgentConfig;
  /** The agent's configuration as stored, read with the budget. */
  agentConfig: Prisma.JsonValue;
  spentMicros: bigint;
  limitMicros: bigint;
  /** The run's own API key was revoked (or deleted) since the run started. */
  keyGone: boolean;
  /** The workspace's agents were switched off (agents/core/kill-switch.ts): the run stops at its next step. */
  agentsOff: boolean;
}

interface BudgetRow {
  /** As text: one object per distinct configuration (settings.ts storedAgentConfig). */
  agent_config: string | null;
  /** int8: a bigint through Prisma, a string through pg (hotQuery). */
  spent: bigint | string | null;
  key_gone: boolean;
  agents_off?: boolean | null;
}

/** The tenant (an expression naming its id) has its agents switched off: read with every recorded call, no round trip of its own. */
const agentsOffSql = (
  tenantId: Prisma.Sql,
) => Prisma.sql`coalesce((SELECT t.settings -> 'agents_enabled' = 'false'::jsonb
  FROM tenants t WHERE t.id = ${tenantId}), false)`;

/** The run's own API key (an expression naming its id, or null) was revoked or deleted. */
const keyGoneSql = (keyId: Prisma.Sql) => Prisma.sql`(${keyId} IS NOT NULL AND NOT EXISTS (
  SELECT 1 FROM agent_api_keys k WHERE k.id = ${keyId} AND k.revoked_at IS NULL))`;

const budgetOf = (row: BudgetRow | undefined): Budget =>
  budgetWith(storedAgentConfig(row?.agent_config ?? null), row);

function budgetWith(raw: Prisma.JsonValue, row: Omit<BudgetRow, "agent_config"> | undefined): Budget {
  const cfg = sharedAgentConfig(raw);
  return {
    cfg,
    agentConfig: raw,
    spentMicros: BigInt(row?.spent ?? 0),
    limitMicros: toMicros(cfg.cost_limit_usd),
    keyGone: Boolean(row?.key_gone),
    agentsOff: Boolean(row?.agents_off),
  };
}

/**
 * The budget a claimed run starts with, from its agent's configuration and month's spend
 * as the claim read them (agents/run-start.ts). Its key was checked as the run resolved
 * its endpoint, after the claim.
 */
export const budgetAtStart = (
  agentConfig: Prisma.JsonValue,
  spentMicros: bigint,
  agentsOff = false,
): Budget => budgetWith(agentConfig ?? {}, { spent: spentMicros, key_gone: false, agents_off: agentsOff });

/**
 * The agent's configuration, month-to-date spend and its key's state, read together
 * before a run's first LLM call; each recorded call returns them as it leaves them.
 */
export async function readBudget(
  db: Db,
  agentId: string,
  keyId: string | null = null,
  now = new Date(),
): Promise<Budget> {
  const [row] = await hotQuery<BudgetRow>(
    db,
    Prisma.sql`
    SELECT u.agent_config::text AS agent_config, m.cost_micros AS spent, ${keyGoneSql(Prisma.sql`${keyId}::text`)} AS key_gone,
      ${agentsOffSql(Prisma.sql`u.tenant_id`)} AS agents_off
    FROM users u LEFT JOIN agent_usage_months m ON m.agent_id = u.id AND m.month = ${monthOf(now)}
    WHERE u.id = ${agentId}`,
  );
  return budgetOf(row);
}

/** Pauses an agent found at its limit (a lowered limit, or another run's last call); idempotent. */
export async function pauseAtLimit(
  db: Db,
  agent: { id: string; tenantId: string },
  budget: Budget,
  runId: string | null,
) {
  const month = monthOf(new Date());
  await db.$executeRaw`
    WITH paused AS (
      UPDATE users SET paused_at = now(), paused_reason = ${limitReason(budget.cfg.cost_limit_usd)}, paused_kind = 'cost_limit'
      WHERE id = ${agent.id} AND paused_at IS NULL
      RETURNING id
    )
    INSERT INTO events (id, tenant_id, type, actor_id, subject_type, subject_id, payload, run_id)
    SELECT ${newId()}, ${agent.tenantId}, 'agent.paused', ${agent.id}, 'user', ${agent.id},
      jsonb_build_object('reason', 'cost_limit', 'spent_micros', ${budget.spentMicros}::bigint,
        'limit_micros', ${budget.limitMicros}::bigint, 'month', ${month}::text), ${runId}
    FROM paused`;
}

/**
 * Limits are monthly: an agent the limit paused last month runs again in a new month,
 * and its owner hears of it, as of the pause. Only the limit's pauses: an owner's own stays.
 */
export async function liftLastMonthsPauses(db: PrismaClient, now = new Date()): Promise<number> {
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  return db.$transaction(async (tx) => {
    const agents = await tx.$queryRaw<{ id: string; tenant_id: string }[]>`
      SELECT id, tenant_id FROM users
      WHERE paused_kind = 'cost_limit' AND paused_at < ${monthStart}
      FOR UPDATE SKIP LOCKED`;
    for (const agent of agents) {
      await tx.user.update({
        where: { id: agent.id },
        data: { pausedAt: null, pausedReason: null, pausedKind: null },
      });
      await emitEvent(tx, {
        tenantId: agent.tenant_id,
        actorId: agent.id,
        type: "agent.resumed",
        subjectType: "user",
        subjectId: agent.id,
        payload: { reason: "new_month", month: monthOf(now) },
      });
    }
    return agents.length;
  });
}

/** A call the ledger recorded: its tokens (input counts cached input too, as the ledger does) and cost. */
export function countCharged(entry: Pick<UsageEntry, "model" | "usage" | "price">): void {
  const model = bounded("model", entry.model);
  llmTokens.inc({ model, kind: "input" }, entry.usage.input);
  llmTokens.inc({ model, kind: "cached" }, entry.usage.cached);
  if (entry.usage.cacheWrite) llmTokens.inc({ model, kind: "cache_write" }, entry.usage.cacheWrite);
  llmTokens.inc({ model, kind: "output" }, entry.usage.output);
  llmCost.inc({ model }, entry.price.costMicros / 1e6);
}
