import { z } from "zod";
import { ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { emit } from "../events.ts";
import { inStudio } from "../registry/audiences.ts";
import { type Ctx, defineAction, type Scope, type ScopeWith } from "../registry/types.ts";
import { longText, optionalText } from "../validation.ts";

const notePath = (scope: ScopeWith<"studio" | "note">) =>
  `/studios/${scope.studio.handle}/notes/${scope.note.id}`;
const authorOrAdmin = (ctx: Ctx, scope: Scope) =>
  scope.note?.authorId === ctx.actor.id || scope.studio?.role === "admin"
    ? null
    : "only the author or a studio admin can do this";

export const createNote = defineAction({
  name: "create_note",
  needs: ["studio"],
  description: "Post a note in this studio",
  params: z.object({
    text: longText(20_000, "markdown; @handle mentions someone").meta({ mentions: true }),
    title: optionalText(200),
  }),
  writes: true,
  audience: inStudio("note"),
  async execute(ctx, params, scope) {
    const { studio } = scope;
    const note = await ctx.tx.note.create({
      data: {
        id: newId(),
        tenantId: ctx.tenant.id,
        studioId: studio.id,
        authorId: ctx.actor.id,
        title: params.title ?? "",
        text: params.text,
      },
    });
    await emit(ctx, {
      type: "note.created",
      studioId: studio.id,
      subjectType: "note",
      subjectId: note.id,
    });
    return { status: 201, location: `/studios/${studio.handle}/notes/${note.id}`, notice: "Note posted" };
  },
});

export const updateNote = defineAction({
  name: "update_note",
  needs: ["note", "studio"],
  description: "Edit this note's title or text",
  params: z.object({
    text: longText(20_000).meta({ clears: true, mentions: true }).optional(),
    title: optionalText(200).meta({ clears: true }),
  }),
  writes: true,
  audience: inStudio("note edit"),
  current: (scope) => ({ text: scope.note?.text, title: scope.note?.title }),
  available: (ctx, scope) =>
    scope.note?.authorId === ctx.actor.id ? null : "only the author can edit a note",
  async execute(ctx, params, scope) {
    const { note } = scope;
    if (params.text === undefined && params.title === undefined)
      throw new ValidationError([{ field: "", message: "give a text or a title to change" }]);
    await ctx.tx.note.update({
      where: { id: note.id },
      data: {
        ...(params.text !== undefined && { text: params.text }),
        ...(params.title !== undefined && { title: params.title }),
      },
    });
    await emit(ctx, {
      type: "note.updated",
      studioId: note.studioId,
      subjectType: "note",
      subjectId: note.id,
    });
    return { status: 200, location: notePath(scope), notice: "Note updated" };
  },
});

function pinAction(pin: boolean) {
  return defineAction({
    name: pin ? "pin_note" : "unpin_note",
    needs: ["note", "studio"],
    description: pin ? "Pin this note to the top of the studio" : "Unpin this note",
    params: z.object({}),
    writes: true,
    audience: inStudio(pin ? "pin" : "unpin"),
    available: (ctx, scope) =>
      authorOrAdmin(ctx, scope) ??
      (Boolean(scope.note?.pinnedAt) === pin ? (pin ? "already pinned" : "not pinned") : null),
    async execute(ctx, _params, scope) {
      const { note } = scope;
      // Pinning is not an edit: keep updatedAt, which the note page shows as "edited".
      await ctx.tx.note.update({
        where: { id: note.id },
        data: { pinnedAt: pin ? new Date() : null, updatedAt: note.updatedAt },
      });
      await emit(ctx, {
        type: pin ? "note.pinned" : "note.unpinned",
        studioId: note.studioId,
        subjectType: "note",
        subjectId: note.id,
      });
      return { status: 200, location: notePath(scope), notice: pin ? "Pinned" : "Unpinned" };
    },
  });
}

export const pinNote = pinAction(true);
export const unpinNote = pinAction(false);

export const confirmRead = defineAction({
  name: "confirm_read",
  needs: ["note", "studio"],
  description: "Confirm you have read this note",
  params: z.object({}),
  writes: true,
  audience: inStudio("read confirmation"),
  async execute(ctx, _params, scope) {
    const { note } = scope;
    // Idempotent: confirming twice keeps the first time and writes no second event.
    const created = await ctx.tx.noteRead.createMany({
      data: [{ noteId: note.id, userId: ctx.actor.id, tenantId: ctx.tenant.id }],
      skipDuplicates: true,
    });
    if (created.count)
      await emit(ctx, {
        type: "note.read_confirmed",
        studioId: note.studioId,
        subjectType: "note",
        subjectId: note.id,
      });
    return {
      status: 200,
      location: notePath(scope),
      notice: created.count ? "Marked as read" : "You had already confirmed",
    };
  },
});
