// What the isolation sweep checks for: A's needles in a response, a snapshot of every
// tenant table's rows (nothing of A written), and other tenants' rows mentioning A.
import type { LightMyRequestResponse } from "fastify";
import { testPrisma } from "./app.ts";
import type { Victim } from "./isolation-seeds.ts";

/** Needles of A that appear in the response (body or headers), ignoring what the request itself sent. */
export function leaks(res: LightMyRequestResponse, needles: string[], sent: string): string[] {
  const seen = `${JSON.stringify(res.headers)}\n${res.body}`;
  return needles.filter((n) => !sent.includes(n) && seen.includes(n));
}

const UNSCOPED_TABLES = new Set(["tenants", "_prisma_migrations"]);

/** Every table with a tenant_id column; any other table (but tenants) fails the suite: it cannot be checked. */
export async function tenantTables(): Promise<string[]> {
  const rows = await testPrisma().$queryRaw<{ table_name: string; scoped: boolean }[]>`
    SELECT t.table_name, EXISTS (
      SELECT 1 FROM information_schema.columns c
      WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'tenant_id'
    ) AS scoped
    FROM information_schema.tables t
    WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
    ORDER BY t.table_name`;
  const unscoped = rows.filter((r) => !r.scoped && !UNSCOPED_TABLES.has(r.table_name));
  if (unscoped.length)
    throw new Error(
      `tenant-isolation: tables without tenant_id: ${unscoped.map((r) => r.table_name).join(", ")}`,
    );
  return rows.filter((r) => r.scoped).map((r) => r.table_name);
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * A's failed-login counts: anyone may try A's login form, and the attempt is meant to count
 * in A. The rows hold nothing of A's (a hash of the email typed, the address it came from).
 */
const MOVED_BY_STRANGERS = new Set(["login_throttles"]);
/**
 * A's audit trail moves with A's own token calls, which the suite makes in B's turn too (A
 * reads its usage CSVs and token pages to compare). B's calls never land there: checked apart,
 * as "every audit row names its own workspace's token and person" (tenant-isolation.test.ts).
 */
const MOVED_BY_OWN_CALLS = new Set(["api_calls"]);
/**
 * Those same calls stamp A's token's `last_used_at`, and A's person's `last_seen_at`, when the
 * last stamp is over a minute old (services/tokens.ts, services/sessions.ts), which a slow
 * machine makes happen in B's turn: the columns are left out.
 */
const STAMPED_BY_OWN_CALLS = ["last_used_at", "last_seen_at"];

/** Row count and a hash of every row's full content, per table, for one tenant (and its tenants row). */
export async function snapshot(tenantId: string): Promise<Record<string, string>> {
  const db = testPrisma();
  const out: Record<string, string> = {};
  const one = async (table: string, column: string) => {
    const [r] = await db.$queryRawUnsafe<{ n: number; h: string }[]>(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '')) AS h
       FROM (SELECT to_jsonb(t) - $2::text[] AS r FROM ${quoteIdent(table)} t WHERE ${column} = $1) rows`,
      tenantId,
      STAMPED_BY_OWN_CALLS,
    );
    out[table] = `${r!.n} rows, ${r!.h}`;
  };
  await one("tenants", "id");
  for (const t of await tenantTables())
    if (!MOVED_BY_STRANGERS.has(t) && !MOVED_BY_OWN_CALLS.has(t)) await one(t, "tenant_id");
  return out;
}

/** Everything that identifies A's data: every row id, invite codes, token secrets and prefixes, emails, handles only A has. */
export async function victimNeedles(v: Victim): Promise<{ all: string[]; hostOnly: string[] }> {
  const db = testPrisma();
  const tid = v.world.tenant.id;
  const ids: string[] = [tid];
  for (const t of await tenantTables()) {
    const hasId = await db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ${t} AND column_name = 'id'`;
    if (!hasId[0]!.n) continue;
    const rows = await db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id FROM ${quoteIdent(t)} WHERE tenant_id = $1`,
      tid,
    );
    ids.push(...rows.map((r) => r.id));
  }
  const studios = await db.studio.findMany({ where: { tenantId: tid } });
  const tokens = await db.apiToken.findMany({ where: { tenantId: tid } });
  const users = await db.user.findMany({ where: { tenantId: tid } });
  const all = [
    v.mark,
    v.findme,
    ...ids,
    ...studios.map((s) => s.inviteCode),
    ...studios.map((s) => s.handle).filter((h) => h !== "general"),
    ...tokens.map((t) => t.prefix),
    ...tokens.map((t) => t.tokenHash),
    ...[v.world.alice, v.world.bob, v.world.carol, v.zed, v.yan].map((p) => p.token),
    v.shared.token.secret,
    v.only.token.secret,
    ...v.secrets,
    ...users.map((u) => u.email!).filter(Boolean),
    v.zed.handle,
    v.yan.handle,
  ];
  // A's workspace name is public on A's own host (its login page), never on B's.
  return { all: [...new Set(all)], hostOnly: [v.world.tenant.subdomain, v.world.tenant.name] };
}

/**
 * Columns that record what a tenant's own caller sent, so they hold whatever B typed: the
 * audit trail's page is the path B's token asked for, A's ids in it included. B knew them
 * already; the row shows them to B's token owner only, and nothing of A's is read into it.
 */
const ECHOES: Record<string, string[]> = { api_calls: ["page"] };

/** Rows of any other tenant whose content mentions one of the needles, per table. */
export async function foreignRowsMentioning(
  tenantId: string,
  needles: string[],
): Promise<Record<string, number>> {
  const db = testPrisma();
  const out: Record<string, number> = {};
  for (const t of await tenantTables()) {
    const echoes = ECHOES[t];
    const content = echoes ? `(to_jsonb(t) - '{${echoes.join(",")}}'::text[])::text` : "t::text";
    const [r] = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM ${quoteIdent(t)} t
       WHERE t.tenant_id <> $1 AND EXISTS (SELECT 1 FROM unnest($2::text[]) n WHERE strpos(${content}, n) > 0)`,
      tenantId,
      needles,
    );
    if (r!.n) out[t] = r!.n;
  }
  return out;
}
