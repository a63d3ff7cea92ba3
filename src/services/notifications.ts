// Turns a committed event into notifications: @mentions of studio members, replies
// to your comment, comments on your content. One per (event, person), so a
// re-delivered event notifies nobody twice.
import type { PrismaClient } from "../db/prisma.ts";
import type { Event, NotificationKind } from "../generated/prisma/client.ts";
import { newId } from "../lib/ids.ts";
import { parseMentions } from "./mentions.ts";
import { loadSubject, readEvent, type Subject } from "./subjects.ts";

/** A person's notifications not yet dismissed: the menu's badge, their page and "dismiss all" count the same ones. */
export const unreadOf = (userId: string, tenantId: string) => ({ userId, tenantId, dismissedAt: null });

/** `subject` may be passed when the caller already loaded it (the event worker shares it with the dispatcher). */
export async function notifyForEvent(
  db: PrismaClient,
  event: string | Event,
  subject?: Subject | null,
): Promise<number> {
  const read =
    typeof event === "string"
      ? await readEvent(db, event)
      : { event, subject: subject === undefined ? await loadSubject(db, event) : subject };
  if (!read) return 0;
  const { event: e, subject: s } = read;
  if (!s || !e.studioId) return 0;

  const recipients = new Map<string, NotificationKind>();
  const handles = parseMentions(s.text);
  if (handles.length) {
    const members = await db.studioMember.findMany({
      where: {
        studioId: e.studioId,
        user: { handle: { in: handles }, tenantId: e.tenantId, archivedAt: null },
      },
      select: { userId: true },
    });
    for (const m of members) recipients.set(m.userId, "mention");
  }
  // A mention says more than a reply, and a reply more than a comment: keep the strongest.
  if (s.parentAuthorId && !recipients.has(s.parentAuthorId)) recipients.set(s.parentAuthorId, "reply");
  if (s.subjectAuthorId && !recipients.has(s.subjectAuthorId)) recipients.set(s.subjectAuthorId, "comment");
  recipients.delete(e.actorId);
  if (!recipients.size) return 0;

  const result = await db.notification.createMany({
    data: [...recipients].map(([userId, kind]) => ({
      id: newId(),
      tenantId: e.tenantId,
      userId,
      actorId: e.actorId,
      eventId: e.id,
      kind,
      path: s.path,
      excerpt: s.text.replace(/\s+/g, " ").trim().slice(0, 500),
    })),
    skipDuplicates: true,
  });
  return result.count;
}
