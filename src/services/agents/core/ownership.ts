// Who owns an agent, and what that allows: the one place the rule lives.
//
// An agent's owner is a person (users.parent_id) or a studio (users.owner_studio_id), never
// both. Its managers configure it, review its queued actions, stop its runs, read its usage
// and hear its alerts: the person, or every admin of the studio, read afresh on every request
// (so a demoted admin loses control at once). Members of an owning studio see the agent and
// may mention it, and use its run form if its admins allow it; anyone else never sees it.
// An agent's rights never exceed its owner's (ownerCeilingSql).
import type { Db } from "../../../db/prisma.ts";
import { Prisma, type User } from "../../../generated/prisma/client.ts";
import { ForbiddenError, NotFoundError } from "../../../lib/errors.ts";
import type { Actor, AgentScope, Ctx, Scope } from "../../registry/types.ts";
import { agentConfig } from "./settings.ts";

export type Owned = Pick<User, "parentId" | "ownerStudioId">;

/** What the reader may do with an agent: manage it, see it as a member of its studio, or nothing. */
export type Access = "manage" | "member" | null;

/**
 * The memberships of `actor` that count, as a filter on studio_members: all of a person's; an
 * agent's only where `ownerBoundSql` lets it read (its owner is a member there, or for a
 * studio's agent, its own studio). For lists Prisma builds, where that SQL cannot go.
 */
export function boundMemberships(
  actor: Pick<Actor, "id" | "kind" | "parentId">,
): Prisma.StudioMemberWhereInput {
  if (actor.kind !== "subagent") return {};
  return actor.parentId
    ? { studio: { members: { some: { userId: actor.parentId } } } }
    : { studio: { agents: { some: { id: actor.id } } } };
}

/** The include that gives an agent row what `accessOf` needs for `actor`. */
export const withOwnerStudio = (actor: Pick<Actor, "id" | "kind" | "parentId">) =>
  ({
    ownerStudio: {
      select: {
        id: true,
        handle: true,
        name: true,
        members: { where: { userId: actor.id, ...boundMemberships(actor) }, select: { role: true } },
      },
    },
  }) satisfies Prisma.UserInclude;

export function accessOf(actor: Actor, agent: AgentScope): Access {
  if (agent.parentId) return agent.parentId === actor.id ? "manage" : null;
  const role = agent.ownerStudio?.members[0]?.role;
  return role === "admin" ? "manage" : role === "member" ? "member" : null;
}

export const mayManage = (actor: Actor, agent: AgentScope) => accessOf(actor, agent) === "manage";

/** Agents `actorId` manages, as a filter on users. */
export function managedBy(actorId: string): Prisma.UserWhereInput {
  return {
    kind: "subagent",
    OR: [{ parentId: actorId }, { ownerStudio: { members: { some: { userId: actorId, role: "admin" } } } }],
  };
}

/** The same rule in SQL, for an agent row aliased `alias`. */
export function managedBySql(alias: string, actorId: string | Prisma.Sql): Prisma.Sql {
  const table = Prisma.raw(alias);
  return Prisma.sql`(${table}.parent_id = ${actorId} OR EXISTS (
    SELECT 1 FROM studio_members mgr
    WHERE mgr.studio_id = ${table}.owner_studio_id AND mgr.user_id = ${actorId} AND mgr.role = 'admin'))`;
}

/**
 * Of the people (or agents) who woke an agent, those who do not manage it: a run they wake
 * acts within their view (agents/policy/labels.ts). The agent itself never counts.
 */
export async function wokenByOthers(db: Db, agentId: string, actorIds: string[]): Promise<string[]> {
  const ids = [...new Set(actorIds)].filter((id) => id !== agentId);
  if (!ids.length) return [];
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT x.id FROM unnest(${ids}::text[]) AS x(id) JOIN users ag ON ag.id = ${agentId}
    WHERE NOT ${managedBySql("ag", Prisma.sql`x.id`)} ORDER BY x.id`;
  return rows.map((r) => r.id);
}

/** Agents `actor` may see: the ones they manage, and their studios' agents. */
export function visibleTo(actor: Pick<Actor, "id" | "kind" | "parentId">): Prisma.UserWhereInput {
  return {
    kind: "subagent",
    OR: [
      { parentId: actor.id },
      { ownerStudio: { members: { some: { userId: actor.id, ...boundMemberships(actor) } } } },
    ],
  };
}

/** The keys an agent may call its model with: its owner's (a person's, or its studio's). */
export function keysOf(agent: Owned): Prisma.AgentApiKeyWhereInput {
  return agent.ownerStudioId ? { studioId: agent.ownerStudioId } : { ownerId: agent.parentId ?? "" };
}

/** The agents whose model calls a holder's keys pay for. */
export function agentsOf(holder: KeyHolder): Prisma.UserWhereInput {
  return holder.kind === "studio"
    ? { kind: "subagent", ownerStudioId: holder.id }
    : { kind: "subagent", parentId: holder.id };
}

/**
 * Whose keys a keys page shows and its actions manage: the person's own (/u/…), or a
 * studio's (/studios/…, its admins only).
 */
export interface KeyHolder {
  kind: "person" | "studio";
  id: string;
  /** The keys page. */
  path: string;
  where: Prisma.AgentApiKeyWhereInput;
}

export function keyHolder(scope: Scope): KeyHolder {
  if (scope.studio) {
    if (scope.studio.role !== "admin")
      throw new ForbiddenError(`Only the admins of ${scope.studio.name} manage its model API keys`);
    const studioScope = scope.studio;
    return {
      kind: "studio",
      id: studioScope.id,
      path: `/studios/${studioScope.handle}/settings/api-keys`,
      where: { studioId: studioScope.id },
    };
  }
  const user = scope.user!;
  return {
    kind: "person",
    id: user.id,
    path: `/u/${user.handle}/settings/api-keys`,
    where: { ownerId: user.id },
  };
}

/** Whether the actor may see this user at all: a studio's agent exists only for its studio's members. */
export async function maySee(ctx: Ctx, user: Pick<User, "id" | "ownerStudioId">): Promise<boolean> {
  if (!user.ownerStudioId || user.id === ctx.actor.id) return true;
  const member = await ctx.db.studioMember.findFirst({
    where: { studioId: user.ownerStudioId, userId: ctx.actor.id, ...boundMemberships(ctx.actor) },
    select: { role: true },
  });
  return Boolean(member);
}

/** Who hears an agent's questions, approval requests and spend alerts: its managers, now. */
export async function managersOf(db: Db, agent: Owned): Promise<string[]> {
  if (agent.parentId) return [agent.parentId];
  if (!agent.ownerStudioId) return [];
  return (await studioAdmins(db, agent.ownerStudioId)).map((a) => a.id);
}

/** A studio's admins who are people still here, longest-standing first: who answers for what the studio owns (its agents, its endpoints). */
export async function studioAdmins(db: Db, studioId: string): Promise<{ id: string; handle: string }[]> {
  const admins = await db.studioMember.findMany({
    where: { studioId, role: "admin", user: { kind: "person", archivedAt: null } },
    select: { user: { select: { id: true, handle: true } } },
    orderBy: { createdAt: "asc" },
  });
  return admins.map((m) => m.user);
}

/**
 * The most the agent `agentId` may be in the studio `studioId` (SQL id expressions), as
 * text: its owner's role there, or for a studio's agent `member` in its own studio and
 * nothing (NULL) anywhere else. Read live, so a transfer or an owner's removal applies at
 * the agent's next step.
 */
export function ownerCeilingSql(agentId: Prisma.Sql, studioId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(SELECT CASE
      WHEN ag.owner_studio_id IS NOT NULL THEN CASE WHEN ag.owner_studio_id = ${studioId} THEN 'member' END
      ELSE (SELECT om.role::text FROM studio_members om WHERE om.studio_id = ${studioId} AND om.user_id = ag.parent_id)
    END FROM users ag WHERE ag.id = ${agentId})`;
}

/**
 * SQL: true when the user `userId` may read the studio `studioId` as far as its owner goes:
 * a person always (their membership is the rest of the check), a person's agent only while
 * its owner is a member there, a studio's agent only in its own studio. Read live, like the
 * ceiling, so an owner's removal or a transfer bounds the agent's very next read.
 */
export function ownerBoundSql(userId: Prisma.Sql, studioId: Prisma.Sql): Prisma.Sql {
  // Parenthesised: callers AND it into their conditions.
  return Prisma.sql`(coalesce((SELECT ob.kind <> 'subagent' FROM users ob WHERE ob.id = ${userId}), false)
    OR ${ownerCeilingSql(userId, studioId)} IS NOT NULL)`;
}

/**
 * SQL: the user `readerId` can read the audience `audience` (a jsonb value of a label,
 * registry/types.ts Audience): a studio's members, the people listed, an agent and its
 * managers, or anyone in the workspace.
 */
export function readsAudienceSql(
  readerId: Prisma.Sql,
  audience: Prisma.Sql,
  tenantId: Prisma.Sql,
): Prisma.Sql {
  return Prisma.sql`CASE
    WHEN ${audience} ? 'studio' THEN EXISTS (SELECT 1 FROM studio_members ram WHERE ram.studio_id = ${audience}->>'studio' AND ram.user_id = ${readerId})
    WHEN ${audience} ? 'people' THEN ${audience}->'people' ? ${readerId}
    WHEN ${audience} ? 'managersOf' THEN ${readerId} = ${audience}->>'managersOf' OR EXISTS (
      SELECT 1 FROM users rao WHERE rao.id = ${audience}->>'managersOf' AND ${managedBySql("rao", readerId)})
    ELSE EXISTS (SELECT 1 FROM users raw WHERE raw.id = ${readerId} AND raw.tenant_id = ${tenantId} AND raw.archived_at IS NULL)
  END`;
}

/**
 * SQL: naming the studio `studioId` to the agent `agentId` narrows nothing of its label
 * `label` (jsonb): everyone who could read all the label holds, bar the agent and its
 * managers, is a member there. A page listing places names only those (agents/core/whoami-read.ts).
 */
export function insideLabelSql(
  label: Prisma.Sql,
  agentId: Prisma.Sql,
  tenantId: Prisma.Sql,
  studioId: Prisma.Sql,
): Prisma.Sql {
  return Prisma.sql`NOT EXISTS (SELECT 1 FROM users ilu
    WHERE ilu.tenant_id = ${tenantId} AND ilu.archived_at IS NULL AND ilu.id <> ${agentId}
      AND NOT EXISTS (SELECT 1 FROM users ila WHERE ila.id = ${agentId} AND ${managedBySql("ila", Prisma.sql`ilu.id`)})
      AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(${label}) ilx(a)
        WHERE NOT (${readsAudienceSql(Prisma.sql`ilu.id`, Prisma.sql`ilx.a`, tenantId)}))
      AND NOT EXISTS (SELECT 1 FROM studio_members ilm WHERE ilm.studio_id = ${studioId} AND ilm.user_id = ilu.id))`;
}

/**
 * A subagent the actor manages; a member of its owning studio gets a 403 saying who does
 * (or, with `members: "run"`, the agent itself when its admins let members run it), and
 * anyone else a 404. With `adminReads`, a workspace admin may read any agent (its usage);
 * what they may change is still up to `mayManage`.
 */
export async function loadAgent(
  ctx: Ctx,
  handle: string,
  opts: { adminReads?: boolean; members?: "run" } = {},
): Promise<AgentScope> {
  const agent = await ctx.db.user.findFirst({
    where: { tenantId: ctx.tenant.id, handle, kind: "subagent" },
    include: withOwnerStudio(ctx.actor),
  });
  const access = agent ? accessOf(ctx.actor, agent) : null;
  if (agent && (access === "manage" || (opts.adminReads && ctx.actor.tenantAdmin))) return agent;
  if (agent && access === "member") {
    if (opts.members === "run" && agentConfig(agent).members_may_run) return agent;
    throw new ForbiddenError(`Only the admins of ${agent.ownerStudio!.name} manage @${handle}`);
  }
  throw new NotFoundError(`No subagent @${handle} of yours`);
}

/**
 * SQL: the studios where `actorId` may wake the agent `agentId` with a mention, as a subquery
 * of studio ids: both are members there, and each reads there as far as its owner goes (an
 * agent whose owner left a studio is silent in it; an agent asking sees only where it reads).
 */
export function wakeStudiosSql(agentId: Prisma.Sql, actorId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(SELECT wam.studio_id FROM studio_members wam
    JOIN studio_members wme ON wme.studio_id = wam.studio_id AND wme.user_id = ${actorId}
    WHERE wam.user_id = ${agentId} AND ${ownerBoundSql(agentId, Prisma.sql`wam.studio_id`)}
      AND ${ownerBoundSql(actorId, Prisma.sql`wme.studio_id`)})`;
}

/**
 * SQL: the agent row aliased `alias` is one `actorId` may ask: it wakes for their mention in a
 * studio they share, or they manage it (its run form). Archived agents answer nobody. The
 * directory, @-autocomplete and the mute list all ask this.
 */
export function askableSql(alias: string, actorId: string): Prisma.Sql {
  const table = Prisma.raw(alias);
  return Prisma.sql`(${table}.kind = 'subagent' AND ${table}.archived_at IS NULL AND (${managedBySql(alias, actorId)}
    OR EXISTS ${wakeStudiosSql(Prisma.sql`${table}.id`, Prisma.sql`${actorId}`)}))`;
}
