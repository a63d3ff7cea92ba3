// The agent's trigger rate (tenant setting `trigger_rate_per_minute`): how many runs the
// activity of people may start in any 60 seconds — mentions, replies, thread comments and
// subscriptions' batches. A trigger over it is not dropped: its run waits, queued with a
// `not_before`, for the first moment the window allows, in the order the triggers came. At
// most MAX_WAITING may wait; the next is refused, saying so, and its managers may retry it.
// Webhooks and schedules have limits of their own (a webhook's per-minute rate, a schedule's
// one-minute minimum) and neither use nor count against this one.
import { type Db, hotQuery } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";

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
