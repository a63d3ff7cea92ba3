// What a content event is about, loaded once for the notifier and the agent dispatcher.
import type { Db } from "../db/prisma.ts";
import type { Event } from "../generated/prisma/client.ts";

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

async function page(db: Db, type: "note" | "decision" | "commitment", id: string) {
  if (type === "note") {
    const n = await db.note.findUnique({ where: { id } });
    return (
      n && { title: n.title || "Untitled note", text: `${n.title}\n\n${n.text}`.trim(), authorId: n.authorId }
    );
  }
  if (type === "decision") {
    const d = await db.decision.findUnique({ where: { id } });
    return d && { title: d.question, text: `${d.question}\n\n${d.description}`.trim(), authorId: d.authorId };
  }
  const c = await db.commitment.findUnique({ where: { id } });
  return c && { title: c.title, text: `${c.title}\n\n${c.description}`.trim(), authorId: c.authorId };
}

export async function loadSubject(db: Db, e: Event): Promise<Subject | null> {
  if (!CONTENT_EVENTS.has(e.type) || !e.studioId) return null;
  const studio = await db.studio.findUnique({ where: { id: e.studioId } });
  if (!studio) return null;
  const base = `/studios/${studio.handle}`;
  if (e.type === "comment.created") {
    const c = await db.comment.findUnique({ where: { id: e.subjectId }, include: { parent: true } });
    if (!c) return null;
    const on = await page(db, c.subjectType, c.subjectId);
    return {
      kind: "comment",
      id: c.id,
      studioId: studio.id,
      text: c.text,
      path: `${base}/${c.subjectType}s/${c.subjectId}`,
      title: on?.title ?? "",
      authorId: c.authorId,
      parentAuthorId: c.parent?.authorId,
      subjectAuthorId: on?.authorId,
      thread: { type: c.subjectType, id: c.subjectId },
    };
  }
  const kind = e.type.split(".")[0] as "note" | "decision" | "commitment";
  const p = await page(db, kind, e.subjectId);
  return (
    p && {
      kind,
      id: e.subjectId,
      studioId: studio.id,
      text: p.text,
      path: `${base}/${kind}s/${e.subjectId}`,
      title: p.title,
      authorId: p.authorId,
    }
  );
}
