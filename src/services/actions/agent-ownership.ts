// Giving an agent to a studio: at creation (create_subagent's `studio`) or later
// (transfer_subagent). A studio's agent is a member of its own studio and of no other, pays
// with the studio's keys or the shared endpoint, and its admins manage it (agents/ownership.ts).
import { z } from "zod";
import type { Prisma, Studio } from "../../generated/prisma/client.ts";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { transferDisclosure } from "../agents/policy/transfer-disclosure.ts";
import { emit } from "../events.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction } from "../registry/types.ts";
import { writeScratchpad } from "../scratchpad.ts";
import { handleSchema } from "../validation.ts";
import { saveConfig } from "./agent-settings.ts";

/** A studio the actor administers, by handle, or a 400 on `field`. */
export async function adminStudio(ctx: ActionCtx, handle: string, field = "studio"): Promise<Studio> {
  const studio = await ctx.tx.studio.findFirst({
    where: {
      tenantId: ctx.tenant.id,
      handle,
      members: { some: { userId: ctx.actor.id, role: "admin" } },
    },
  });
  if (!studio)
    throw new ValidationError([{ field, message: "you are not an admin of a studio with this handle" }]);
  return studio;
}

/**
 * Makes the agent a member of `studio` and of no other studio (as a member, never an
 * admin), and drops its subscriptions elsewhere: a studio's agent acts only in its own
 * studio. Returns how many other studios and subscriptions it left.
 */
export async function settleInStudio(ctx: ActionCtx, agentId: string, studio: Studio) {
  const left = await ctx.tx.studioMember.deleteMany({
    where: { userId: agentId, tenantId: ctx.tenant.id, studioId: { not: studio.id } },
  });
  const unwatched = await ctx.tx.agentSubscription.deleteMany({
    where: { agentId, tenantId: ctx.tenant.id, studioId: { not: studio.id } },
  });
  const kept = await ctx.tx.studioMember.updateMany({
    where: { studioId: studio.id, userId: agentId },
    data: { role: "member" },
  });
  if (!kept.count) {
    await ctx.tx.studioMember.create({
      data: { studioId: studio.id, userId: agentId, tenantId: ctx.tenant.id, role: "member" },
    });
    await emit(ctx, { type: "studio.joined", studioId: studio.id, subjectType: "user", subjectId: agentId });
  }
  return { studios: left.count, subscriptions: unwatched.count };
}

export const transferSubagent = defineAction({
  name: "transfer_subagent",
  needs: ["agent"],
  description: "Give it to a studio you administer: the studio's admins then manage it together",
  destructive:
    "It stops being yours alone: the studio's admins manage it, it acts only in that studio, and it cannot be given back to you.",
  // Chosen from a select of the studios you administer (its page fills it), never typed.
  params: z.object({
    studio: handleSchema.meta({
      label: "Studio",
      description: "a studio you administer",
      pickedBeside: true,
    }),
    clear_memory: z.boolean().optional().meta({
      label: "Clear its memory first",
      description: "its scratchpad holds what it read: cleared, its new managers read none of it",
    }),
  }),
  writes: true,
  audience: toAgentManagers("transfer"),
  available: (ctx: Ctx, scope) =>
    ctx.actor.kind !== "person"
      ? "only people transfer agents"
      : scope.agent.ownerStudioId
        ? "it already belongs to a studio"
        : null,
  // Irreversible, so the question names the studio in full (two may share a name) and who takes it.
  async confirmText(ctx, params, scope) {
    if (typeof params.studio !== "string") return null;
    const studio = await ctx.db.studio.findFirst({
      where: {
        tenantId: ctx.tenant.id,
        handle: params.studio,
        members: { some: { userId: ctx.actor.id, role: "admin" } },
      },
      include: {
        members: { where: { role: "admin" }, include: { user: true }, orderBy: { createdAt: "asc" } },
      },
    });
    if (!studio) return null;
    const admins = studio.members.map((member) => `${member.user.name} (@${member.user.handle})`);
    return `Give @${scope.agent.handle} to the studio ${studio.name} (${studio.handle})? Its ${admins.length === 1 ? "admin" : "admins"}, ${admins.join(", ")}, will manage it from then on.`;
  },
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const studio = await adminStudio(ctx, params.studio);
    const notice = await moveToStudio(ctx, agent, ctx.actor.id, studio, {
      clearMemory: params.clear_memory === true,
    });
    return { status: 200, location: `/subagents/${agent.handle}`, notice };
  },
});

/**
 * Gives `fromPersonId`'s agent to `studio`: transfer_subagent, and an admin handing a departing
 * person's agents over (actions/deactivation.ts). Returns the notice saying what changed.
 */
export async function moveToStudio(
  ctx: ActionCtx,
  agent: { id: string; handle: string },
  fromPersonId: string,
  studio: Studio,
  options: { clearMemory?: boolean } = {},
): Promise<string> {
  // A disclosure decision: said before (its page), and what it decided said after.
  if (options.clearMemory)
    await writeScratchpad(ctx.tx, {
      tenantId: ctx.tenant.id,
      agentId: agent.id,
      authorId: ctx.actor.id,
      kind: "clear",
      text: "",
    });
  const disclosed = await transferDisclosure(ctx.tx, ctx.tenant.id, agent, studio.id);
  // Under the row's lock, like every config change: a personal key cannot follow it to the studio.
  let hadKey = false;
  await saveConfig(ctx, agent, (config) => {
    hadKey = Boolean(config.api_key_id);
    delete config.api_key_id;
  });
  const moved = await ctx.tx.user.updateMany({
    where: { id: agent.id, parentId: fromPersonId, ownerStudioId: null },
    data: { parentId: null, ownerStudioId: studio.id } satisfies Prisma.UserUncheckedUpdateManyInput,
  });
  if (!moved.count) throw new ConflictError(`@${agent.handle} is not yours to transfer`);
  const left = await settleInStudio(ctx, agent.id, studio);
  const notes = [
    left.studios ? `it left ${plural(left.studios, "other studio")}` : "",
    left.subscriptions ? `dropped ${plural(left.subscriptions, "subscription")} outside it` : "",
    hadKey ? "uses the shared endpoint until an admin picks one of the studio's keys" : "",
  ].filter(Boolean);
  await emit(ctx, {
    type: "subagent.transferred",
    studioId: studio.id,
    subjectType: "user",
    subjectId: agent.id,
  });
  const cleared = options.clearMemory ? " Its memory was cleared first." : "";
  return `@${agent.handle} now belongs to ${studio.name}${notes.length ? `: ${notes.join("; ")}` : ""}.${cleared}${disclosed ? ` ${disclosed}` : ""}`;
}

export const setMemberRuns = defineAction({
  name: "set_member_runs",
  needs: ["agent"],
  description: "Choose who gives a studio's agent tasks: every member of the studio, or only its admins",
  params: z.object({
    members_may_run: z.boolean().meta({
      label: "Every member may give it tasks",
      description: "unticked: only the studio's admins run it (anyone in the studio may still mention it)",
    }),
  }),
  writes: true,
  audience: toAgentManagers("setting"),
  available: (ctx: Ctx, scope) =>
    ctx.actor.kind !== "person"
      ? "only people configure agents"
      : !scope.agent.ownerStudioId
        ? "only for a studio's agent: yours runs only for you"
        : null,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    await saveConfig(ctx, agent, (config) => {
      config.members_may_run = params.members_may_run;
    });
    return {
      status: 200,
      location: `/subagents/${agent.handle}`,
      notice: params.members_may_run
        ? "Every member of the studio may now give it tasks"
        : "Only the studio's admins give it tasks now",
    };
  },
});
