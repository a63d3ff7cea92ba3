// Loading what an actor may see. Every lookup is keyed by tenant and, for studio
// content, by the actor's membership: anything else is a 404, never a 403, so ids of
// other tenants' or other studios' objects reveal nothing.
import { hotQuery } from "../db/prisma.ts";
import { Prisma, type Studio, type StudioRole } from "../generated/prisma/client.ts";
import { NotFoundError } from "../lib/errors.ts";
import { managedBy, maySee, ownerBoundSql, ownerCeilingSql } from "./agents/core/ownership.ts";
import { readableRuns } from "./agents/policy/labels.ts";
import { primeOwnerMembership } from "./agents/policy/policy.ts";
import type { Ctx, StudioScope } from "./registry/types.ts";

/**
 * The studio and the actor's role in it, in one statement sent on the pool directly: every
 * agent step on a studio page starts here, and Prisma's runtime cost more than the read.
 */
export async function loadStudio(ctx: Ctx, handle: string): Promise<StudioScope> {
  return (await loadStudioWith(ctx, handle, null)).studio;
}

/**
 * loadStudio, and in the same statement what `content` reads of the studio (given its id as
 * SQL): a studio page is then one round trip, not two. The content is read for members
 * only: a CASE evaluates its subquery only when the actor's role was found.
 */
export async function loadStudioWith<T>(
  ctx: Ctx,
  handle: string,
  content: ((studioId: Prisma.Sql) => Prisma.Sql) | null,
): Promise<{ studio: StudioScope; content: T }> {
  // A subagent may do no more than its owner: what its owner may be here comes in the same read.
  const agent = ctx.actor.kind === "subagent";
  const [row] = await hotQuery<{
    studio: Omit<Studio, "createdAt"> & { createdAt: string };
    role: StudioRole | null;
    owner_role: StudioRole | null;
    content: T;
  }>(
    ctx.db,
    Prisma.sql`
    SELECT json_build_object('id', s.id, 'tenantId', s.tenant_id, 'handle', s.handle, 'name', s.name,
        'description', s.description, 'inviteCode', s.invite_code, 'createdById', s.created_by_id,
        'createdAt', s.created_at AT TIME ZONE 'UTC') AS studio, am.role::text AS role,
      ${agent ? ownerCeilingSql(Prisma.sql`${ctx.actor.id}`, Prisma.sql`s.id`) : Prisma.sql`NULL`} AS owner_role,
      ${content ? Prisma.sql`CASE WHEN am.role IS NOT NULL THEN ${content(Prisma.sql`s.id`)} END` : Prisma.sql`NULL`} AS content
    FROM studios s
      -- A join, not a scalar subquery: the CASE reads the role again, and a subquery would run twice.
      LEFT JOIN studio_members am ON am.studio_id = s.id AND am.user_id = ${ctx.actor.id}
    WHERE s.tenant_id = ${ctx.tenant.id} AND s.handle = ${handle}`,
  );
  // An agent never reads past its owner: where its owner is not (or, for a studio's agent,
  // outside its studio) it gets the 404 its owner would, whatever its own membership says.
  if (!row?.role || (agent && !row.owner_role)) throw new NotFoundError(`No studio ${handle}`);
  if (agent) primeOwnerMembership(ctx, row.studio.id, row.owner_role ? { role: row.owner_role } : null);
  return {
    studio: { ...row.studio, createdAt: new Date(row.studio.createdAt), role: row.role },
    content: row.content,
  };
}

export async function loadNote(ctx: Ctx, studio: StudioScope, id: string) {
  const note = await ctx.db.note.findFirst({ where: { id, studioId: studio.id, tenantId: ctx.tenant.id } });
  if (!note) throw new NotFoundError(`No note ${id} in ${studio.handle}`);
  return note;
}

export async function loadDecision(ctx: Ctx, studio: StudioScope, id: string) {
  const decision = await ctx.db.decision.findFirst({
    where: { id, studioId: studio.id, tenantId: ctx.tenant.id },
  });
  if (!decision) throw new NotFoundError(`No decision ${id} in ${studio.handle}`);
  return decision;
}

export async function loadCommitment(ctx: Ctx, studio: StudioScope, id: string) {
  const commitment = await ctx.db.commitment.findFirst({
    where: { id, studioId: studio.id, tenantId: ctx.tenant.id },
  });
  if (!commitment) throw new NotFoundError(`No commitment ${id} in ${studio.handle}`);
  return commitment;
}

export async function loadUser(ctx: Ctx, handle: string) {
  const user = await ctx.db.user.findUnique({
    where: { tenantId_handle: { tenantId: ctx.tenant.id, handle } },
  });
  if (!user || !(await maySee(ctx, user))) throw new NotFoundError(`No user @${handle}`);
  return user;
}

export function requireScope<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`page scope is missing ${what}`);
  return value;
}

/**
 * The subagents the actor manages, as a `where` on users: the one rule for every list of
 * "your agents" (/subagents, /runs) and every "may this viewer open its run" link.
 */
export function managedAgentsWhere(ctx: Ctx) {
  return { tenantId: ctx.tenant.id, ...managedBy(ctx.actor.id) };
}

/** Which of these agents the actor manages (whose runs it may open). */
export async function managedAmong(ctx: Ctx, agentIds: string[]): Promise<Set<string>> {
  if (!agentIds.length) return new Set();
  const rows = await ctx.db.user.findMany({
    where: { ...managedAgentsWhere(ctx), id: { in: [...new Set(agentIds)] } },
    select: { id: true },
  });
  return new Set(rows.map((r) => r.id));
}

export async function loadRun(ctx: Ctx, agentId: string, id: string) {
  const run = await ctx.db.subagentTaskRun.findFirst({ where: { id, agentId, tenantId: ctx.tenant.id } });
  if (!run) throw new NotFoundError(`No run ${id}`);
  // A run shows what it read: only to people who can read all of it (an agent handed to new
  // managers keeps its old runs from them: agents/policy/transfer-disclosure.ts).
  if (
    !(await readableRuns(ctx.db, ctx.tenant.id, ctx.actor.id, [{ runId: run.id, agentId, label: run.label }]))
      .size
  )
    throw new NotFoundError(`No run ${id}`);
  return run;
}

/** Whom the actor acts within the view of (a run woken by someone who does not manage its agent). */
export const viewerIds = (ctx: Ctx): string[] => (ctx.viewers ?? []).map((v) => v.id);

/**
 * SQL: every viewer (a text[] of user ids) is a member of the studio; true when there are
 * none. Pages listing several studios' content filter with it, as resolve does for one.
 */
export function seenByViewers(viewers: Prisma.Sql, studioId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`NOT EXISTS (SELECT 1 FROM unnest(${viewers}::text[]) AS v(id) WHERE NOT EXISTS (
    SELECT 1 FROM studio_members vm WHERE vm.studio_id = ${studioId} AND vm.user_id = v.id))`;
}

/**
 * SQL: the reader `readerId` may read the studio `studioId` beyond its own membership: every
 * viewer it acts within is a member, and an agent's owner bounds it (ownerBoundSql). The one
 * rule every list of several studios' content filters with, as loadStudio does for one.
 */
export function readableSql(readerId: Prisma.Sql, viewers: Prisma.Sql, studioId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(${seenByViewers(viewers, studioId)} AND (${ownerBoundSql(readerId, studioId)}))`;
}

/** readableSql for the context's actor and viewers. */
export const readableByActor = (ctx: Ctx, studioId: Prisma.Sql): Prisma.Sql =>
  readableSql(Prisma.sql`${ctx.actor.id}`, Prisma.sql`${viewerIds(ctx)}`, studioId);

/**
 * The studios the actor may read beyond its membership (readableSql), for model queries;
 * null when nothing bounds it (a person acting for themselves).
 */
export async function studiosSeenByViewers(ctx: Ctx): Promise<string[] | null> {
  if (!viewerIds(ctx).length && ctx.actor.kind !== "subagent") return null;
  const rows = await ctx.db.$queryRaw<{ id: string }[]>`
    SELECT s.id FROM studios s WHERE s.tenant_id = ${ctx.tenant.id} AND ${readableByActor(ctx, Prisma.sql`s.id`)}`;
  return rows.map((r) => r.id);
}
