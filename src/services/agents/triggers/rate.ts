// The agent's trigger rate (tenant setting `trigger_rate_per_minute`): how many runs the
// activity of people may start in any 60 seconds — mentions, replies, thread comments and
// subscriptions' batches. A trigger over it is not dropped: its run waits, queued with a
// `not_before`, for the first moment the window allows, in the order the triggers came. At
// most MAX_WAITING may wait; the next is refused, saying so, and its managers may retry it.
// Webhooks and schedules have limits of their own (a webhook's per-minute rate, a schedule's
// one-minute minimum) and neither use nor count against this one.
import { advisoryLock, type Db, hotQuery } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import { plural } from "../../../lib/plural.ts";

export const RATED_TRIGGERS = ["mention", "reply", "thread", "subscription"];
export const MAX_WAITING = 10;
const WINDOW_MS = 60_000;

export type Slot = { at: "now" } | { at: Date } | { full: number };

/**
 * When a new rated trigger of this agent may run: now, at a later moment (each run's moment
 * is its `not_before`, or when it was queued), or not at all (`full`: that many wait already).
 * Called under the agent's trigger lock, so two triggers cannot take one place.
 */
export async function rateSlot(tx: Db, agentId: string, perMinute: number): Promise<Slot> {
  const now = Date.now();
  // Milliseconds since the epoch (the columns are UTC without a zone): no driver's idea of local time.
  const rows = await hotQuery<{ slot: number }>(
    tx,
    Prisma.sql`
    SELECT (extract(epoch FROM coalesce(not_before, created_at)) * 1000)::float8 AS slot FROM subagent_task_runs
    WHERE agent_id = ${agentId} AND trigger_kind = ANY(${RATED_TRIGGERS}::text[]) AND status <> 'skipped'
      AND coalesce(not_before, created_at) > ${new Date(now - WINDOW_MS)}::timestamp
    ORDER BY slot DESC`,
  );
  if (rows.length < perMinute) return { at: "now" };
  const waiting = rows.filter((r) => r.slot > now).length;
  if (waiting >= MAX_WAITING) return { full: waiting };
  // The window holds `perMinute` runs: this one goes a minute after the perMinute-th latest.
  const at = rows[perMinute - 1]!.slot + WINDOW_MS;
  return at > now ? { at: new Date(at) } : { at: "now" };
}

/**
 * The workspace's own rate (`workspace_trigger_rate_per_minute`, unset by default): rated
 * triggers of all its agents in the last 60 seconds. Over it a trigger is refused, not
 * delayed: the agents' own rates delay, this one caps a workspace whose agents all woke at
 * once. Null while there is room, else why not. Under the tenant's trigger lock, taken only
 * when the limit is set, so a workspace without one pays nothing for it.
 */
export async function workspaceRateFull(
  tx: Db,
  tenantId: string,
  settings: { workspace_trigger_rate_per_minute?: number | undefined },
): Promise<string | null> {
  const limit = settings.workspace_trigger_rate_per_minute;
  if (!limit) return null;
  await advisoryLock(tx, `trigger-tenant:${tenantId}`);
  const [row] = await hotQuery<{ n: number }>(
    tx,
    Prisma.sql`
    SELECT count(*)::int AS n FROM subagent_task_runs
    WHERE tenant_id = ${tenantId} AND trigger_kind = ANY(${RATED_TRIGGERS}::text[]) AND status <> 'skipped'
      AND coalesce(not_before, created_at) > ${new Date(Date.now() - WINDOW_MS)}::timestamp
      -- A run waits for its agent's rate at most MAX_WAITING minutes: the index's bound.
      AND created_at > ${new Date(Date.now() - 60 * WINDOW_MS)}::timestamp`,
  );
  return (row?.n ?? 0) >= limit
    ? `The workspace's agents were already woken ${plural(limit, "time")} in the last minute, its limit; this trigger was not kept. Its managers can retry it.`
    : null;
}
