import { z } from "zod";
import { conflictOnDuplicate } from "../../db/prisma.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { agentsLeaveWithOwner } from "../agents/core/owner-left.ts";
import { emit } from "../events.ts";
import { pausedNotice, pauseEndpointsOf } from "../reach/endpoint-pause.ts";
import { inStudio, toSelf } from "../registry/audiences.ts";
import { type ActionCtx, defineAction, type Scope } from "../registry/types.ts";
import { handleSchema, optionalText, text } from "../validation.ts";

const adminOnly = (_ctx: unknown, scope: Scope) =>
  scope.studio?.role === "admin" ? null : "only studio admins can do this";

/** Who leaves `studio` (or its admins), for pausing what they set up there and telling who is left. */
const departureIn = (
  ctx: Pick<ActionCtx, "tenant" | "actor" | "origin">,
  studio: { id: string; name: string },
  person: { id: string; handle: string },
) => ({
  tenantId: ctx.tenant.id,
  actorId: ctx.actor.id,
  studio: { id: studio.id, name: studio.name },
  person,
  ...(ctx.origin && { origin: ctx.origin }),
});

export function inviteCode(): string {
  return newId(10);
}

export const createStudio = defineAction({
  name: "create_studio",
  description: "Create a studio; you become its admin",
  params: z.object({
    name: text(80),
    handle: handleSchema.describe("used in the studio's address: /studios/<handle>"),
    description: optionalText(2000, "what the studio is for"),
  }),
  writes: true,
  audience: toSelf("studio"),
  async execute(ctx, params) {
    const taken = await ctx.tx.studio.findUnique({
      where: { tenantId_handle: { tenantId: ctx.tenant.id, handle: params.handle } },
    });
    if (taken) throw new ConflictError(`A studio with handle \`${params.handle}\` already exists`);
    const studio = await ctx.tx.studio
      .create({
        data: {
          id: newId(),
          tenantId: ctx.tenant.id,
          handle: params.handle,
          name: params.name,
          description: params.description ?? "",
          inviteCode: inviteCode(),
          createdById: ctx.actor.id,
          members: { create: { userId: ctx.actor.id, tenantId: ctx.tenant.id, role: "admin" } },
        },
      })
      .catch(conflictOnDuplicate(`A studio with handle \`${params.handle}\` already exists`));
    await emit(ctx, {
      type: "studio.created",
      studioId: studio.id,
      subjectType: "studio",
      subjectId: studio.id,
    });
    return { status: 201, location: `/studios/${studio.handle}`, notice: `Created studio ${studio.name}` };
  },
});

export const joinStudio = defineAction({
  name: "join_studio",
  description: "Join a studio with its invite code",
  params: z.object({ invite_code: z.string().trim().min(1, "must not be empty").max(64) }),
  writes: true,
  audience: toSelf("membership"),
  async execute(ctx, params) {
    const studio = await ctx.tx.studio.findUnique({
      where: { tenantId_inviteCode: { tenantId: ctx.tenant.id, inviteCode: params.invite_code } },
    });
    if (!studio)
      throw new ValidationError([{ field: "invite_code", message: "no studio has this invite code" }]);
    const existing = await ctx.tx.studioMember.findUnique({
      where: { studioId_userId: { studioId: studio.id, userId: ctx.actor.id } },
    });
    if (existing) throw new ConflictError(`You are already a member of ${studio.name}`);
    await ctx.tx.studioMember
      .create({ data: { studioId: studio.id, userId: ctx.actor.id, tenantId: ctx.tenant.id } })
      .catch(conflictOnDuplicate(`You are already a member of ${studio.name}`));
    await emit(ctx, {
      type: "studio.joined",
      studioId: studio.id,
      subjectType: "studio",
      subjectId: studio.id,
    });
    return { status: 200, location: `/studios/${studio.handle}`, notice: `You joined ${studio.name}` };
  },
});

export const updateStudio = defineAction({
  name: "update_studio",
  needs: ["studio"],
  description: "Rename the studio or change its description",
  params: z.object({
    name: optionalText(80).meta({ clears: true }),
    description: optionalText(2000).meta({ multiline: true, clears: true }),
  }),
  writes: true,
  audience: inStudio("studio description"),
  available: adminOnly,
  current: (scope) => ({ name: scope.studio?.name, description: scope.studio?.description }),
  async execute(ctx, params, scope) {
    const { studio } = scope;
    if (params.name === undefined && params.description === undefined)
      throw new ValidationError([{ field: "", message: "give a name or a description to change" }]);
    if (params.name !== undefined && params.name.length === 0)
      throw new ValidationError([{ field: "name", message: "must not be empty" }]);
    await ctx.tx.studio.update({
      where: { id: studio.id },
      data: {
        ...(params.name !== undefined && { name: params.name }),
        ...(params.description !== undefined && { description: params.description }),
      },
    });
    await emit(ctx, {
      type: "studio.updated",
      studioId: studio.id,
      subjectType: "studio",
      subjectId: studio.id,
    });
    return { status: 200, location: `/studios/${studio.handle}`, notice: "Studio updated" };
  },
});

async function memberOf(ctx: Parameters<typeof updateStudio.execute>[0], studioId: string, handle: string) {
  const member = await ctx.tx.studioMember.findFirst({
    where: { studioId, tenantId: ctx.tenant.id, user: { handle } },
    include: { user: true },
  });
  if (!member) throw new NotFoundError(`@${handle} is not a member of this studio`);
  return member;
}

/** A studio must always keep an admin, or nobody could manage it again. */
async function assertAnotherAdmin(ctx: Parameters<typeof updateStudio.execute>[0], studioId: string) {
  const admins = await ctx.tx.studioMember.count({ where: { studioId, role: "admin" } });
  if (admins <= 1) throw new ConflictError("A studio needs at least one admin; promote someone else first");
}

export const updateMemberRole = defineAction({
  name: "update_member_role",
  needs: ["studio"],
  description: "Make a member an admin, or an admin a member",
  // Picked with the buttons beside each member: never typed, and no role is preselected.
  params: z.object({
    handle: handleSchema.meta({ label: "Member", pickedBeside: true }),
    role: z.enum(["admin", "member"]).meta({ label: "Role", pickedBeside: true }),
  }),
  writes: true,
  audience: inStudio("role change"),
  available: adminOnly,
  async execute(ctx, params, scope) {
    const { studio } = scope;
    // Lock the studio's member rows so two demotions cannot both pass the last-admin check.
    await ctx.tx.$queryRaw`SELECT 1 FROM studio_members WHERE studio_id = ${studio.id} FOR UPDATE`;
    const member = await memberOf(ctx, studio.id, params.handle);
    if (member.role === params.role)
      return {
        status: 200,
        location: `/studios/${studio.handle}/members`,
        notice: `@${params.handle} is already ${params.role}`,
      };
    if (member.role === "admin") await assertAnotherAdmin(ctx, studio.id);
    await ctx.tx.studioMember.update({
      where: { studioId_userId: { studioId: studio.id, userId: member.userId } },
      data: { role: params.role },
    });
    const paused =
      member.role === "admin"
        ? await pauseEndpointsOf(ctx.tx, {
            ...departureIn(ctx, studio, { id: member.userId, handle: params.handle }),
            why: `@${params.handle} is no longer an admin of ${studio.name}`,
          })
        : 0;
    await emit(ctx, {
      type: "member.role_changed",
      studioId: studio.id,
      subjectType: "user",
      subjectId: member.userId,
      payload: { role: params.role },
    });
    return {
      status: 200,
      location: `/studios/${studio.handle}/members`,
      notice: `@${params.handle} is now ${params.role}${pausedNotice(paused)}`,
    };
  },
});

export const removeMember = defineAction({
  name: "remove_member",
  needs: ["studio"],
  destructive:
    "They lose access to the studio's notes, decisions and commitments until someone invites them again, and their agents leave it with them (their subscriptions there stop).",
  description: "Remove someone from the studio",
  params: z.object({ handle: handleSchema.meta({ label: "Member", pickedBeside: true }) }),
  writes: true,
  audience: inStudio("membership change"),
  available: adminOnly,
  async execute(ctx, params, scope) {
    const { studio } = scope;
    await ctx.tx.$queryRaw`SELECT 1 FROM studio_members WHERE studio_id = ${studio.id} FOR UPDATE`;
    const member = await memberOf(ctx, studio.id, params.handle);
    if (member.role === "admin") await assertAnotherAdmin(ctx, studio.id);
    await ctx.tx.studioMember.delete({
      where: { studioId_userId: { studioId: studio.id, userId: member.userId } },
    });
    const paused = await pauseEndpointsOf(ctx.tx, {
      ...departureIn(ctx, studio, { id: member.userId, handle: params.handle }),
      why: `@${params.handle} left ${studio.name}`,
    });
    await emit(ctx, {
      type: "member.removed",
      studioId: studio.id,
      subjectType: "user",
      subjectId: member.userId,
    });
    // An agent never reads past its owner: theirs leave with them, in the same transaction.
    const left = await agentsLeaveWithOwner(
      ctx.tx,
      { tenantId: ctx.tenant.id, actorId: ctx.actor.id, personId: member.userId },
      studio,
    );
    const agents = left.handles.length
      ? `, and ${left.handles.join(" and ")} ${left.handles.length === 1 ? "leaves" : "leave"} it too`
      : "";
    const self = member.userId === ctx.actor.id;
    return {
      status: 200,
      location: self ? "/studios" : `/studios/${studio.handle}/members`,
      notice: `${self ? `You left ${studio.name}${agents}` : `Removed @${params.handle}${agents}`}${pausedNotice(paused)}`,
    };
  },
});
