// Subscriptions, as actions: on a studio or a page, a person has one of their agents watch
// it (or stop), and an agent with the capability does so for itself; on an agent's
// subscriptions page, its owner pauses, resumes or removes one.
import { z } from "zod";
import type { User } from "../../generated/prisma/client.ts";
import { ForbiddenError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { requireScope } from "../access.ts";
import { SUBSCRIPTION_EVENTS, type Subscribable } from "../agents/automations/subscriptions.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { type ActionCtx, type AgentScope, type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { handleSchema, idSchema } from "../validation.ts";

/** What a page's subscription is about (the page's own subject, else its studio), and the page. */
export function watchedBy(scope: Scope) {
  const studio = requireScope(scope.studio, "studio");
  const base = `/studios/${studio.handle}`;
  const subject = (type: Subscribable, id: string, what: string) => ({
    type,
    id,
    studioId: studio.id,
    what,
    path: type === "studio" ? base : `${base}/${type}s/${id}`,
  });
  if (scope.note) return subject("note", scope.note.id, "this note");
  if (scope.decision) return subject("decision", scope.decision.id, "this decision");
  if (scope.commitment) return subject("commitment", scope.commitment.id, "this commitment");
  return subject("studio", studio.id, `#${studio.handle}`);
}

const agentParam = handleSchema
  .meta({
    description: "which of your agents (an agent subscribing itself leaves it out)",
    pickedBeside: true,
  })
  .optional();

/** The agent the action is for: one the person owns (the one owner check), or the acting agent itself. */
async function agentFor(ctx: Ctx, handle: string | undefined): Promise<User> {
  if (ctx.actor.kind === "subagent") {
    if (handle && handle !== ctx.actor.handle)
      throw new ValidationError([{ field: "agent", message: "an agent can only subscribe itself" }]);
    return ctx.db.user.findUniqueOrThrow({ where: { id: ctx.actor.id } });
  }
  if (!handle) throw new ValidationError([{ field: "agent", message: "required: which of your agents" }]);
  try {
    return await loadAgent(ctx, handle);
  } catch (err) {
    if (!(err instanceof NotFoundError || err instanceof ForbiddenError)) throw err;
    throw new ValidationError([{ field: "agent", message: `you manage no agent @${handle}` }]);
  }
}

const eventFlags = z.object(
  Object.fromEntries(
    SUBSCRIPTION_EVENTS.map((k) => [k, z.boolean().optional().describe(`wake on ${k} (none ticked: all)`)]),
  ) as Record<(typeof SUBSCRIPTION_EVENTS)[number], z.ZodOptional<z.ZodBoolean>>,
);

export const subscribe = defineAction({
  name: "subscribe",
  needs: ["studio"],
  description: "Have an agent watch this: what happens here starts one of its runs",
  params: z.object({ agent: agentParam }).extend(eventFlags.shape),
  writes: true,
  audience: toAgentManagers("subscription"),
  async execute(ctx, params, scope) {
    const target = watchedBy(scope);
    const agent = await agentFor(ctx, params.agent);
    const member = await ctx.tx.studioMember.findUnique({
      where: { studioId_userId: { studioId: target.studioId, userId: agent.id } },
    });
    if (!member)
      throw new ValidationError([
        { field: "agent", message: `@${agent.handle} is not a member of this studio: add it first` },
      ]);
    const ticked = SUBSCRIPTION_EVENTS.filter((k) => params[k]);
    const events = ticked.length ? ticked : [...SUBSCRIPTION_EVENTS];
    const key = { agentId: agent.id, subjectType: target.type, subjectId: target.id };
    const existing = await ctx.tx.agentSubscription.findUnique({
      where: { agentId_subjectType_subjectId: key },
    });
    await ctx.tx.agentSubscription.upsert({
      where: { agentId_subjectType_subjectId: key },
      update: { events, enabled: true, disabledReason: null },
      create: {
        id: newId(),
        tenantId: ctx.tenant.id,
        ...key,
        studioId: target.studioId,
        events,
        createdById: ctx.actor.id,
      },
    });
    return {
      status: existing ? 200 : 201,
      location: target.path,
      notice: `@${agent.handle} ${existing ? "now watches" : "watches"} ${target.what} for: ${events.join(", ")}`,
    };
  },
});

export const unsubscribe = defineAction({
  name: "unsubscribe",
  needs: ["studio"],
  description: "Stop an agent watching this",
  params: z.object({ agent: agentParam }),
  writes: true,
  audience: toAgentManagers("subscription"),
  async execute(ctx, params, scope) {
    const target = watchedBy(scope);
    const agent = await agentFor(ctx, params.agent);
    const { count } = await ctx.tx.agentSubscription.deleteMany({
      where: { agentId: agent.id, subjectType: target.type, subjectId: target.id },
    });
    if (!count) throw new NotFoundError(`@${agent.handle} does not watch ${target.what}`);
    return {
      status: 200,
      location: target.path,
      notice: `@${agent.handle} no longer watches ${target.what}`,
    };
  },
});

const pickedSubscription = idSchema.meta({
  description: "which subscription (the buttons beside each pick it)",
  pickedBeside: true,
  formerly: "subscription",
});

const peopleOnly = (ctx: Ctx) =>
  ctx.actor.kind === "person" ? null : "only people manage an agent's subscriptions";

/** One of the page's agent's subscriptions (the page resolved the agent through the owner check). */
async function ownSubscription(ctx: ActionCtx, agent: AgentScope, id: string) {
  const sub = await ctx.tx.agentSubscription.findFirst({
    where: { id, agentId: agent.id, tenantId: ctx.tenant.id },
  });
  if (!sub)
    throw new ValidationError([
      { field: "subscription", message: `@${agent.handle} has no subscription ${id}` },
    ]);
  return { agent, sub, location: `/subagents/${agent.handle}/subscriptions` };
}

function toggle(enabled: boolean) {
  return defineAction({
    name: enabled ? "resume_subscription" : "pause_subscription",
    needs: ["agent"],
    description: enabled ? "Resume this subscription" : "Pause this subscription",
    params: z.object({ id: pickedSubscription }),
    writes: true,
    audience: toAgentManagers("subscription"),
    available: peopleOnly,
    async execute(ctx, params, scope) {
      const { sub, location } = await ownSubscription(ctx, scope.agent, params.id);
      await ctx.tx.agentSubscription.update({
        where: { id: sub.id },
        data: { enabled, disabledReason: null },
      });
      // Events recorded while it was on are dropped with it: a paused subscription wakes nobody.
      if (!enabled) await ctx.tx.agentSubscriptionEvent.deleteMany({ where: { subscriptionId: sub.id } });
      return { status: 200, location, notice: enabled ? "Subscription resumed" : "Subscription paused" };
    },
  });
}

export const pauseSubscription = toggle(false);
export const resumeSubscription = toggle(true);

export const removeSubscription = defineAction({
  name: "remove_subscription",
  needs: ["agent"],
  description: "Remove this subscription",
  params: z.object({ id: pickedSubscription }),
  writes: true,
  audience: toAgentManagers("subscription"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { sub, location } = await ownSubscription(ctx, scope.agent, params.id);
    await ctx.tx.agentSubscription.delete({ where: { id: sub.id } });
    return { status: 200, location, notice: "Subscription removed" };
  },
});
