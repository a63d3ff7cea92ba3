// A person's quiet: agents' mentions of them that notify nobody, all agents' or one's
// (services/notifications.ts reads it). Only agents they could be mentioned by may be named
// (askableSql), so muting never tells whether some other studio's agent exists.
import { z } from "zod";
import { Prisma } from "../../generated/prisma/client.ts";
import { ValidationError } from "../../lib/errors.ts";
import { askableSql } from "../agents/core/ownership.ts";
import { toSelf } from "../registry/audiences.ts";
import { type ActionCtx, defineAction } from "../registry/types.ts";
import { notificationsPath, peopleOnly } from "./notification-settings.ts";

/** Every agent, in the `agent` field. */
export const ALL_AGENTS = "all";

const agentParam = z
  .string()
  .trim()
  .min(1)
  .max(40)
  .transform((value) => value.replace(/^@/, "").toLowerCase())
  .meta({ label: "Agent", description: `an agent's handle (scout), or ${ALL_AGENTS} for every agent` });

/** The agent the person named, among those they may ask; a 400 naming the field otherwise. */
async function namedAgent(ctx: ActionCtx, handle: string): Promise<{ id: string; handle: string }> {
  const [agent] = await ctx.tx.$queryRaw<{ id: string; handle: string }[]>(Prisma.sql`
    SELECT u.id, u.handle FROM users u
    WHERE u.tenant_id = ${ctx.tenant.id} AND u.handle = ${handle} AND ${askableSql("u", ctx.actor.id)}`);
  if (!agent)
    throw new ValidationError([
      { field: "agent", message: `no agent @${handle} can mention you (or write ${ALL_AGENTS})` },
    ]);
  return agent;
}

/** Adds the named agent to the actor's muted ones, or takes it out; the agent, as named. */
async function setMuted(ctx: ActionCtx, handle: string, muted: boolean) {
  const agent = await namedAgent(ctx, handle);
  const user = await ctx.tx.user.findUniqueOrThrow({
    where: { id: ctx.actor.id },
    select: { mutedAgentIds: true },
  });
  const others = user.mutedAgentIds.filter((id) => id !== agent.id);
  await ctx.tx.user.update({
    where: { id: ctx.actor.id },
    data: { mutedAgentIds: muted ? [...others, agent.id] : others },
  });
  return agent;
}

export const muteAgentMentions = defineAction({
  name: "mute_agent_mentions",
  description: "Stop being notified when an agent mentions you: one agent, or all of them",
  params: z.object({ agent: agentParam }),
  writes: true,
  audience: toSelf("notification settings"),
  available: peopleOnly,
  async execute(ctx, params) {
    const location = notificationsPath(ctx.actor.handle);
    if (params.agent === ALL_AGENTS) {
      await ctx.tx.user.update({ where: { id: ctx.actor.id }, data: { muteAgentMentions: true } });
      return { status: 200, location, notice: "Mentions by agents muted: no agent's mention notifies you" };
    }
    const agent = await setMuted(ctx, params.agent, true);
    return { status: 200, location, notice: `Mentions by @${agent.handle} muted` };
  },
});

export const unmuteAgentMentions = defineAction({
  name: "unmute_agent_mentions",
  description: "Be notified again when an agent mentions you: one agent, or all of them",
  params: z.object({ agent: agentParam.meta({ pickedBeside: true }) }),
  writes: true,
  audience: toSelf("notification settings"),
  available: peopleOnly,
  async execute(ctx, params) {
    const location = notificationsPath(ctx.actor.handle);
    if (params.agent === ALL_AGENTS) {
      await ctx.tx.user.update({
        where: { id: ctx.actor.id },
        data: { muteAgentMentions: false, mutedAgentIds: [] },
      });
      return { status: 200, location, notice: "Mentions by agents notify you again" };
    }
    const agent = await setMuted(ctx, params.agent, false);
    return { status: 200, location, notice: `Mentions by @${agent.handle} notify you again` };
  },
});
