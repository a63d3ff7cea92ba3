// Who a person may ask, and who they may mention: the agent directory (/agents), an agent's
// profile, and the composers' @-autocomplete (/mentionable) read these. Every agent listed
// passes askableSql and every studio named passes wakeStudiosSql (ownership.ts): the one
// rule of who wakes whom, so nothing here lists an agent its reader could not see or wake.
import type { Db } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import { askableSql, managedBySql, wakeStudiosSql } from "./ownership.ts";

export interface Place {
  id: string;
  handle: string;
  name: string;
}

export interface AskableAgent {
  id: string;
  handle: string;
  name: string;
  /** What it does, in its managers' words (update_subagent); "" when they have not said. */
  description: string;
  paused: boolean;
  /** The reader manages it: its run form is theirs, its runs theirs to read. */
  manages: boolean;
  /** The reader may give it a task with its run form (they manage it, or its studio lets members). */
  mayRun: boolean;
  /** Its owner: a person, or a studio whose admins manage it. */
  owner: { kind: "person" | "studio"; handle: string; name: string };
  /** Where a mention by the reader wakes it: studios both are in. */
  studios: Place[];
}

interface Row extends Omit<AskableAgent, "owner"> {
  ownerKind: "person" | "studio";
  ownerHandle: string;
  ownerName: string;
}

/**
 * The agents `actorId` may ask, by name, each with where a mention of theirs wakes it.
 * `handles` narrows to some (a profile asks about one); `prefix` to handles or names that
 * start so (the autocomplete); `studioId` to the agents a mention there wakes.
 */
export async function askableAgents(
  db: Db,
  tenantId: string,
  actorId: string,
  opts: { handles?: string[]; prefix?: string; studioId?: string; limit?: number } = {},
): Promise<AskableAgent[]> {
  const prefix = opts.prefix ? `${opts.prefix.replace(/[\\%_]/g, "\\$&")}%` : null;
  const rows = await db.$queryRaw<Row[]>(Prisma.sql`
    SELECT a.id, a.handle, a.name, coalesce(a.agent_config->>'description', '') AS description,
      a.paused_at IS NOT NULL AS paused,
      ${managedBySql("a", actorId)} AS manages,
      (${managedBySql("a", actorId)} OR (coalesce((a.agent_config->>'members_may_run')::boolean, false)
        AND EXISTS (SELECT 1 FROM studio_members rm WHERE rm.studio_id = a.owner_studio_id AND rm.user_id = ${actorId}))) AS "mayRun",
      CASE WHEN a.owner_studio_id IS NULL THEN 'person' ELSE 'studio' END AS "ownerKind",
      coalesce(op.handle, os.handle) AS "ownerHandle", coalesce(op.name, os.name) AS "ownerName",
      coalesce((SELECT json_agg(json_build_object('id', s.id, 'handle', s.handle, 'name', s.name) ORDER BY s.name, s.handle)
        FROM studios s WHERE s.id IN ${wakeStudiosSql(Prisma.sql`a.id`, Prisma.sql`${actorId}`)}), '[]') AS studios
    FROM users a
      LEFT JOIN users op ON op.id = a.parent_id
      LEFT JOIN studios os ON os.id = a.owner_studio_id
    WHERE a.tenant_id = ${tenantId} AND ${askableSql("a", actorId)}
      ${opts.handles ? Prisma.sql`AND a.handle = ANY(${opts.handles}::text[])` : Prisma.empty}
      ${prefix ? Prisma.sql`AND (a.handle ILIKE ${prefix} OR a.name ILIKE ${prefix})` : Prisma.empty}
      ${opts.studioId ? Prisma.sql`AND ${opts.studioId} IN ${wakeStudiosSql(Prisma.sql`a.id`, Prisma.sql`${actorId}`)}` : Prisma.empty}
    ORDER BY a.name, a.handle
    ${opts.limit ? Prisma.sql`LIMIT ${opts.limit}` : Prisma.empty}`);
  return rows.map(({ ownerKind, ownerHandle, ownerName, ...agent }) => ({
    ...agent,
    owner: { kind: ownerKind, handle: ownerHandle, name: ownerName },
  }));
}

export interface Mentionable {
  handle: string;
  name: string;
  kind: "person" | "agent";
  /** An agent's "what it does"; "" for people. */
  description: string;
}

/**
 * Who `actorId` may mention, for the autocomplete: in a studio, its people (a mention notifies
 * only members) and the agents a mention there wakes; elsewhere, the people they share a
 * studio with and every agent they may ask. Handles or names starting with `prefix`; people
 * first, at most `limit`. Deactivated people are left out: they read nothing.
 */
export async function mentionable(
  db: Db,
  tenantId: string,
  actorId: string,
  opts: { prefix: string; studioId?: string; limit: number },
): Promise<Mentionable[]> {
  const prefix = `${opts.prefix.replace(/[\\%_]/g, "\\$&")}%`;
  const people = await db.$queryRaw<Mentionable[]>(Prisma.sql`
    SELECT p.handle, p.name, 'person' AS kind, '' AS description FROM users p
    WHERE p.tenant_id = ${tenantId} AND p.kind = 'person' AND p.id <> ${actorId}
      AND p.archived_at IS NULL AND p.deactivated_at IS NULL
      AND (p.handle ILIKE ${prefix} OR p.name ILIKE ${prefix})
      AND EXISTS (SELECT 1 FROM studio_members pm JOIN studio_members me
          ON me.studio_id = pm.studio_id AND me.user_id = ${actorId}
        WHERE pm.user_id = p.id ${opts.studioId ? Prisma.sql`AND pm.studio_id = ${opts.studioId}` : Prisma.empty})
    ORDER BY p.handle LIMIT ${opts.limit}`);
  const agents = await askableAgents(db, tenantId, actorId, {
    prefix: opts.prefix,
    limit: opts.limit,
    ...(opts.studioId && { studioId: opts.studioId }),
  });
  // An agent a mention wakes nowhere (one its reader only manages) is not offered in a studio.
  const woken = agents.filter((agent) => agent.studios.length);
  return [
    ...people,
    ...woken.map(
      (agent): Mentionable => ({
        handle: agent.handle,
        name: agent.name,
        kind: "agent",
        description: agent.description,
      }),
    ),
  ].slice(0, opts.limit);
}
