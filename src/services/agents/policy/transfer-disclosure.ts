// A change of an agent's managers is a disclosure decision (issue 42): its memory and its
// runs hold what it read, and its new managers would read them. Before a transfer, this says
// who would read what they cannot read today, in the disclosure rule's words: "Bob Brown
// (@bob) would read what @spy read in Vault: its memory and 7 runs". Old runs stay readable
// only by people who can read their label (access.ts loadRun); the memory is the owner's to
// clear, or to hand over knowingly.
import { type Db, hotQuery } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import { plural } from "../../../lib/plural.ts";
import { readsAudienceSql } from "../core/ownership.ts";

interface Row {
  item: string;
  studio_name: string | null;
  manager: string;
  name: string;
  handle: string;
}

const listed = (items: string[]) =>
  items.length > 1 ? `${items.slice(0, -1).join(", ")} and ${items.at(-1)}` : (items[0] ?? "");

/**
 * What giving the agent to `studioId` would show its admins that they cannot read today, in
 * words; null when nothing (they could read all it holds).
 */
export async function transferDisclosure(
  db: Db,
  tenantId: string,
  agent: { id: string; handle: string },
  studioId: string,
): Promise<string | null> {
  const rows = await hotQuery<Row>(
    db,
    Prisma.sql`
    WITH managers AS (
      SELECT u.id, u.name, u.handle FROM studio_members m JOIN users u ON u.id = m.user_id
      WHERE m.studio_id = ${studioId} AND m.role = 'admin' AND u.kind = 'person' AND u.archived_at IS NULL
        AND u.id NOT IN (SELECT parent_id FROM users WHERE id = ${agent.id} AND parent_id IS NOT NULL)
    ), items AS (
      SELECT 'memory' AS item, x.a FROM users ag, jsonb_array_elements(ag.scratchpad_label) x(a)
        WHERE ag.id = ${agent.id} AND ag.scratchpad <> ''
      UNION ALL
      SELECT 'run:' || r.id, x.a FROM subagent_task_runs r, jsonb_array_elements(r.label) x(a)
        WHERE r.agent_id = ${agent.id} AND r.tenant_id = ${tenantId}
    )
    SELECT DISTINCT i.item, s.name AS studio_name, m.id AS manager, m.name, m.handle
    FROM items i CROSS JOIN managers m LEFT JOIN studios s ON s.id = i.a->>'studio'
    -- Its own pages (what its managers wrote for it) are theirs to read once they manage it.
    WHERE coalesce(i.a->>'managersOf', '') <> ${agent.id}
      AND NOT (${readsAudienceSql(Prisma.sql`m.id`, Prisma.sql`i.a`, Prisma.sql`${tenantId}`)})
    ORDER BY m.name, s.name`,
  );
  if (!rows.length) return null;
  const people = [...new Map(rows.map((r) => [r.manager, `${r.name} (@${r.handle})`])).values()];
  const places = [...new Set(rows.map((r) => r.studio_name ?? "a private page"))];
  const runs = new Set(rows.filter((r) => r.item.startsWith("run:")).map((r) => r.item)).size;
  const what = [
    rows.some((r) => r.item === "memory") ? "its memory" : "",
    runs ? plural(runs, "run") : "",
  ].filter(Boolean);
  const closed = runs
    ? ` Its old runs stay closed to them: a run opens only to people who can read where it read.`
    : "";
  return `${listed(people)} would read what @${agent.handle} read in ${listed(places)}: ${listed(what)}.${closed}`;
}
