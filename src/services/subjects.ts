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

type Content = Omit<Subject, "studioId" | "path">;

/** A comment, what it replies to, and the page it is on. */
async function commentContent(db: Db, id: string): Promise<Content | null> {
  const c = await db.comment.findUnique({ where: { id }, include: { parent: true } });
  if (!c) return null;
  const on = await page(db, c.subjectType, c.subjectId);
  return {
    kind: "comment",
    id: c.id,
    text: c.text,
    title: on?.title ?? "",
    authorId: c.authorId,
    parentAuthorId: c.parent?.authorId,
    subjectAuthorId: on?.authorId,
    thread: { type: c.subjectType, id: c.subjectId },
  };
}

async function pageContent(
  db: Db,
  kind: "note" | "decision" | "commitment",
  id: string,
): Promise<Content | null> {
  const p = await page(db, kind, id);
  return p && { kind, id, text: p.text, title: p.title, authorId: p.authorId };
}

export async function loadSubject(db: Db, e: Event): Promise<Subject | null> {
  if (!CONTENT_EVENTS.has(e.type) || !e.studioId) return null;
  // The studio and the content are read at once: the dispatcher waits on both before a run can start.
  const [studio, content] = await Promise.all([
    db.studio.findUnique({ where: { id: e.studioId }, select: { handle: true } }),
    e.type === "comment.created"
      ? commentContent(db, e.subjectId)
      : pageContent(db, e.type.split(".")[0] as "note" | "decision" | "commitment", e.subjectId),
  ]);
  if (!studio || !content) return null;
  // A comment lives on its thread's page.
  const on = content.thread ?? { type: content.kind, id: content.id };
  return { ...content, studioId: e.studioId, path: `/studios/${studio.handle}/${on.type}s/${on.id}` };
}
