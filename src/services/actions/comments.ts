import { z } from "zod";
import { ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { emit } from "../events.ts";
import { commentChain } from "../pages/comments.ts";
import { inStudio } from "../registry/audiences.ts";
import { defineAction, type Scope } from "../registry/types.ts";
import { idSchema, longText } from "../validation.ts";

function subjectOf(scope: Scope) {
  if (scope.note) return { type: "note" as const, id: scope.note.id, path: "notes" };
  if (scope.decision) return { type: "decision" as const, id: scope.decision.id, path: "decisions" };
  if (scope.commitment) return { type: "commitment" as const, id: scope.commitment.id, path: "commitments" };
  throw new Error("add_comment needs a note, decision or commitment in scope");
}

export const addComment = defineAction({
  name: "add_comment",
  needs: ["studio"],
  description: "Comment here, or reply to a comment",
  params: z.object({
    text: longText(10_000, "markdown; @handle mentions someone").meta({ mentions: true }),
    // A person replies with the Reply link under a comment, never by typing its id.
    reply_to: idSchema.optional().meta({
      label: "Reply to",
      description: "id of the comment you are replying to",
      pickedBeside: "field",
    }),
  }),
  writes: true,
  audience: inStudio("comment"),
  async execute(ctx, params, scope) {
    const { studio } = scope;
    const subject = subjectOf(scope);
    if (params.reply_to) {
      const parent = await ctx.tx.comment.findFirst({
        where: {
          id: params.reply_to,
          tenantId: ctx.tenant.id,
          subjectType: subject.type,
          subjectId: subject.id,
        },
      });
      if (!parent)
        throw new ValidationError([{ field: "reply_to", message: "no such comment on this page" }]);
    }
    const comment = await ctx.tx.comment.create({
      data: {
        id: newId(),
        tenantId: ctx.tenant.id,
        studioId: studio.id,
        authorId: ctx.actor.id,
        subjectType: subject.type,
        subjectId: subject.id,
        parentId: params.reply_to ?? null,
        text: params.text,
        runId: ctx.run?.id ?? null,
      },
    });
    await emit(ctx, {
      type: "comment.created",
      studioId: studio.id,
      subjectType: "comment",
      subjectId: comment.id,
      parentChain: await commentChain(ctx.tx, comment.parentId, subject.type, subject.id),
    });
    return {
      status: 201,
      location: `/studios/${studio.handle}/${subject.path}/${subject.id}`,
      notice: params.reply_to ? "Reply posted" : "Comment posted",
    };
  },
});
