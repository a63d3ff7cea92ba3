// Turns a committed event into notifications: @mentions of studio members, replies
// to your comment, comments on your content. One per (event, person), so a
// re-delivered event notifies nobody twice.
import type { PrismaClient } from "../db/prisma.ts";
import type { Event, NotificationKind } from "../generated/prisma/client.ts";
import { newId } from "../lib/ids.ts";
import { parseMentions } from "./mentions.ts";

interface Subject {
  text: string;
  path: string;
  authorId: string;
  parentAuthorId?: string;
  subjectAuthorId?: string;
}

async function loadSubject(db: PrismaClient, e: Event): Promise<Subject | null> {
  const studio = e.studioId ? await db.studio.findUnique({ where: { id: e.studioId } }) : null;
  if (!studio) return null;
  const base = `/studios/${studio.handle}`;
  switch (e.type) {
    case "note.created": {
      const n = await db.note.findUnique({ where: { id: e.subjectId } });
      return n && { text: `${n.title}\n\n${n.text}`, path: `${base}/notes/${n.id}`, authorId: n.authorId };
    }
    case "decision.created": {
      const d = await db.decision.findUnique({ where: { id: e.subjectId } });
      return (
        d && {
          text: `${d.question}\n\n${d.description}`,
          path: `${base}/decisions/${d.id}`,
          authorId: d.authorId,
        }
      );
    }
    case "commitment.created": {
      const c = await db.commitment.findUnique({ where: { id: e.subjectId } });
      return (
        c && {
          text: `${c.title}\n\n${c.description}`,
          path: `${base}/commitments/${c.id}`,
          authorId: c.authorId,
        }
      );
    }
    case "comment.created": {
      const c = await db.comment.findUnique({ where: { id: e.subjectId }, include: { parent: true } });
      if (!c) return null;
      const where = { id: c.subjectId };
      const subject =
        c.subjectType === "note"
          ? await db.note.findUnique({ where })
          : c.subjectType === "decision"
            ? await db.decision.findUnique({ where })
            : await db.commitment.findUnique({ where });
      return {
        text: c.text,
        path: `${base}/${c.subjectType}s/${c.subjectId}`,
        authorId: c.authorId,
        parentAuthorId: c.parent?.authorId,
        subjectAuthorId: subject?.authorId,
      };
    }
    default:
      return null;
  }
}

export async function notifyForEvent(db: PrismaClient, eventId: string): Promise<number> {
  const e = await db.event.findUnique({ where: { id: eventId } });
  if (!e) return 0;
  const s = await loadSubject(db, e);
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
