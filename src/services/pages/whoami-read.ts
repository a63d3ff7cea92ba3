// What /whoami shows, read in one statement. It is the first page of every agent run, so
// 200 runs starting at once read it 200 times before their first LLM call: as five reads
// (the user and owner, studios, unread notifications, their count, the month's spend) it
// was most of a run's start. Columns are UTC timestamps without a zone: `at` states it.
import { hotQuery } from "../../db/prisma.ts";
import { Prisma, type User } from "../../generated/prisma/client.ts";
import { monthOf } from "../money/ledger.ts";
import type { Ctx } from "../registry/types.ts";

export const WHOAMI_UNREAD = 10;

interface Author {
  name: string;
  handle: string;
}

export interface Whoami {
  user: Pick<User, "handle" | "name" | "kind" | "bio" | "agentConfig" | "scratchpad"> & {
    parent: Author | null;
  };
  studios: { name: string; handle: string; role: string }[];
  unread: { kind: string; path: string; excerpt: string; createdAt: Date; actor: Author }[];
  unreadCount: number;
  /** This month's spend on model calls, in micro-dollars (agents pay; people do not). */
  spentMicros: bigint;
}

interface Row {
  user: Whoami["user"] | null;
  studios: Whoami["studios"];
  unread: { kind: string; path: string; excerpt: string; at: string; name: string; handle: string }[];
  unread_count: number;
  spent: string | null;
}

export async function readWhoami(ctx: Ctx): Promise<Whoami> {
  const t = ctx.tenant.id;
  const [row] = await hotQuery<Row>(
    ctx.db,
    Prisma.sql`
    SELECT
      json_build_object('handle', u.handle, 'name', u.name, 'kind', u.kind, 'bio', u.bio,
        'agentConfig', u.agent_config, 'scratchpad', u.scratchpad,
        'parent', CASE WHEN p.id IS NULL THEN NULL ELSE json_build_object('name', p.name, 'handle', p.handle) END
      ) AS user,
      (SELECT coalesce(json_agg(x ORDER BY x.created_at, x.handle), '[]') FROM (
         SELECT s.name, s.handle, m.role, m.created_at
         FROM studio_members m JOIN studios s ON s.id = m.studio_id
         WHERE m.user_id = u.id AND m.tenant_id = ${t}) x) AS studios,
      (SELECT coalesce(json_agg(x ORDER BY x.created_at DESC, x.id DESC), '[]') FROM (
         SELECT n.id, n.kind, n.path, n.excerpt, n.created_at, n.created_at AT TIME ZONE 'UTC' AS at, a.name, a.handle
         FROM notifications n JOIN users a ON a.id = n.actor_id
         WHERE n.user_id = u.id AND n.tenant_id = ${t} AND n.dismissed_at IS NULL
         ORDER BY n.created_at DESC, n.id DESC LIMIT ${WHOAMI_UNREAD}) x) AS unread,
      (SELECT count(*) FROM notifications n
       WHERE n.user_id = u.id AND n.tenant_id = ${t} AND n.dismissed_at IS NULL)::int AS unread_count,
      (SELECT m.cost_micros FROM agent_usage_months m
       WHERE m.agent_id = u.id AND m.month = ${monthOf(new Date())})::text AS spent
    FROM users u LEFT JOIN users p ON p.id = u.parent_id
    WHERE u.id = ${ctx.actor.id} AND u.tenant_id = ${t}`,
  );
  if (!row?.user) throw new Error(`no user ${ctx.actor.id} in tenant ${t}`);
  return {
    user: row.user,
    studios: row.studios,
    unread: row.unread.map((n) => ({
      kind: n.kind,
      path: n.path,
      excerpt: n.excerpt,
      createdAt: new Date(n.at),
      actor: { name: n.name, handle: n.handle },
    })),
    unreadCount: row.unread_count,
    spentMicros: BigInt(row.spent ?? 0),
  };
}
