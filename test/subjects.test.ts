// What a content event is about (services/subjects.ts), read in one statement for the
// notifier and the dispatcher: the studio, the comment, whom it replies to and the page
// it is on, or the note/decision itself. Events are written by real actions.
import { describe, expect, it } from "vitest";
import { readEvent } from "../src/services/subjects.ts";
import { act, makeWorld, testPrisma } from "./helpers/app.ts";

const db = testPrisma();

/** The newest event of `type` in the world's tenant. */
async function newest(tenantId: string, type: string) {
  return db.event.findFirstOrThrow({ where: { tenantId, type }, orderBy: { createdAt: "desc" } });
}

describe("readEvent", () => {
  it("a reply on an untitled note: the comment, whom it replies to, the note's author and its page", async () => {
    const w = await makeWorld("sj");
    const note = await act(w, w.alice, "/studios/general/notes", "create_note", {
      text: "Budget for the offsite",
    });
    await act(w, w.bob, note.location!, "add_comment", { text: "First thoughts" });
    const first = await newest(w.tenant.id, "comment.created");
    await act(w, w.alice, note.location!, "add_comment", { text: "@bob agreed", reply_to: first.subjectId });
    const reply = await newest(w.tenant.id, "comment.created");

    const read = await readEvent(db, reply.id);
    expect(read!.event).toEqual(await db.event.findUniqueOrThrow({ where: { id: reply.id } }));
    const noteId = note.location!.split("/").pop()!;
    expect(read!.subject).toEqual({
      kind: "comment",
      id: reply.subjectId,
      studioId: w.studio.id,
      text: "@bob agreed",
      path: `/studios/general/notes/${noteId}`,
      title: "Untitled note",
      authorId: w.alice.id,
      parentAuthorId: w.bob.id,
      subjectAuthorId: w.alice.id,
      thread: { type: "note", id: noteId },
    });
    // A comment that replies to nobody has no parent author.
    expect((await readEvent(db, first.id))!.subject).toMatchObject({
      authorId: w.bob.id,
      parentAuthorId: undefined,
    });
  });

  it("a decision is its own subject, its text the question and its description; other events have none", async () => {
    const w = await makeWorld("sj");
    const d = await act(w, w.bob, "/studios/general/decisions", "create_decision", {
      question: "Lisbon or Porto?",
      description: "Ask @alice first",
    });
    const created = await newest(w.tenant.id, "decision.created");
    expect((await readEvent(db, created.id))!.subject).toEqual({
      kind: "decision",
      id: created.subjectId,
      studioId: w.studio.id,
      text: "Lisbon or Porto?\n\nAsk @alice first",
      path: d.location,
      title: "Lisbon or Porto?",
      authorId: w.bob.id,
    });
    const other = await db.event.create({
      data: {
        id: `x${created.id}`,
        tenantId: w.tenant.id,
        type: "run.completed",
        actorId: w.bob.id,
        subjectType: "run",
        subjectId: "none",
      },
    });
    expect(await readEvent(db, other.id)).toMatchObject({ event: { id: other.id }, subject: null });
    expect(await readEvent(db, "no-such-event")).toBeNull();
  });
});
