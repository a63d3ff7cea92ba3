// Letting a person go, and having them back: a workspace admin's actions on the person's page
// (/settings/people/<handle>). Deactivating ends their sessions and API tokens at once, shuts
// sign-in, and either pauses the agents they own (runs in flight stop at their next step;
// approvals waiting for them expire, worded: nobody else manages a person's agent) or hands
// them to a studio with the transfer's own function. Nothing is deleted. Reactivating opens
// sign-in again; their agents stay paused until they resume them.
import { z } from "zod";
import type { Db } from "../../db/prisma.ts";
import type { Studio, User } from "../../generated/prisma/client.ts";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { plural } from "../../lib/plural.ts";
import { ensureAnotherAdmin } from "../accounts/admins.ts";
import { recordSecurityEvent } from "../accounts/security-events.ts";
import { expireAgentPending } from "../agents/policy/approvals.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction } from "../registry/types.ts";
import { endSessions } from "../sessions.ts";
import { handleSchema } from "../validation.ts";
import { moveToStudio } from "./agent-ownership.ts";

export const personPath = (handle: string) => `/settings/people/${handle}`;

const ACTIVE_RUNS = ["queued", "waiting", "paused"] as const;

const adminsOnly = (ctx: Ctx) =>
  ctx.actor.tenantAdmin ? null : "only workspace admins deactivate or reactivate people";

/** The person's agents and what is under way for them: what the confirmation names. */
async function whatTheyHold(db: Db, person: Pick<User, "id" | "tenantId">) {
  const agents = await db.user.findMany({
    where: { tenantId: person.tenantId, parentId: person.id, kind: "subagent", archivedAt: null },
    select: { id: true, handle: true, pausedAt: true },
    orderBy: { handle: "asc" },
  });
  const agentIds = agents.map((agent) => agent.id);
  const [sessions, tokens, runs, pending] = await Promise.all([
    db.session.count({ where: { userId: person.id, tenantId: person.tenantId } }),
    db.apiToken.count({ where: { userId: person.id, tenantId: person.tenantId, revokedAt: null } }),
    db.subagentTaskRun.count({
      where: { agentId: { in: agentIds }, status: { in: ["running", ...ACTIVE_RUNS] } },
    }),
    db.agentPendingAction.count({ where: { agentId: { in: agentIds }, status: "pending" } }),
  ]);
  return { agents, sessions, tokens, runs, pending };
}

/** Stops the agent's runs: waiting ones at once, a running one at its next step (its worker's heartbeat sees the request). */
async function stopRuns(tx: Db, agentId: string): Promise<void> {
  const now = new Date();
  await tx.subagentTaskRun.updateMany({
    where: { agentId, status: { in: [...ACTIVE_RUNS] } },
    data: {
      status: "cancelled",
      stopReason: "owner_deactivated",
      error: "Stopped: its owner was deactivated.",
      stopRequestedAt: now,
      completedAt: now,
    },
  });
  await tx.subagentTaskRun.updateMany({
    where: { agentId, status: "running", stopRequestedAt: null },
    data: { stopRequestedAt: now },
  });
}

async function handoverStudio(ctx: ActionCtx, handle: string): Promise<Studio> {
  const studio = await ctx.tx.studio.findFirst({ where: { tenantId: ctx.tenant.id, handle } });
  if (!studio) throw new ValidationError([{ field: "agents_to", message: "no studio with this handle" }]);
  return studio;
}

export const deactivatePerson = defineAction({
  name: "deactivate_person",
  needs: ["user"],
  description:
    "Deactivate this person: their sessions and API tokens stop at once, they cannot sign in, and their agents are paused or handed to a studio. Nothing is deleted.",
  params: z.object({
    agents_to: handleSchema.optional().meta({
      label: "Hand their agents to",
      description:
        "a studio's handle; left empty, their agents are paused until they come back and resume them",
    }),
  }),
  writes: true,
  audience: toWorkspace("deactivation"),
  destructive: "They are signed out everywhere at once and cannot sign in until an admin reactivates them.",
  available: (ctx, scope) =>
    adminsOnly(ctx) ??
    (scope.user?.kind !== "person"
      ? "only people are deactivated"
      : scope.user.id === ctx.actor.id
        ? "you cannot deactivate yourself"
        : scope.user.deactivatedAt
          ? "already deactivated"
          : null),
  async confirmText(ctx, params, scope) {
    const { user: person } = scope;
    const held = await whatTheyHold(ctx.db, person);
    const agents = held.agents.map((agent) => `@${agent.handle}`).join(", ");
    const where = typeof params.agents_to === "string" && params.agents_to ? params.agents_to : null;
    const verb = (count: number, one: string, many: string) => (count === 1 ? one : many);
    const runs = `${plural(held.runs, "run")} under way ${verb(held.runs, "stops", "stop")}`;
    const agentsPart = !held.agents.length
      ? "They own no agents."
      : where
        ? `Their ${plural(held.agents.length, "agent")} (${agents}) ${verb(held.agents.length, "goes", "go")} to the studio “${where}”, whose admins manage ${verb(held.agents.length, "it", "them")} from now on; ${runs}.`
        : `Their ${plural(held.agents.length, "agent")} (${agents}) ${verb(held.agents.length, "is", "are")} paused: ${runs} at the next step, and ${plural(held.pending, "action")} waiting for their approval ${verb(held.pending, "expires", "expire")}.`;
    return `Deactivate ${person.name} (@${person.handle})? ${plural(held.sessions, "session")} and ${plural(held.tokens, "API token")} stop now, and they cannot sign in. ${agentsPart} Nothing is deleted.`;
  },
  async execute(ctx, params, scope) {
    const { user: person } = scope;
    const studio = params.agents_to ? await handoverStudio(ctx, params.agents_to) : null;
    const now = new Date();
    // Before any write, with the admins' rows locked: two admins deactivating each other at once
    // leave one of them, as a role change would.
    await ensureAnotherAdmin(ctx.tx, person, "deactivated");
    // The person's row, locked by the conditional update: two admins at once deactivate once.
    const closed = await ctx.tx.user.updateMany({
      where: { id: person.id, tenantId: ctx.tenant.id, kind: "person", deactivatedAt: null },
      data: { deactivatedAt: now },
    });
    if (!closed.count) throw new ConflictError(`@${person.handle} is already deactivated`);
    const sessions = await endSessions(ctx.tx, ctx.tenant.id, person.id);
    // Revoked, not only refused: reactivating opens sign-in, never an old token.
    const tokens = await ctx.tx.apiToken.updateMany({
      where: { userId: person.id, tenantId: ctx.tenant.id, revokedAt: null },
      data: { revokedAt: now },
    });
    const { agents } = await whatTheyHold(ctx.tx, person);
    for (const agent of agents) {
      // Whatever happens to the agent, what the departing owner set going stops.
      await stopRuns(ctx.tx, agent.id);
      if (studio) {
        await moveToStudio(ctx, agent, person.id, studio);
        continue;
      }
      await ctx.tx.user.updateMany({
        where: { id: agent.id, pausedAt: null },
        data: {
          pausedAt: now,
          pausedKind: "owner",
          pausedReason: `its owner @${person.handle} was deactivated`,
        },
      });
      await expireAgentPending(
        ctx.tx,
        agent,
        `Its owner @${person.handle} was deactivated, so nobody is left to review it; it did not run.`,
      );
    }
    await recordSecurityEvent(ctx.tx, {
      tenantId: ctx.tenant.id,
      userId: person.id,
      actorId: ctx.actor.id,
      kind: "deactivated",
      detail: `Your account was deactivated by @${ctx.actor.handle}: you are signed out and cannot sign in until a workspace admin reactivates it. Nothing of yours was deleted.`,
      // They cannot open a page of the workspace now: the mail links nowhere.
      linkPath: null,
    });
    const agentsPart = !agents.length
      ? ""
      : studio
        ? ` ${plural(agents.length, "agent")} now belong to ${studio.name}.`
        : ` ${plural(agents.length, "agent")} paused.`;
    return {
      status: 200,
      location: personPath(person.handle),
      notice: `Deactivated @${person.handle}: ${plural(sessions, "session")} and ${plural(tokens.count, "API token")} ended.${agentsPart}`,
    };
  },
});

export const reactivatePerson = defineAction({
  name: "reactivate_person",
  needs: ["user"],
  description:
    "Reactivate this person: they can sign in again; their agents stay paused until they resume them",
  params: z.object({}),
  writes: true,
  audience: toWorkspace("reactivation"),
  available: (ctx, scope) =>
    adminsOnly(ctx) ?? (scope.user?.deactivatedAt ? null : "only a deactivated person is reactivated"),
  async execute(ctx, _params, scope) {
    const { user: person } = scope;
    const opened = await ctx.tx.user.updateMany({
      where: { id: person.id, tenantId: ctx.tenant.id, deactivatedAt: { not: null } },
      data: { deactivatedAt: null },
    });
    if (!opened.count) throw new ConflictError(`@${person.handle} is not deactivated`);
    await recordSecurityEvent(ctx.tx, {
      tenantId: ctx.tenant.id,
      userId: person.id,
      actorId: ctx.actor.id,
      kind: "reactivated",
      detail: `Your account was reactivated by @${ctx.actor.handle}: you can sign in again. Your agents stay paused until you resume them, and your old API tokens stay revoked.`,
      ...(ctx.origin && { origin: ctx.origin }),
      linkPath: "/login",
    });
    return {
      status: 200,
      location: personPath(person.handle),
      notice: `Reactivated @${person.handle}: they can sign in again. Their agents stay paused until they resume them.`,
    };
  },
});
