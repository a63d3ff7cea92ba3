import { z } from "zod";
import { ConflictError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { emit } from "../events.ts";
import { inStudio } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { optionalText, text } from "../validation.ts";

export const createCommitment = defineAction({
  name: "create_commitment",
  needs: ["studio"],
  description: "Propose a commitment that becomes active once enough people join",
  params: z.object({
    title: text(200),
    critical_mass: z
      .number()
      .int("a whole number")
      .min(1, "at least 1")
      .max(10_000, "at most 10000")
      .describe("how many people must join"),
    description: optionalText(10_000, "what joining means").meta({ multiline: true, mentions: true }),
  }),
  writes: true,
  audience: inStudio("commitment"),
  async execute(ctx, params, scope) {
    const { studio } = scope;
    const commitment = await ctx.tx.commitment.create({
      data: {
        id: newId(),
        tenantId: ctx.tenant.id,
        studioId: studio.id,
        authorId: ctx.actor.id,
        title: params.title,
        description: params.description ?? "",
        criticalMass: params.critical_mass,
      },
    });
    await emit(ctx, {
      type: "commitment.created",
      studioId: studio.id,
      subjectType: "commitment",
      subjectId: commitment.id,
    });
    return {
      status: 201,
      location: `/studios/${studio.handle}/commitments/${commitment.id}`,
      notice: "Commitment proposed",
    };
  },
});

export const joinCommitment = defineAction({
  name: "join_commitment",
  needs: ["studio", "commitment"],
  description: "Join this commitment",
  params: z.object({}),
  writes: true,
  audience: inStudio("commitment sign-up"),
  async execute(ctx, _params, scope) {
    const { studio } = scope;
    const commitment = scope.commitment;
    // Lock the commitment so concurrent joins see each other and activation happens exactly once.
    await ctx.tx.$queryRaw`SELECT id FROM commitments WHERE id = ${commitment.id} FOR UPDATE`;
    const created = await ctx.tx.commitmentParticipant.createMany({
      data: [{ commitmentId: commitment.id, userId: ctx.actor.id, tenantId: ctx.tenant.id }],
      skipDuplicates: true,
    });
    if (!created.count) throw new ConflictError("You have already joined this commitment");
    const path = `/studios/${studio.handle}/commitments/${commitment.id}`;
    const event = {
      studioId: studio.id,
      subjectType: "commitment",
      subjectId: commitment.id,
    };
    await emit(ctx, { ...event, type: "commitment.joined" });
    const current = await ctx.tx.commitment.findUniqueOrThrow({
      where: { id: commitment.id },
      include: { _count: { select: { participants: true } } },
    });
    if (!current.activatedAt && current._count.participants >= current.criticalMass) {
      await ctx.tx.commitment.update({ where: { id: commitment.id }, data: { activatedAt: new Date() } });
      await emit(ctx, { ...event, type: "commitment.activated" });
      return {
        status: 200,
        location: path,
        notice: "You joined — critical mass reached, the commitment is active",
      };
    }
    return { status: 200, location: path, notice: "You joined" };
  },
});
