// The daily digest: what each person chose to hear of once a day, in one mail, sent from
// DIGEST_HOUR_UTC on, at most once a (UTC) day. The held mails it gathers are marked in the
// transaction that queues it, so a digest sent twice (two workers) gathers each line once.
import type { PrismaClient } from "../../db/prisma.ts";
import { newId } from "../../lib/ids.ts";
import { settingsPathOf } from "./fanout.ts";
import { digestOf } from "./render.ts";

const LINK = /^See it(?: in Cadre)?: (\S+)$/m;

/** Queues the digests due at `now`; their mail ids, for the queue. */
export async function queueDigests(
  db: PrismaClient,
  options: { hourUtc: number; origin: (subdomain: string) => string },
  now = new Date(),
): Promise<string[]> {
  const today = new Date(
    Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), options.hourUtc),
  );
  if (now < today) return [];
  const due = await db.$queryRaw<{ user_id: string }[]>`
    SELECT DISTINCT e.user_id FROM outbound_emails e JOIN users u ON u.id = e.user_id
    WHERE e.status = 'held' AND (u.last_digest_at IS NULL OR u.last_digest_at < ${today})
    LIMIT 500`;
  const ids: string[] = [];
  for (const { user_id } of due) {
    const id = await db.$transaction(async (tx) => {
      // The person's row, locked: a second worker's digest for them waits, then finds it sent.
      const [person] = await tx.$queryRaw<{ tenant_id: string; subdomain: string; handle: string }[]>`
        SELECT u.tenant_id, t.subdomain, u.handle FROM users u JOIN tenants t ON t.id = u.tenant_id
        WHERE u.id = ${user_id} AND (u.last_digest_at IS NULL OR u.last_digest_at < ${today}) FOR UPDATE OF u`;
      if (!person) return null;
      const held = await tx.outboundEmail.findMany({
        where: { userId: user_id, status: "held" },
        orderBy: { createdAt: "asc" },
      });
      if (!held.length) return null;
      const origin = options.origin(person.subdomain);
      const mail = digestOf(
        held.map((m) => ({ subject: m.subject, link: LINK.exec(m.text)?.[1] ?? origin })),
        `${origin}${settingsPathOf(person.handle)}`,
      );
      const digestId = newId();
      await tx.outboundEmail.create({
        data: {
          id: digestId,
          tenantId: person.tenant_id,
          userId: user_id,
          // Not an event's: one digest per person and day.
          eventId: `digest-${today.toISOString().slice(0, 10)}`,
          kind: "digest",
          ...mail,
        },
      });
      await tx.outboundEmail.updateMany({
        where: { id: { in: held.map((m) => m.id) } },
        data: { status: "digested", sentAt: now },
      });
      await tx.user.update({ where: { id: user_id }, data: { lastDigestAt: now } });
      return digestId;
    });
    if (id) ids.push(id);
  }
  return ids;
}
