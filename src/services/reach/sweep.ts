// Postgres holds every mail and delivery until it went out; Redis only carries jobs. The
// sweep re-sends a job for each one whose job should have tried it by now (it was lost
// with Redis, or gave up its attempts while the SMTP server was away). Sending claims the
// row, so an extra job is harmless.
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
      SELECT id FROM outbound_deliveries WHERE status = 'pending' AND next_attempt_at < now() - interval '60 seconds'
        AND (claimed_until IS NULL OR claimed_until < now())
      ORDER BY next_attempt_at LIMIT 200`,
  ]);
  return { emails: emails.map((r) => r.id), deliveries: deliveries.map((r) => r.id) };
}
