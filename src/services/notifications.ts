// Turns a committed event into notifications: @mentions of studio members, replies
// to your comment, comments on your content. One per (event, person), so a
// re-delivered event notifies nobody twice.
import { type Db, hotQuery, type PrismaClient } from "../db/prisma.ts";
import { type Event, type NotificationKind, Prisma } from "../generated/prisma/client.ts";
import { newId } from "../lib/ids.ts";
import { storable } from "../lib/text.ts";
import { parseMentions } from "./mentions.ts";
import { loadSubject, readEvent, type Subject } from "./subjects.ts";

/** A person's notifications not yet dismissed: the menu's badge, their page and "dismiss all" count the same ones. */
export const unreadOf = (userId: string, tenantId: string) => ({ userId, tenantId, dismissedAt: null });

/** Where a notification's link goes in a browser: the route that reads it and opens its page. */
export const openPath = (id: string) => `/notifications/${id}/open`;

/**
 * A person opens one of their notifications: it is read, with any other unread one of theirs
 * pointing at the same page (they are about to see it all), in one statement. Returns the page
 * to open, or null when it is not theirs (or not there): the caller answers 404, telling
 * nothing of anyone else's notifications.
 */
export async function openNotification(
  db: PrismaClient,
  who: { tenantId: string; userId: string },
  id: string,
): Promise<string | null> {
  const rows = await hotQuery<{ path: string }>(
    db,
    Prisma.sql`WITH opened AS (SELECT path FROM notifications
        WHERE id = ${id} AND tenant_id = ${who.tenantId} AND user_id = ${who.userId})
      , marked AS (UPDATE notifications n SET dismissed_at = now() FROM opened
        WHERE n.tenant_id = ${who.tenantId} AND n.user_id = ${who.userId} AND n.dismissed_at IS NULL
          AND n.path = opened.path RETURNING n.id)
      SELECT path FROM opened`,
  );
  return rows[0]?.path ?? null;
}

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
  const { event: stored, subject: content } = read;
  if (!content || !stored.studioId) return 0;

  const recipients = new Map<string, NotificationKind>();
  const writer = await writerOf(db, stored, parseMentions(content.text));
  const handles = mentionedBy(writer, writer.handles);
  const authors = [content.parentAuthorId, content.subjectAuthorId].filter((a): a is string => Boolean(a));
  // A notification quotes the text: only people who can read it where it was written get one
  // (an author who has since left the studio does not).
  const members = await db.studioMember.findMany({
    where: {
      studioId: stored.studioId,
      user: { tenantId: stored.tenantId, archivedAt: null },
      OR: [{ user: { handle: { in: handles } } }, { userId: { in: authors } }],
    },
    select: { userId: true, user: { select: { handle: true } } },
  });
  const member = new Set(members.map((m) => m.userId));
  for (const member of members)
    if (handles.includes(member.user.handle)) recipients.set(member.userId, "mention");
  // A mention says more than a reply, and a reply more than a comment: keep the strongest.
  if (content.parentAuthorId && member.has(content.parentAuthorId) && !recipients.has(content.parentAuthorId))
    recipients.set(content.parentAuthorId, "reply");
  if (
    content.subjectAuthorId &&
    member.has(content.subjectAuthorId) &&
    !recipients.has(content.subjectAuthorId)
  )
    recipients.set(content.subjectAuthorId, "comment");
  recipients.delete(stored.actorId);
  if (writer.agent)
    for (const userId of writer.mutedBy) if (recipients.get(userId) === "mention") recipients.delete(userId);
  if (!recipients.size) return 0;

  const excerpt = content.text.replace(/\s+/g, " ").trim().slice(0, 500);
  return insertNotifications(
    db,
    [...recipients].map(([userId, kind]) => ({
      tenantId: stored.tenantId,
      userId,
      actorId: stored.actorId,
      eventId: stored.id,
      kind,
      path: content.path,
      excerpt,
    })),
  );
}

/** Who wrote an event's content: a person, or an agent with the waker of its run and who muted its mentions. */
interface Writer {
  agent: boolean;
  /** The handle of the person whose trigger started the run that wrote it (null: none, or not a person). */
  wakerHandle: string | null;
  /** Of the people it mentions, those who muted this agent's mentions, or every agent's. */
  mutedBy: string[];
}

async function writerOf(
  db: Db,
  event: Pick<Event, "actorId" | "runId" | "tenantId">,
  handles: string[],
): Promise<Writer & { handles: string[] }> {
  const [row] = await hotQuery<Writer>(
    db,
    Prisma.sql`
    SELECT u.kind = 'subagent' AS agent,
      (SELECT w.handle FROM subagent_task_runs r JOIN users w ON w.id = r.initiated_by_id AND w.kind = 'person'
        WHERE r.id = ${event.runId}) AS "wakerHandle",
      CASE WHEN u.kind = 'subagent' THEN ARRAY(SELECT m.id FROM users m WHERE m.tenant_id = ${event.tenantId}
        AND m.handle = ANY(${handles}::text[]) AND (m.mute_agent_mentions OR u.id = ANY(m.muted_agent_ids)))
      ELSE '{}'::text[] END AS "mutedBy"
    FROM users u WHERE u.id = ${event.actorId}`,
  );
  return { ...(row ?? { agent: false, wakerHandle: null, mutedBy: [] }), handles };
}

/**
 * The handles in a text that reach someone. A person's all do. An agent's text quotes handles
 * more often than it addresses them ("Hi @alice!", "as @scout said"), and two agents greeting
 * each other woke each other until the chain limit: in what an agent writes, only the person
 * whose words woke its run is reached (it is answering them); every other handle notifies and
 * wakes nobody. An agent hands work to another through the thread or a reply, not a quote.
 */
export function mentionedBy(writer: Pick<Writer, "agent" | "wakerHandle">, handles: string[]): string[] {
  if (!writer.agent) return handles;
  return handles.filter((handle) => handle === writer.wakerHandle);
}

export interface NewNotification {
  tenantId: string;
  userId: string;
  actorId: string;
  eventId: string;
  kind: NotificationKind;
  path: string;
  excerpt: string;
}

/**
 * Writes notifications, one per (event, person): those a re-delivered event already wrote
 * are skipped. Returns how many are new. One statement, not `createMany`: Prisma compiles a
 * `createMany` on every call (it caches no plan for one), 0.9 ms of the worker's CPU for
 * every event that notifies anyone.
 */
export async function insertNotifications(db: Db, rows: NewNotification[]): Promise<number> {
  if (!rows.length) return 0;
  // A cut excerpt may end in half a surrogate pair, which jsonb refuses.
  const input = rows.map((newNotification) => ({
    id: newId(),
    tenant_id: newNotification.tenantId,
    user_id: newNotification.userId,
    actor_id: newNotification.actorId,
    event_id: newNotification.eventId,
    kind: newNotification.kind,
    path: storable(newNotification.path, "\ufffd"),
    excerpt: storable(newNotification.excerpt, "\ufffd"),
  }));
  const [row] = await hotQuery<{ added: number }>(
    db,
    Prisma.sql`
    WITH added AS (
      INSERT INTO notifications (id, tenant_id, user_id, actor_id, event_id, kind, path, excerpt)
      SELECT x.id, x.tenant_id, x.user_id, x.actor_id, x.event_id, x.kind::"NotificationKind", x.path, x.excerpt
      FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS x(id text, tenant_id text, user_id text,
        actor_id text, event_id text, kind text, path text, excerpt text)
      ON CONFLICT DO NOTHING
      RETURNING 1
    )
    SELECT count(*)::int AS added FROM added`,
  );
  return row!.added;
}
