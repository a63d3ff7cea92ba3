import { z } from "zod";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { emit } from "../events.ts";
import { inStudio } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { idSchema, longText, optionalText, text } from "../validation.ts";

const MAX_OPTIONS = 50;

export const createDecision = defineAction({
  name: "create_decision",
  needs: ["studio"],
  description: "Ask the studio to decide something",
  params: z.object({
    question: text(300),
    description: optionalText(10_000, "context; @handle mentions someone").meta({
      multiline: true,
      mentions: true,
    }),
    options: longText(5_000, "one option per line").optional(),
  }),
  writes: true,
  audience: inStudio("decision"),
  async execute(ctx, params, scope) {
    const { studio } = scope;
    const titles = [
      ...new Set(
        (params.options ?? "")
          .split(/\r?\n/)
          .map((t) => t.trim())
          .filter(Boolean),
      ),
    ];
    const tooLong = titles.find((t) => t.length > 200);
    if (tooLong)
      throw new ValidationError([{ field: "options", message: "each option is at most 200 characters" }]);
    if (titles.length > MAX_OPTIONS)
      throw new ValidationError([{ field: "options", message: `at most ${MAX_OPTIONS} options` }]);
    const decision = await ctx.tx.decision.create({
      data: {
        id: newId(),
        tenantId: ctx.tenant.id,
        studioId: studio.id,
        authorId: ctx.actor.id,
        question: params.question,
        description: params.description ?? "",
        options: {
          create: titles.map((title) => ({
            id: newId(),
            tenantId: ctx.tenant.id,
            authorId: ctx.actor.id,
            title,
          })),
        },
      },
    });
    await emit(ctx, {
      type: "decision.created",
      studioId: studio.id,
      subjectType: "decision",
      subjectId: decision.id,
    });
    return {
      status: 201,
      location: `/studios/${studio.handle}/decisions/${decision.id}`,
      notice: "Decision created",
    };
  },
});

export const addOption = defineAction({
  name: "add_option",
  needs: ["studio", "decision"],
  description: "Add an option to this decision",
  params: z.object({ title: text(200) }),
  writes: true,
  audience: inStudio("option"),
  async execute(ctx, params, scope) {
    const { studio } = scope;
    const { decision } = scope;
    const count = await ctx.tx.decisionOption.count({ where: { decisionId: decision.id } });
    if (count >= MAX_OPTIONS) throw new ConflictError(`This decision already has ${MAX_OPTIONS} options`);
    const created = await ctx.tx.decisionOption.createMany({
      data: [
        {
          id: newId(),
          tenantId: ctx.tenant.id,
          decisionId: decision.id,
          authorId: ctx.actor.id,
          title: params.title,
        },
      ],
      skipDuplicates: true,
    });
    if (!created.count) throw new ConflictError(`An option “${params.title}” already exists`);
    await emit(ctx, {
      type: "option.added",
      studioId: studio.id,
      subjectType: "decision",
      subjectId: decision.id,
      payload: { title: params.title },
    });
    return {
      status: 201,
      location: `/studios/${studio.handle}/decisions/${decision.id}`,
      notice: "Option added",
    };
  },
});

export const vote = defineAction({
  name: "vote",
  needs: ["studio", "decision"],
  description: "Vote on an option: accept it, prefer it, or both",
  params: z.object({
    option_id: idSchema.meta({ description: "the option's id, from the results table", pickedBeside: true }),
    accept: z.boolean().describe("you could live with this option"),
    prefer: z.boolean().describe("this is one of your favourites"),
  }),
  writes: true,
  audience: inStudio("vote"),
  async execute(ctx, params, scope) {
    const { studio } = scope;
    const { decision } = scope;
    const option = await ctx.tx.decisionOption.findFirst({
      where: { id: params.option_id, decisionId: decision.id },
    });
    if (!option)
      throw new ValidationError([{ field: "option_id", message: "no such option on this decision" }]);
    await ctx.tx.vote.upsert({
      where: { optionId_userId: { optionId: option.id, userId: ctx.actor.id } },
      create: {
        optionId: option.id,
        userId: ctx.actor.id,
        decisionId: decision.id,
        tenantId: ctx.tenant.id,
        accepted: params.accept,
        preferred: params.prefer,
      },
      update: { accepted: params.accept, preferred: params.prefer },
    });
    await emit(ctx, {
      type: "vote.cast",
      studioId: studio.id,
      subjectType: "decision",
      subjectId: decision.id,
      payload: { optionId: option.id, accept: params.accept, prefer: params.prefer },
    });
    return {
      status: 200,
      location: `/studios/${studio.handle}/decisions/${decision.id}`,
      notice: `Vote recorded for “${option.title}”`,
    };
  },
});
