// What a content event is about, loaded once for the notifier and the agent dispatcher.
import { type Db, hotQuery } from "../db/prisma.ts";
import { type Event, Prisma } from "../generated/prisma/client.ts";

export interface Subject {
  /** What was created: a note, decision, commitment or comment. */
  kind: "note" | "decision" | "commitment" | "comment";
  id: string;
  studioId: string;
  text: string;
  /** The page it lives on. */
  path: string;
  /** That page's title. */
  title: string;
  authorId: string;
  /** For a comment: who wrote the comment it replies to. */
  parentAuthorId?: string;
  /** For a comment: who wrote the note/decision/commitment it is on. */
  subjectAuthorId?: string;
  /** For a comment: the thread it belongs to. */
  thread?: { type: "note" | "decision" | "commitment"; id: string };
}

export const CONTENT_EVENTS = new Set([
  "note.created",
  "decision.created",
  "commitment.created",
  "comment.created",
]);

type PageKind = "note" | "decision" | "commitment";

interface Row {
  event: Omit<Event, "createdAt" | "publishedAt"> & { createdAt: string; publishedAt: string | null };
  /** The studio's handle. */
  studio: string | null;
  comment: {
    id: string;
    text: string;
    authorId: string;
    parentAuthorId: string | null;
    on: PageKind;
    onId: string;
  } | null;
  /** The note, decision or commitment: the event's own, or the one a comment is on. */
  page: { title: string; body: string; authorId: string } | null;
}

/**
 * An event and what it is about, in one statement: its studio, and for a comment the
 * comment, whom it replies to and the page it is on; for a note, decision or commitment, that
 * page. Every content event's job reads it before anything else (a mention's run waits on
 * it), and it was five Prisma reads in three waves.
 */
export async function readEvent(
  db: Db,
  id: string,
): Promise<{ event: Event; subject: Subject | null } | null> {
  const [row] = await hotQuery<{ r: Row }>(
    db,
    Prisma.sql`
    SELECT json_build_object(
      'event', json_build_object('id', e.id, 'tenantId', e.tenant_id, 'type', e.type, 'actorId', e.actor_id,
        'studioId', e.studio_id, 'subjectType', e.subject_type, 'subjectId', e.subject_id,
        'parentChain', e.parent_chain, 'payload', e.payload, 'runId', e.run_id, 'traceparent', e.traceparent,
        'createdAt', e.created_at AT TIME ZONE 'UTC', 'publishedAt', e.published_at AT TIME ZONE 'UTC'),
      'studio', s.handle,
      'comment', CASE WHEN c.id IS NOT NULL THEN json_build_object('id', c.id, 'text', c.text,
        'authorId', c.author_id, 'parentAuthorId', parent.author_id, 'on', c.subject_type, 'onId', c.subject_id) END,
      'page', (SELECT json_build_object('title', x.title, 'body', x.body, 'authorId', x.author_id) FROM (
          SELECT n.title, n.text AS body, n.author_id FROM notes n
          WHERE target.kind = 'note' AND n.id = target.id AND n.tenant_id = e.tenant_id
          UNION ALL
          SELECT d.question, d.description, d.author_id FROM decisions d
          WHERE target.kind = 'decision' AND d.id = target.id AND d.tenant_id = e.tenant_id
          UNION ALL
          SELECT m.title, m.description, m.author_id FROM commitments m
          WHERE target.kind = 'commitment' AND m.id = target.id AND m.tenant_id = e.tenant_id) x)
    ) AS r
    FROM events e
    LEFT JOIN studios s ON s.id = e.studio_id AND s.tenant_id = e.tenant_id
    LEFT JOIN comments c ON e.type = 'comment.created' AND c.id = e.subject_id AND c.tenant_id = e.tenant_id
    LEFT JOIN comments parent ON parent.id = c.parent_id
    CROSS JOIN LATERAL (SELECT COALESCE(c.subject_type::text, split_part(e.type, '.', 1)) AS kind,
      COALESCE(c.subject_id, e.subject_id) AS id) target
    WHERE e.id = ${id}`,
  );
  if (!row) return null;
  const { event: stored } = row.r;
  const event: Event = {
    ...stored,
    createdAt: new Date(stored.createdAt),
    publishedAt: stored.publishedAt ? new Date(stored.publishedAt) : null,
  };
  return { event, subject: subjectOf(event, row.r) };
}

/** A page as a subject shows it: a note without a title is "Untitled note"; its text leads with its title. */
function pageOf(kind: PageKind, page: Row["page"]) {
  return (
    page && {
      title: kind === "note" ? page.title || "Untitled note" : page.title,
      text: `${page.title}\n\n${page.body}`.trim(),
      authorId: page.authorId,
    }
  );
}

function subjectOf(event: Event, row: Row): Subject | null {
  if (!CONTENT_EVENTS.has(event.type) || !event.studioId || !row.studio) return null;
  const base = `/studios/${row.studio}`;
  if (event.type === "comment.created") {
    const comment = row.comment;
    if (!comment) return null;
    const commentedPage = pageOf(comment.on, row.page);
    return {
      kind: "comment",
      id: comment.id,
      studioId: event.studioId,
      text: comment.text,
      path: `${base}/${comment.on}s/${comment.onId}`,
      title: commentedPage?.title ?? "",
      authorId: comment.authorId,
      parentAuthorId: comment.parentAuthorId ?? undefined,
      subjectAuthorId: commentedPage?.authorId,
      thread: { type: comment.on, id: comment.onId },
    };
  }
  const kind = event.type.split(".")[0] as PageKind;
  const page = pageOf(kind, row.page);
  return (
    page && {
      kind,
      id: event.subjectId,
      studioId: event.studioId,
      text: page.text,
      path: `${base}/${kind}s/${event.subjectId}`,
      title: page.title,
      authorId: page.authorId,
    }
  );
}

/** What `e` is about; null for an event that is not about content. */
export async function loadSubject(db: Db, event: Event): Promise<Subject | null> {
  if (!CONTENT_EVENTS.has(event.type) || !event.studioId) return null;
  return (await readEvent(db, event.id))?.subject ?? null;
}
