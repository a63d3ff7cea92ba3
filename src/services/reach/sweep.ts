// Postgres holds every mail and delivery until it went out; Redis only carries jobs. The
// sweep re-sends a job for each one whose job should have tried it by now (it was lost
// with Redis, or gave up its attempts while the SMTP server was away). Sending claims the
// row, so an extra job is harmless. What went out is deleted a month later (pruneOutbound).
import type { PrismaClient } from "../../db/prisma.ts";

export interface Overdue {
  emails: string[];
  deliveries: string[];
}

export async function overdueOutbound(db: PrismaClient): Promise<Overdue> {
  const [emails, deliveries] = await Promise.all([
    db.$queryRaw<{ id: string }[]>`
      SELECT id FROM outbound_emails WHERE status = 'queued' AND next_attempt_at < now() - interval '60 seconds'
        AND (claimed_until IS NULL OR claimed_until < now())
      ORDER BY next_attempt_at LIMIT 200`,
    db.$queryRaw<{ id: string }[]>`
      SELECT d.id FROM outbound_deliveries d JOIN outbound_endpoints e ON e.id = d.endpoint_id
      WHERE d.status = 'pending' AND d.next_attempt_at < now() - interval '60 seconds'
        AND (d.claimed_until IS NULL OR d.claimed_until < now())
        -- A paused endpoint's deliveries wait for its confirmation, not for the sweep.
        AND e.paused_at IS NULL
      ORDER BY d.next_attempt_at LIMIT 200`,
  ]);
  return { emails: emails.map((r) => r.id), deliveries: deliveries.map((r) => r.id) };
}

/**
 * How long what left is kept: a month of delivery logs and mails to look back on when someone
 * asks "did it go out?", without the tables growing forever.
 */
export const OUTBOUND_RETENTION_DAYS = 30;
/** Rows deleted per table a sweep: the sweep runs every few seconds, so a backlog clears in turns. */
const PRUNE_BATCH = 5000;

/**
 * Deletes mails sent (alone or in a digest) and deliveries settled (delivered or failed for
 * good) whose last try is OUTBOUND_RETENTION_DAYS old, by `next_attempt_at` (never before
 * its row was made, and indexed with `status`), and review links that expired as long ago:
 * kept that long after expiry so an old mail's link still says it expired instead of
 * "no such link". Mails queued or held and deliveries pending are never touched.
 */
export async function pruneOutbound(db: PrismaClient, days = OUTBOUND_RETENTION_DAYS): Promise<number> {
  const [emails, deliveries, links] = await Promise.all([
    db.$executeRaw`DELETE FROM outbound_emails WHERE id IN (
      SELECT id FROM outbound_emails WHERE status IN ('sent', 'digested')
        AND next_attempt_at < now() - make_interval(days => ${days}::int) LIMIT ${PRUNE_BATCH}::int)`,
    db.$executeRaw`DELETE FROM outbound_deliveries WHERE id IN (
      SELECT id FROM outbound_deliveries WHERE status IN ('delivered', 'failed')
        AND next_attempt_at < now() - make_interval(days => ${days}::int) LIMIT ${PRUNE_BATCH}::int)`,
    db.$executeRaw`DELETE FROM review_links WHERE id IN (
      SELECT id FROM review_links WHERE expires_at < now() - make_interval(days => ${days}::int)
      LIMIT ${PRUNE_BATCH}::int)`,
  ]);
  return emails + deliveries + links;
}
