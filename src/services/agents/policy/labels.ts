// What an agent may disclose (docs/trust.md, "What an agent can disclose"). A subagent's label is
// the audiences of everything it has taken in; a write whose readers are not all readers of
// every one of them would show someone content they cannot read where it came from, so it
// waits for a manager's review whatever the agent's own rules say. The agent itself and its
// managers are readers of anything it read (it never reads past its owner), so a write to
// them, and a label that is only theirs, never holds anything.
import { type Db, hotQuery } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import { plural } from "../../../lib/plural.ts";
import { audienceKey, narrowed, parseLabel } from "../../registry/audiences.ts";
import type { Audience, Flow } from "../../registry/types.ts";
import { readsAudienceSql } from "../core/ownership.ts";

/** Who can read an audience, as a query of user ids. */
function readersSql(audience: Audience, tenantId: string): Prisma.Sql {
  if ("studio" in audience)
    return Prisma.sql`SELECT user_id FROM studio_members WHERE studio_id = ${audience.studio}`;
  if ("people" in audience) return Prisma.sql`SELECT unnest(${audience.people}::text[])`;
  if ("managersOf" in audience) return managersSql(audience.managersOf);
  return Prisma.sql`SELECT id FROM users WHERE tenant_id = ${tenantId} AND archived_at IS NULL`;
}

/** An agent and the people who manage it: its owner, or the admins of the studio that owns it. */
function managersSql(agentId: string | Prisma.Sql): Prisma.Sql {
  return Prisma.sql`SELECT ${agentId}::text
    UNION SELECT parent_id FROM users WHERE id = ${agentId} AND parent_id IS NOT NULL
    UNION SELECT m.user_id FROM users u JOIN studio_members m ON m.studio_id = u.owner_studio_id AND m.role = 'admin'
      WHERE u.id = ${agentId}`;
}

/**
 * Of these runs, those whose task and label `readerId` may read: the reader is inside every
 * audience of its label. Its managers usually are (it never reads past its owner), but not a
 * studio's admins who took it over after it read elsewhere (transfer-disclosure.ts).
 * Pages that show runs of agents the reader does not manage (usage dashboards) show the
 * others by what woke them, not by their task.
 */
export async function readableRuns(
  db: Db,
  tenantId: string,
  readerId: string,
  runs: { runId: string; agentId: string; label: unknown }[],
): Promise<Set<string>> {
  if (!runs.length) return new Set();
  const input = runs.map((r) => ({ id: r.runId, agent_id: r.agentId, label: parseLabel(r.label) }));
  const rows = await hotQuery<{ id: string }>(
    db,
    Prisma.sql`
    SELECT r.id FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS r(id text, agent_id text, label jsonb)
    WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(r.label) x(a)
         WHERE NOT (${readsAudienceSql(Prisma.sql`${readerId}`, Prisma.sql`x.a`, Prisma.sql`${tenantId}`)}))`,
  );
  return new Set(rows.map((r) => r.id));
}

export interface Disclosure {
  /** What the write would show them, and where it came from. */
  source: Audience;
  /** Readers of the write who cannot read `source`, first few by name. */
  outsiders: { handle: string; name: string }[];
  outsiderCount: number;
}

/**
 * Whom writing to `write` would disclose the label's content to, or null when everyone who
 * can read it could read all the agent took in. No statement in the usual cases: nothing read
 * yet, a write to the agent's managers, a write where everything read came from.
 */
export async function disclosure(
  db: Db,
  tenantId: string,
  agentId: string,
  write: Audience,
  label: Audience[],
): Promise<Disclosure | null> {
  const key = audienceKey(write);
  if (key === `m:${agentId}`) return null;
  for (const source of label) {
    if (audienceKey(source) === key || audienceKey(source) === `m:${agentId}`) continue;
    // Outside the workspace anyone may read it: every place inside is narrower, and no one
    // there can be named.
    if ("outside" in write) return { source, outsiders: [], outsiderCount: 0 };
    const rows = await hotQuery<{ handle: string; name: string; total: bigint }>(
      db,
      Prisma.sql`
      SELECT u.handle, u.name, count(*) OVER () AS total FROM users u
      WHERE u.id IN (${readersSql(write, tenantId)})
        AND u.id NOT IN (${readersSql(source, tenantId)})
        AND u.id NOT IN (${managersSql(agentId)})
      ORDER BY u.kind, u.name LIMIT 3`,
    );
    if (rows.length) return { source, outsiders: rows, outsiderCount: Number(rows[0]!.total) };
  }
  return null;
}

const names = (people: { handle: string; name: string }[]) => people.map((p) => `${p.name} (@${p.handle})`);

function listed(items: string[], total: number): string {
  const more = total - items.length;
  const all = more > 0 ? [...items, `${more} more`] : items;
  return all.length > 1 ? `${all.slice(0, -1).join(", ")} and ${all.at(-1)}` : (all[0] ?? "");
}

/** An audience as a place a person knows: "General", "a page only @scout's managers see". */
async function placeOf(db: Db, audience: Audience): Promise<string> {
  if ("studio" in audience) {
    const studio = await db.studio.findUnique({ where: { id: audience.studio }, select: { name: true } });
    return studio ? studio.name : "a studio";
  }
  if ("managersOf" in audience) {
    const user = await db.user.findUnique({ where: { id: audience.managersOf }, select: { handle: true } });
    return `@${user?.handle ?? "?"}'s own pages`;
  }
  if ("people" in audience) return "a private page";
  if ("outside" in audience) return "outside the workspace";
  return "the whole workspace";
}

/** Who can read where the content came from, in words: "only Alice and @scout", "its 4 members". */
async function readersOf(db: Db, tenantId: string, audience: Audience): Promise<string> {
  const rows = await hotQuery<{ handle: string; name: string; total: bigint }>(
    db,
    Prisma.sql`SELECT u.handle, u.name, count(*) OVER () AS total FROM users u
      WHERE u.id IN (${readersSql(audience, tenantId)}) ORDER BY u.kind, u.name LIMIT 4`,
  );
  const total = rows.length ? Number(rows[0]!.total) : 0;
  if (total === 0) return "nobody else";
  if (total <= 4) return `only ${listed(names(rows), total)}`;
  return `only its ${total} members`;
}

/**
 * The approval request in a manager's words: "This comment in General would show 11 people
 * (Bob (@bob), …) content from Alice's vault, which only Alice (@alice) and @scout can read."
 */
export async function disclosureText(
  db: Db,
  tenantId: string,
  what: string,
  write: Audience,
  disclosed: Disclosure,
  /** Where it goes, when that is no place in the workspace: "(outside the workspace)" for a tool's server. */
  where?: string,
): Promise<string> {
  const [place, source, readers] = await Promise.all([
    placeOf(db, write),
    placeOf(db, disclosed.source),
    readersOf(db, tenantId, disclosed.source),
  ]);
  const at = where ?? `in ${place}`;
  // Nobody outside can be named: what leaves is said, not who reads it.
  if ("outside" in write)
    return `This ${what} ${at} would send content from ${source}, which ${readers} can read.`;
  const who = `${plural(disclosed.outsiderCount, "person", "people")} (${listed(names(disclosed.outsiders), disclosed.outsiderCount)})`;
  return `This ${what} ${at} would show ${who} content from ${source}, which ${readers} can read.`;
}

/**
 * SQL: a stored label (a jsonb column) with `label`'s audiences added, each once. Done in the
 * statement, not read-modify-write, so two writers at once both leave what they read.
 */
export function withLabel(column: Prisma.Sql, label: Audience[]): Prisma.Sql {
  return Prisma.sql`(SELECT coalesce(jsonb_agg(DISTINCT x), '[]') FROM jsonb_array_elements(${column} || ${JSON.stringify(label)}::jsonb) x)`;
}

/**
 * An agent acting with a token (the markdown API, MCP): one label for the agent, whichever
 * of its tokens or sessions read what. It starts from the agent's and the token's (a token
 * from before the label moved to the agent), and every read is merged into both in SQL, so
 * two requests at once both leave what they read.
 */
export function agentTokenFlow(
  db: Db,
  agent: { id: string; agentLabel: unknown },
  token: { id: string; label: unknown },
): Flow {
  const initial = [...parseLabel(agent.agentLabel), ...parseLabel(token.label)];
  return storedFlow(
    narrowed([], initial) ?? [],
    (label) => db.$executeRaw`
      WITH token AS (UPDATE api_tokens SET label = ${withLabel(Prisma.sql`label`, label)} WHERE id = ${token.id})
      UPDATE users SET agent_label = ${withLabel(Prisma.sql`agent_label`, label)} WHERE id = ${agent.id}`,
  );
}

/**
 * A label kept on a row (a run, an agent's token): narrowed in memory as pages are read, and
 * written back only when it changes, which a run reading one studio does once.
 */
export function storedFlow(initial: unknown, save: (label: Audience[]) => Promise<unknown>): Flow {
  let label = parseLabel(initial);
  return {
    label: () => label,
    async read(sources) {
      const next = narrowed(label, sources);
      if (!next) return;
      label = next;
      await save(label);
    },
  };
}
