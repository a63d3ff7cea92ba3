// History for dashboards to show: ledger rows spread over the last `days` days, grouped
// into runs, with every derived total (runs, keys, agent months) rebuilt from the rows —
// so seeded data obeys the same invariant as real data. Used by the benchmark, the
// dashboard screenshot test and `bin/demo`.
import type { PrismaClient } from "../db/prisma.ts";
import { newId } from "../lib/ids.ts";
import { PRICE_LIST } from "../services/money/pricing.ts";

export interface SeedUsage {
  tenantId: string;
  agents: { id: string; ownerId: string | null }[];
  rows: number;
  days?: number;
  callsPerRun?: number;
  apiKeyId?: string | null;
  /** Deterministic output for screenshots. */
  seed?: number;
}

const MODELS = ["gpt-4o-mini", "gpt-4o", "claude-sonnet-4-5"] as const;

export async function seedUsage(db: PrismaClient, options: SeedUsage): Promise<void> {
  const days = options.days ?? 30;
  const perRun = options.callsPerRun ?? 8;
  const runs = Math.max(1, Math.ceil(options.rows / perRun));
  const runIds = Array.from({ length: runs }, () => newId());
  const ledgerIds = Array.from({ length: options.rows }, () => newId());
  const agentIds = options.agents.map((a) => a.id);
  const ownerIds = options.agents.map((a) => a.ownerId);
  const prices = MODELS.map((m) => PRICE_LIST[m]!);
  await db.$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT setseed(${(options.seed ?? 0.42) % 1})`;
      // Runs: each at a random moment in the window, busier on weekdays and lately.
      await tx.$executeRaw`
        INSERT INTO subagent_task_runs (id, tenant_id, agent_id, trigger_kind, task, model, status, stop_reason,
          max_steps, timeout_seconds, steps_count, created_at, started_at, completed_at)
        SELECT r.id, ${options.tenantId}, (${agentIds}::text[])[1 + (r.n % ${agentIds.length})], 'manual',
          (ARRAY['Summarize this week''s notes', 'Answer the question in the thread', 'Draft the launch checklist',
                 'Reply to comments on the plan', 'Collect open decisions'])[1 + (r.n % 5)],
          (${[...MODELS]}::text[])[1 + (r.n % 3)], 'completed', 'finished', 30, 300, ${perRun},
          t.at, t.at, t.at + interval '40 seconds'
        FROM unnest(${runIds}::text[]) WITH ORDINALITY AS r(id, n),
        -- "+ 0 * r.n" correlates the subquery, so random() is drawn per row, not once.
        LATERAL (SELECT now() - (${days} * power(random() + 0 * r.n, 1.3)) * interval '1 day' AS at) t`;
      await tx.$executeRaw`
        INSERT INTO llm_usage (id, tenant_id, agent_id, owner_id, run_id, step_number, api_key_id, model,
          pricing_version, priced, input_tokens, cached_tokens, output_tokens, cost_micros, latency_ms, created_at)
        SELECT l.id, ${options.tenantId}, r.agent_id, (${ownerIds}::text[])[array_position(${agentIds}::text[], r.agent_id)],
          r.id, 1 + (l.n % ${perRun}), ${options.apiKeyId ?? null}, r.model, '2026-11-01', true,
          tok.input, tok.cached, tok.output,
          round(CASE r.model
            WHEN ${MODELS[0]} THEN (tok.input - tok.cached) * ${prices[0]!.input}::float8 + tok.cached * ${prices[0]!.cached_input}::float8 + tok.output * ${prices[0]!.output}::float8
            WHEN ${MODELS[1]} THEN (tok.input - tok.cached) * ${prices[1]!.input}::float8 + tok.cached * ${prices[1]!.cached_input}::float8 + tok.output * ${prices[1]!.output}::float8
            ELSE (tok.input - tok.cached) * ${prices[2]!.input}::float8 + tok.cached * ${prices[2]!.cached_input}::float8 + tok.output * ${prices[2]!.output}::float8
          END)::bigint,
          300 + (random() * 2500)::int, r.created_at + (l.n % ${perRun}) * interval '4 seconds'
        FROM unnest(${ledgerIds}::text[]) WITH ORDINALITY AS l(id, n)
        JOIN (SELECT id, agent_id, model, created_at, row_number() OVER (ORDER BY id) - 1 AS k
              FROM subagent_task_runs WHERE id = ANY(${runIds}::text[])) r ON r.k = (l.n - 1) / ${perRun},
        LATERAL (SELECT 1500 + ((random() + 0 * l.n) * 6000)::int AS input) i,
        LATERAL (SELECT i.input, (i.input * random() * 0.4)::int AS cached, 40 + (random() * 400 + 0 * l.n)::int AS output) tok`;
      await rebuildTotals(tx, options.tenantId);
    },
    { timeout: 600_000 },
  );
}

/** Every run, key, agent-month and daily total of the tenant, recomputed from the ledger. */
export async function rebuildTotals(db: Pick<PrismaClient, "$executeRaw">, tenantId: string) {
  await db.$executeRaw`
    UPDATE subagent_task_runs r SET input_tokens = s.input, cached_tokens = s.cached, output_tokens = s.output,
      cost_micros = s.cost
    FROM (SELECT run_id, sum(input_tokens) AS input, sum(cached_tokens) AS cached, sum(output_tokens) AS output,
                 sum(cost_micros) AS cost
          FROM llm_usage WHERE tenant_id = ${tenantId} AND run_id IS NOT NULL GROUP BY run_id) s
    WHERE r.id = s.run_id`;
  await db.$executeRaw`
    UPDATE agent_api_keys k SET total_calls = s.calls, total_input_tokens = s.input, total_cached_tokens = s.cached,
      total_output_tokens = s.output, total_cost_micros = s.cost, last_used_at = s.last
    FROM (SELECT api_key_id, count(*) AS calls, sum(input_tokens) AS input, sum(cached_tokens) AS cached,
                 sum(output_tokens) AS output, sum(cost_micros) AS cost, max(created_at) AS last
          FROM llm_usage WHERE tenant_id = ${tenantId} AND api_key_id IS NOT NULL GROUP BY api_key_id) s
    WHERE k.id = s.api_key_id`;
  await db.$executeRaw`DELETE FROM llm_usage_daily WHERE tenant_id = ${tenantId}`;
  await db.$executeRaw`
    INSERT INTO llm_usage_daily (agent_id, day, model, key_ref, tenant_id, owner_id, calls, unpriced_calls,
      input_tokens, cached_tokens, output_tokens, cost_micros)
    SELECT agent_id, created_at::date, model, COALESCE(api_key_id, 'shared'), ${tenantId}, min(owner_id), count(*),
           count(*) FILTER (WHERE NOT priced), sum(input_tokens), sum(cached_tokens), sum(output_tokens),
           sum(cost_micros)
    FROM llm_usage WHERE tenant_id = ${tenantId} GROUP BY 1, 2, 3, 4`;
  await db.$executeRaw`DELETE FROM agent_usage_months WHERE tenant_id = ${tenantId}`;
  await db.$executeRaw`
    INSERT INTO agent_usage_months (agent_id, month, tenant_id, calls, input_tokens, cached_tokens, output_tokens, cost_micros)
    SELECT agent_id, to_char(created_at, 'YYYY-MM'), ${tenantId}, count(*), sum(input_tokens), sum(cached_tokens),
           sum(output_tokens), sum(cost_micros)
    FROM llm_usage WHERE tenant_id = ${tenantId} GROUP BY 1, 2`;
}
