// The usage ledger: one row per LLM call, and every total that derives from it (the run,
// the key, the agent's month, the daily rollup the dashboards read) moved by the same SQL
// statement, so a total is always the sum of its rows. The month row's lock orders
// concurrent calls of one agent: each call sees the total before and after itself, so a
// threshold is crossed by exactly one call, and the call that reaches the limit pauses
// the agent in that same statement.
import { type Db, hotQuery, type PrismaClient } from "../../db/prisma.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import type { Usage } from "../agents/llm.ts";
import {
  type AgentConfig,
  agentConfig,
  DEFAULT_ALERT_THRESHOLDS_USD,
  DEFAULT_COST_LIMIT_USD,
  MAX_COST_LIMIT_USD,
} from "../agents/settings.ts";
import { mayRecordSql, type StepRecord, stepInsertSql } from "../agents/steps.ts";
import { emitEvent, notifyEventsSql } from "../events.ts";
import { type Priced, usd } from "./pricing.ts";

/** Calendar month in UTC, `2026-11`: the period limits and thresholds apply to. */
export const monthOf = (d: Date) => d.toISOString().slice(0, 7);

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

/**
 * Writes one call's ledger row and moves every total. The agent's limit and alerts are
 * read from its row inside the statement, as they are when the call is recorded, not as
 * they were before a call that may have taken minutes: an owner who raised the limit
 * meanwhile is not paused at the old one, and a new alert this call crosses fires. The
 * pause re-checks the limit on the row it locks, so a concurrent set_cost_limit is seen.
 */
export async function recordUsage(
  db: Db,
  e: UsageEntry,
  at = new Date(),
  step?: { owner: string | null; record: StepRecord },
): Promise<Recorded> {
  const month = monthOf(at);
  const eventIds = Array.from({ length: MAX_THRESHOLDS + 1 }, () => newId());
  const cost = BigInt(e.price.costMicros);
  const u = e.usage;
  const defaults = {
    limit: JSON.stringify(DEFAULT_COST_LIMIT_USD),
    alerts: JSON.stringify(DEFAULT_ALERT_THRESHOLDS_USD),
  };
  // The limit in micro-dollars, from a config that may lack it (its default applies).
  const limitSql = Prisma.sql`(round((CASE WHEN jsonb_typeof(users.agent_config -> 'cost_limit_usd') = 'number'
    THEN users.agent_config -> 'cost_limit_usd' ELSE ${defaults.limit}::jsonb END)::text::numeric * 1000000))::bigint`;
  const [row] = await hotQuery<BudgetRow & { crossed: number; paused: number; stepped: number }>(
    db,
    Prisma.sql`
    WITH ledger AS (
      INSERT INTO llm_usage (id, tenant_id, agent_id, owner_id, run_id, step_number, api_key_id, model,
        pricing_version, priced, input_tokens, cached_tokens, output_tokens, cost_micros, latency_ms, created_at)
      VALUES (${newId()}, ${e.tenantId}, ${e.agentId}, ${e.ownerId}, ${e.runId}, ${e.stepNumber}, ${e.apiKeyId},
        ${e.model}, ${e.price.version}, ${e.price.priced}, ${u.input}, ${u.cached}, ${u.output}, ${cost},
        ${Math.round(e.latencyMs)}, ${at})
      RETURNING id
    ), ${runSql(e, cost, step)}, api_key AS (
      UPDATE agent_api_keys
      SET total_calls = total_calls + 1, total_input_tokens = total_input_tokens + ${u.input},
          total_cached_tokens = total_cached_tokens + ${u.cached},
          total_output_tokens = total_output_tokens + ${u.output},
          total_cost_micros = total_cost_micros + ${cost}, last_used_at = ${at}
      WHERE id = ${e.apiKeyId}
      RETURNING id
    ), daily AS (
      INSERT INTO llm_usage_daily AS d (agent_id, day, model, key_ref, tenant_id, owner_id, calls, unpriced_calls,
        input_tokens, cached_tokens, output_tokens, cost_micros)
      VALUES (${e.agentId}, (${at}::timestamp)::date, ${e.model}, ${e.apiKeyId ?? "shared"}, ${e.tenantId},
        ${e.ownerId}, 1, ${e.price.priced ? 0 : 1}, ${u.input}, ${u.cached}, ${u.output}, ${cost})
      ON CONFLICT (agent_id, day, model, key_ref) DO UPDATE
      SET calls = d.calls + 1, unpriced_calls = d.unpriced_calls + EXCLUDED.unpriced_calls,
          input_tokens = d.input_tokens + EXCLUDED.input_tokens,
          cached_tokens = d.cached_tokens + EXCLUDED.cached_tokens,
          output_tokens = d.output_tokens + EXCLUDED.output_tokens,
          cost_micros = d.cost_micros + EXCLUDED.cost_micros
      RETURNING 1
    ), month AS (
      INSERT INTO agent_usage_months AS m
        (agent_id, month, tenant_id, calls, input_tokens, cached_tokens, output_tokens, cost_micros)
      VALUES (${e.agentId}, ${month}, ${e.tenantId}, 1, ${u.input}, ${u.cached}, ${u.output}, ${cost})
      ON CONFLICT (agent_id, month) DO UPDATE
      SET calls = m.calls + 1, input_tokens = m.input_tokens + EXCLUDED.input_tokens,
          cached_tokens = m.cached_tokens + EXCLUDED.cached_tokens,
          output_tokens = m.output_tokens + EXCLUDED.output_tokens,
          cost_micros = m.cost_micros + EXCLUDED.cost_micros
      RETURNING cost_micros
    ), config AS (
      SELECT ${limitSql} AS limit_micros, users.agent_config,
        COALESCE(users.agent_config -> 'alert_thresholds_usd', ${defaults.alerts}::jsonb) AS alerts
      FROM users WHERE users.id = ${e.agentId}
    ), crossed AS (
      -- An amount past any possible limit (a hand-edited config) can never alert and
      -- must not overflow bigint: skipped.
      SELECT (round(t.usd * 1000000))::bigint AS threshold, t.ord
      FROM config, month,
        LATERAL (SELECT a.value::text::numeric AS usd, a.ord FROM jsonb_array_elements(
          CASE WHEN jsonb_typeof(config.alerts) = 'array' THEN config.alerts ELSE '[]'::jsonb END
        ) WITH ORDINALITY AS a(value, ord) WHERE jsonb_typeof(a.value) = 'number') t
      WHERE t.ord <= ${MAX_THRESHOLDS} AND t.usd > 0 AND t.usd <= ${MAX_COST_LIMIT_USD}
        AND round(t.usd * 1000000) > month.cost_micros - ${cost} AND round(t.usd * 1000000) <= month.cost_micros
    ), paused AS (
      UPDATE users SET paused_at = ${at}, paused_kind = 'cost_limit',
        paused_reason = 'reached its monthly cost limit of $' || to_char(${limitSql} / 1000000.0, 'FM999999990.00')
      FROM month
      WHERE users.id = ${e.agentId} AND users.paused_at IS NULL AND month.cost_micros >= ${limitSql}
      RETURNING users.id
    ), notices AS (
      INSERT INTO events (id, tenant_id, type, actor_id, subject_type, subject_id, payload, run_id)
      SELECT (${eventIds}::text[])[c.ord], ${e.tenantId}, 'usage.threshold', ${e.agentId}, 'user', ${e.agentId},
        jsonb_build_object('threshold_micros', c.threshold, 'spent_micros', month.cost_micros,
          'limit_micros', config.limit_micros, 'month', ${month}::text),
        ${e.runId}
      FROM crossed c, month, config
      UNION ALL
      SELECT (${eventIds}::text[])[${MAX_THRESHOLDS + 1}], ${e.tenantId}, 'agent.paused', ${e.agentId}, 'user',
        ${e.agentId}, jsonb_build_object('reason', 'cost_limit', 'spent_micros', month.cost_micros,
          'limit_micros', config.limit_micros, 'month', ${month}::text),
        ${e.runId}
      FROM paused, month, config
      RETURNING id
    )
    SELECT month.cost_micros AS spent, config.agent_config,
      ${keyGoneSql(e.apiKeyId)} AS key_gone,
      (SELECT count(*) FROM crossed)::int AS crossed,
      (SELECT count(*) FROM paused)::int AS paused,
      ${notifyEventsSql("notices")} AS notified,
      ${step ? Prisma.sql`(SELECT count(*) FROM step)::int` : Prisma.sql`0`} AS stepped
    FROM month LEFT JOIN config ON true`,
  );
  const r = row!;
  const budget = budgetOf(r);
  return {
    monthMicros: budget.spentMicros,
    crossed: Number(r.crossed),
    paused: Number(r.paused) > 0,
    budget,
    stepped: Number(r.stepped) === 1,
  };
}

/**
 * The run's totals move with each call, and a run with no model yet takes the one its calls
 * ran on (resolved from a default), so the run page names it. With a step, that step is
 * recorded in the same statement: the run's row is locked first and the step's condition
 * read from it, because one statement can change a row only once — the totals and the step
 * counter move in one UPDATE, the totals always, the counter only when the step may be
 * recorded.
 */
function runSql(e: UsageEntry, cost: bigint, step?: { owner: string | null; record: StepRecord }) {
  const u = e.usage;
  const totals = Prisma.sql`input_tokens = r.input_tokens + ${u.input}, cached_tokens = r.cached_tokens + ${u.cached},
          output_tokens = r.output_tokens + ${u.output}, cost_micros = r.cost_micros + ${cost},
          model = COALESCE(r.model, ${e.model})`;
  if (!step)
    return Prisma.sql`run AS (
      UPDATE subagent_task_runs r SET ${totals} WHERE r.id = ${e.runId} RETURNING r.id
    )`;
  const n = step.record.number;
  return Prisma.sql`cur AS (
      SELECT id, ${mayRecordSql(step.owner, n)} AS advance FROM subagent_task_runs WHERE id = ${e.runId} FOR UPDATE
    ), run AS (
      UPDATE subagent_task_runs r
      SET ${totals}, steps_count = CASE WHEN cur.advance THEN ${n}::int ELSE r.steps_count END
      FROM cur WHERE r.id = cur.id
      RETURNING r.id
    ), gate AS (
      SELECT id FROM cur WHERE advance
    ), ${stepInsertSql({ tenantId: e.tenantId }, step.record)}`;
}

/** The agent's spend so far this (UTC) month, in micro-dollars. */
export async function spentThisMonth(db: Db, agentId: string, at = new Date()): Promise<bigint> {
  const m = await db.agentUsageMonth.findUnique({
    where: { agentId_month: { agentId, month: monthOf(at) } },
  });
  return m?.costMicros ?? 0n;
}

export interface Budget {
  cfg: AgentConfig;
  /** The agent's configuration as stored, read with the budget. */
  agentConfig: Prisma.JsonValue;
  spentMicros: bigint;
  limitMicros: bigint;
  /** The run's own API key was revoked (or deleted) since the run started. */
  keyGone: boolean;
}

interface BudgetRow {
  agent_config: Prisma.JsonValue;
  /** int8: a bigint through Prisma, a string through pg (hotQuery). */
  spent: bigint | string | null;
  key_gone: boolean;
}

/** The run's own API key was revoked or deleted. */
const keyGoneSql = (keyId: string | null) => Prisma.sql`(${keyId}::text IS NOT NULL AND NOT EXISTS (
  SELECT 1 FROM agent_api_keys k WHERE k.id = ${keyId} AND k.revoked_at IS NULL))`;

function budgetOf(row: BudgetRow | undefined): Budget {
  const cfg = agentConfig({ agentConfig: row?.agent_config ?? {} });
  return {
    cfg,
    agentConfig: row?.agent_config ?? {},
    spentMicros: BigInt(row?.spent ?? 0),
    limitMicros: toMicros(cfg.cost_limit_usd),
    keyGone: Boolean(row?.key_gone),
  };
}

/**
 * The budget a claimed run starts with, from its agent's configuration and month's spend
 * as the claim read them (agents/run-start.ts). Its key was checked as the run resolved
 * its endpoint, after the claim.
 */
export const budgetAtStart = (agentConfig: Prisma.JsonValue, spentMicros: bigint): Budget =>
  budgetOf({ agent_config: agentConfig, spent: spentMicros, key_gone: false });

/**
 * The agent's configuration, month-to-date spend and its key's state, read together
 * before a run's first LLM call; each recorded call returns them as it leaves them.
 */
export async function readBudget(
  db: Db,
  agentId: string,
  keyId: string | null = null,
  at = new Date(),
): Promise<Budget> {
  const [row] = await hotQuery<BudgetRow>(
    db,
    Prisma.sql`
    SELECT u.agent_config, m.cost_micros AS spent, ${keyGoneSql(keyId)} AS key_gone
    FROM users u LEFT JOIN agent_usage_months m ON m.agent_id = u.id AND m.month = ${monthOf(at)}
    WHERE u.id = ${agentId}`,
  );
  return budgetOf(row);
}

/** Pauses an agent found at its limit (a lowered limit, or another run's last call); idempotent. */
export async function pauseAtLimit(
  db: Db,
  agent: { id: string; tenantId: string },
  b: Budget,
  runId: string | null,
) {
  const month = monthOf(new Date());
  await db.$queryRaw`
    WITH paused AS (
      UPDATE users SET paused_at = now(), paused_reason = ${limitReason(b.cfg.cost_limit_usd)}, paused_kind = 'cost_limit'
      WHERE id = ${agent.id} AND paused_at IS NULL
      RETURNING id
    ), notice AS (
      INSERT INTO events (id, tenant_id, type, actor_id, subject_type, subject_id, payload, run_id)
      SELECT ${newId()}, ${agent.tenantId}, 'agent.paused', ${agent.id}, 'user', ${agent.id},
        jsonb_build_object('reason', 'cost_limit', 'spent_micros', ${b.spentMicros}::bigint,
          'limit_micros', ${b.limitMicros}::bigint, 'month', ${month}::text), ${runId}
      FROM paused
      RETURNING id
    )
    SELECT ${notifyEventsSql("notice")} AS n`;
}

/**
 * Limits are monthly: an agent the limit paused last month runs again in a new month,
 * and its owner hears of it, as of the pause. Only the limit's pauses: an owner's own stays.
 */
export async function liftLastMonthsPauses(db: PrismaClient, at = new Date()): Promise<number> {
  const monthStart = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  return db.$transaction(async (tx) => {
    const agents = await tx.$queryRaw<{ id: string; tenant_id: string }[]>`
      SELECT id, tenant_id FROM users
      WHERE paused_kind = 'cost_limit' AND paused_at < ${monthStart}
      FOR UPDATE SKIP LOCKED`;
    for (const a of agents) {
      await tx.user.update({
        where: { id: a.id },
        data: { pausedAt: null, pausedReason: null, pausedKind: null },
      });
      await emitEvent(tx, {
        tenantId: a.tenant_id,
        actorId: a.id,
        type: "agent.resumed",
        subjectType: "user",
        subjectId: a.id,
        payload: { reason: "new_month", month: monthOf(at) },
      });
    }
    return agents.length;
  });
}
