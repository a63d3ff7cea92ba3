import { loadNote, loadStudio } from "../access.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { definePage, defineReadPage } from "../registry/types.ts";
import { pager, paging, studioCrumbs, when, who } from "./format.ts";
import { editedBeforeApproval, editedMark } from "./pending-format.ts";
import { studioNotes } from "./studio-reads.ts";
import { watchBlocks } from "./subscriptions.ts";
import { reviewableIn } from "./thread-reviews.ts";
import { threadBlocks, threadFeed } from "./threads.ts";

export const notesPage = defineReadPage({
  pattern: "/studios/:studio/notes",
  actions: ["create_note"],
  resolve: async (ctx, params) => ({ studio: await loadStudio(ctx, params.studio) }),
  async view(ctx, params, query) {
    const paged = paging(query);
    const { studio, notes, total } = await studioNotes(ctx, params.studio, paged);
    const lines = notes.map(
      (note) =>
        `- ${link(note.title || "Untitled note", `/studios/${studio.handle}/notes/${note.id}`)} — ${who(note.author)}, ${when(note.createdAt)}${note.pinned ? " · pinned" : ""}`,
    );
    const view = {
      title: `Notes in ${studio.name}`,
      breadcrumb: [...studioCrumbs(studio), { label: "Notes" }],
      blocks: [
        { md: lines.length ? lines.join("\n") : "_No notes yet._" },
        { md: pager(`/studios/${studio.handle}/notes`, paged, total) },
      ],
    };
    return { scope: { studio }, view };
  },
});

/** "Confirmed read by Alice Adams and Agent scout (AI)", or that nobody has yet. */
function readLine(reads: { user: { name: string; kind: string } }[]): string {
  if (!reads.length) return "Nobody has confirmed reading it yet";
  const names = reads.map((r) => `${mdEscape(r.user.name)}${r.user.kind === "subagent" ? " (AI)" : ""}`);
  const list = names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)}` : names[0];
  return `Confirmed read by ${list}${reads.length === 10 ? " and others" : ""}`;
}

export const notePage = definePage({
  pattern: "/studios/:studio/notes/:note",
  actions: [
    "add_comment",
    "confirm_read",
    "pin_note",
    "unpin_note",
    "update_note",
    "subscribe",
    "unsubscribe",
    "approve_action",
    "reject_action",
  ],
  async resolve(ctx, params) {
    const studio = await loadStudio(ctx, params.studio);
    const note = await loadNote(ctx, studio, params.note);
    // Approve and Reject beside a reply waiting here, for whoever may review it (thread-reviews.ts).
    return { studio, note, reviewable: await reviewableIn(ctx, note.id) };
  },
  async render(ctx, scope, query) {
    const studio = scope.studio;
    const note = scope.note;
    const path = `/studios/${studio.handle}/notes/${note.id}`;
    const [author, reads, mine, thread, watch, edited] = await Promise.all([
      ctx.db.user.findUniqueOrThrow({ where: { id: note.authorId } }),
      // Confirmed reads, named: an agent that opened the note without confirming is not among them.
      ctx.db.noteRead.findMany({
        where: { noteId: note.id },
        orderBy: { confirmedAt: "asc" },
        take: 10,
        include: { user: { select: { name: true, kind: true } } },
      }),
      ctx.db.noteRead.findUnique({ where: { noteId_userId: { noteId: note.id, userId: ctx.actor.id } } }),
      threadBlocks(ctx, "note", note.id, path, query),
      watchBlocks(ctx, scope),
      editedBeforeApproval(ctx, [note.id]),
    ]);
    const meta = [
      `By ${who(author)} · ${when(note.createdAt)}${editedMark(edited.get(note.id))}`,
      note.updatedAt.getTime() - note.createdAt.getTime() > 1000 ? `edited ${when(note.updatedAt)}` : null,
      note.pinnedAt ? "pinned" : null,
      `note \`${note.id}\``,
    ].filter(Boolean);
    return {
      title: note.title || "Untitled note",
      breadcrumb: [
        ...studioCrumbs(studio),
        { label: "Notes", path: `/studios/${studio.handle}/notes` },
        { label: note.title || "Note" },
      ],
      blocks: [
        { md: meta.join(" · ") },
        { md: quote(note.text) },
        {
          md: `${readLine(reads)}${mine ? ` — you confirmed at ${when(mine.confirmedAt)}` : ""}.`,
        },
        ...watch,
        ...thread.blocks,
      ],
      live: { since: thread.since },
    };
  },
  live: (ctx, scope) => threadFeed(ctx, "note", scope.note.id),
});
