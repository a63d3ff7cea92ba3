// What /whoami shows, read in one statement. It is the first page of every agent run, so
// 200 runs starting at once read it 200 times before their first LLM call: as five reads
// (the user and owner, studios, unread notifications, their count, the month's spend) it
// was most of a run's start; a run's claim now brings it. Columns are UTC timestamps
// without a zone: `at` states it.
import { hotQuery } from "../../../db/prisma.ts";
import { Prisma, type User } from "../../../generated/prisma/client.ts";
import { readableSql, viewerIds } from "../../access.ts";
import { monthOf } from "../../money/ledger.ts";
import { parseLabel } from "../../registry/audiences.ts";
import type { Audience, Ctx } from "../../registry/types.ts";
import { insideLabelSql } from "./ownership.ts";

const WHOAMI_UNREAD = 10;

interface Author {
  name: string;
  handle: string;
}

export interface Whoami {
  user: Pick<User, "handle" | "name" | "kind" | "bio" | "agentConfig" | "scratchpad" | "scratchpadLabel"> & {
    parent: Author | null;
    /** A studio's agent: the studio that owns it (its admins manage it). */
    ownerStudio: Author | null;
  };
  /**
   * The studios named to the reader (inside its view and label), and how many more it is in:
   * naming those would narrow its label, so an ordinary run would be held for them.
   */
  studios: { id: string; name: string; handle: string; role: string }[];
  unnamedStudios: number;
  /** What an agent watches (subscriptions): where, and for which events; those in unnamed studios only counted. */
  watching: { path: string; events: string[]; enabled: boolean; studioId: string }[];
  unnamedWatching: number;
  /** Each quotes where it happened: `studioId` (none for an agent's own notices). */
  unread: {
    kind: string;
    path: string;
    excerpt: string;
    createdAt: Date;
    actor: Author;
    studioId: string | null;
  }[];
  unreadCount: number;
  /** This month's spend on model calls, in micro-dollars (agents pay; people do not). */
  spentMicros: bigint;
}

interface WhoamiJson {
  user: Whoami["user"];
  studios: { id: string; named: { name: string; handle: string } | null; role: string }[];
  watching: (Whoami["watching"][number] & { named: boolean })[];
  unread: {
    kind: string;
    path: string;
    excerpt: string;
    at: string;
    name: string;
    handle: string;
    studioId: string | null;
  }[];
  unreadCount: number;
  spent: string | null;
}

/**
 * One JSON value with everything /whoami shows of a user, or null: a subquery, so a run's
 * claim reads it in the same statement (agents/run-start.ts). Its aliases are its own, so
 * the user and tenant may name an outer query's columns.
 */
export const whoamiSql = (
  userId: Prisma.Sql,
  tenantId: Prisma.Sql,
  viewers: Prisma.Sql,
  /** The reader's label (jsonb): a studio is named only inside it (insideLabelSql); null names every one. */
  label: Prisma.Sql | null,
  date = new Date(),
) => {
  const named = (studioId: Prisma.Sql) =>
    label ? insideLabelSql(label, userId, tenantId, studioId) : Prisma.sql`true`;
  return Prisma.sql`(
  SELECT json_build_object(
    'user', json_build_object('handle', wu.handle, 'name', wu.name, 'kind', wu.kind, 'bio', wu.bio,
      'agentConfig', wu.agent_config, 'scratchpad', wu.scratchpad, 'scratchpadLabel', wu.scratchpad_label,
      'parent', CASE WHEN wp.id IS NULL THEN NULL ELSE json_build_object('name', wp.name, 'handle', wp.handle) END,
      'ownerStudio', CASE WHEN wos.id IS NULL THEN NULL ELSE json_build_object('name', wos.name, 'handle', wos.handle) END),
    'studios', (SELECT coalesce(json_agg(x ORDER BY x.created_at, x.id), '[]') FROM (
       SELECT ws.id, CASE WHEN ${named(Prisma.sql`ws.id`)} THEN json_build_object('name', ws.name, 'handle', ws.handle) END AS named,
         wm.role, wm.created_at
       FROM studio_members wm JOIN studios ws ON ws.id = wm.studio_id
       WHERE wm.user_id = wu.id AND wm.tenant_id = wu.tenant_id AND ${readableSql(userId, viewers, Prisma.sql`ws.id`)}) x),
    'watching', (SELECT coalesce(json_agg(x ORDER BY x.created_at), '[]') FROM (
       SELECT '/studios/' || ws.handle || CASE WHEN wsub.subject_type = 'studio' THEN ''
                ELSE '/' || wsub.subject_type || 's/' || wsub.subject_id END AS path,
              wsub.events, wsub.enabled, wsub.created_at, ws.id AS "studioId", ${named(Prisma.sql`ws.id`)} AS named
       FROM agent_subscriptions wsub JOIN studios ws ON ws.id = wsub.studio_id
       WHERE wsub.agent_id = wu.id AND wsub.tenant_id = wu.tenant_id
         AND ${readableSql(userId, viewers, Prisma.sql`wsub.studio_id`)}) x),
    'unread', (SELECT coalesce(json_agg(x ORDER BY x.created_at DESC, x.id DESC), '[]') FROM (
       SELECT wn.id, wn.kind, wn.path, wn.excerpt, wn.created_at, wn.created_at AT TIME ZONE 'UTC' AS at,
         wa.name, wa.handle, we.studio_id AS "studioId"
       FROM notifications wn JOIN users wa ON wa.id = wn.actor_id JOIN events we ON we.id = wn.event_id
       WHERE wn.user_id = wu.id AND wn.tenant_id = wu.tenant_id AND wn.dismissed_at IS NULL
         AND (we.studio_id IS NULL OR ${readableSql(userId, viewers, Prisma.sql`we.studio_id`)})
       ORDER BY wn.created_at DESC, wn.id DESC LIMIT ${WHOAMI_UNREAD}) x),
    'unreadCount', (SELECT count(*) FROM notifications wn JOIN events we ON we.id = wn.event_id
       WHERE wn.user_id = wu.id AND wn.tenant_id = wu.tenant_id AND wn.dismissed_at IS NULL
         AND (we.studio_id IS NULL OR ${readableSql(userId, viewers, Prisma.sql`we.studio_id`)})),
    'spent', (SELECT wmo.cost_micros FROM agent_usage_months wmo
       WHERE wmo.agent_id = wu.id AND wmo.month = ${monthOf(date)})::text)
  FROM users wu LEFT JOIN users wp ON wp.id = wu.parent_id LEFT JOIN studios wos ON wos.id = wu.owner_studio_id
  WHERE wu.id = ${userId} AND wu.tenant_id = ${tenantId})`;
};

/** Whom an agent works for, in words: its owner, or its studio's admins. */
export function ownerText(user: Pick<Whoami["user"], "parent" | "ownerStudio">): string {
  if (user.parent) return `your owner, ${user.parent.name} (@${user.parent.handle})`;
  if (user.ownerStudio)
    return `the studio ${user.ownerStudio.name} (\`${user.ownerStudio.handle}\`), which owns you: its admins are your owners, and you act only in that studio`;
  return "nobody: you have no owner";
}

export function parseWhoami(json: WhoamiJson): Whoami {
  return {
    user: json.user,
    studios: json.studios.flatMap((m) => (m.named ? [{ id: m.id, ...m.named, role: m.role }] : [])),
    unnamedStudios: json.studios.filter((m) => !m.named).length,
    watching: json.watching
      .filter((w) => w.named)
      .map((w) => ({ path: w.path, events: w.events, enabled: w.enabled, studioId: w.studioId })),
    unnamedWatching: json.watching.filter((w) => !w.named).length,
    unread: json.unread.map((notification) => ({
      kind: notification.kind,
      path: notification.path,
      excerpt: notification.excerpt,
      createdAt: new Date(notification.at),
      actor: { name: notification.name, handle: notification.handle },
      studioId: notification.studioId,
    })),
    unreadCount: json.unreadCount,
    spentMicros: BigInt(json.spent ?? 0),
  };
}

export async function readWhoami(ctx: Ctx): Promise<Whoami> {
  // Read by the caller already (a run's claim): the page renders that instead of reading again.
  const ready = ctx.primed?.whoami as Whoami | undefined;
  if (ready) return ready;
  const [row] = await hotQuery<{ whoami: WhoamiJson | null }>(
    ctx.db,
    Prisma.sql`SELECT ${whoamiSql(
      Prisma.sql`${ctx.actor.id}`,
      Prisma.sql`${ctx.tenant.id}`,
      Prisma.sql`${viewerIds(ctx)}`,
      // An agent's label names what it may be told without narrowing it; a person's page names all.
      ctx.flow ? Prisma.sql`${JSON.stringify(ctx.flow.label())}::jsonb` : null,
    )} AS whoami`,
  );
  if (!row?.whoami) throw new Error(`no user ${ctx.actor.id} in tenant ${ctx.tenant.id}`);
  return parseWhoami(row.whoami);
}

/**
 * What /whoami quotes from elsewhere, each with who can read it there: its notifications'
 * studios, and the label of the run that last wrote its scratchpad. Its own configuration,
 * written by its managers for it to act on, narrows nothing.
 */
export function whoamiSources(whoami: Whoami): Audience[] {
  const studios = whoami.unread.flatMap((n) => (n.studioId ? [{ studio: n.studioId }] : []));
  // The studios it names add nothing: it names only those inside the reader's label already
  // (insideLabelSql), so naming them shows no one anything the label does not cover.
  return [...parseLabel(whoami.user.scratchpadLabel), ...studios];
}
