// What a studio's page and its notes list show, each read in one statement with the
// studio's own lookup and the actor's membership (access.ts). These pages are on nearly
// every agent's path, and a statement costs what its round trip costs whatever it returns:
// the studio page was seven reads once (the studio, pinned, notes, decisions, commitments,
// counts, its agents), then one. Columns are UTC timestamps without a zone: `at` states
// the zone so JSON carries it.
import { Prisma } from "../../generated/prisma/client.ts";
import { loadStudioWith } from "../access.ts";
import type { Ctx, StudioScope } from "../registry/types.ts";

export const OVERVIEW_ITEMS = 10;
export const OVERVIEW_PINNED = 5;

interface Author {
  name: string;
  handle: string;
}

export interface StudioOverview {
  pinned: { id: string; title: string }[];
  notes: { id: string; title: string; createdAt: Date; pinned: boolean; author: Author }[];
  decisions: { id: string; question: string; createdAt: Date; author: Author }[];
  commitments: { id: string; title: string; criticalMass: number; activated: boolean; joined: number }[];
  counts: { notes: number; decisions: number; commitments: number; members: number };
  /** The agents the studio owns, by name. */
  agents: Author[];
}

export type NoteLine = StudioOverview["notes"][number];

interface NoteRow {
  id: string;
  title: string;
  at: string;
  pinned: boolean;
  name: string;
  handle: string;
}

/** A studio's notes, newest first, with their authors, as a JSON array. */
const noteLinesSql = (tenantId: string, studioId: Prisma.Sql, skip: number, take: number) => Prisma.sql`
  (SELECT coalesce(json_agg(x ORDER BY x.created_at DESC, x.id DESC), '[]') FROM (
     SELECT n.id, n.title, n.created_at, n.created_at AT TIME ZONE 'UTC' AS at, n.pinned_at IS NOT NULL AS pinned,
       u.name, u.handle
     FROM notes n JOIN users u ON u.id = n.author_id
     WHERE n.tenant_id = ${tenantId} AND n.studio_id = ${studioId}
     ORDER BY n.created_at DESC, n.id DESC OFFSET ${skip} LIMIT ${take}) x)`;

const authorOf = (person: Author): Author => ({ name: person.name, handle: person.handle });

const noteLine = (note: NoteRow): NoteLine => ({
  id: note.id,
  title: note.title,
  createdAt: new Date(note.at),
  pinned: note.pinned,
  author: authorOf(note),
});

const countSql = (
  table: "notes" | "decisions" | "commitments" | "studio_members",
  tenantId: string,
  studioId: Prisma.Sql,
) =>
  Prisma.sql`(SELECT count(*) FROM ${Prisma.raw(table)} WHERE studio_id = ${studioId} AND tenant_id = ${tenantId})::int`;

interface Row {
  pinned: { id: string; title: string }[];
  notes: NoteRow[];
  decisions: { id: string; question: string; at: string; name: string; handle: string }[];
  commitments: { id: string; title: string; critical_mass: number; activated: boolean; joined: number }[];
  agents: Author[];
  n: number;
  d: number;
  c: number;
  m: number;
}

/** A studio (authorized as loadStudio does) and what its page shows, in one statement. */
export async function studioOverview(
  ctx: Ctx,
  handle: string,
): Promise<{ studio: StudioScope; overview: StudioOverview }> {
  const tenantId = ctx.tenant.id;
  const { studio, content } = await loadStudioWith<Row>(
    ctx,
    handle,
    (studioId) => Prisma.sql`
    json_build_object(
      'pinned', (SELECT coalesce(json_agg(p ORDER BY p.pinned_at DESC), '[]') FROM (
         SELECT id, title, pinned_at FROM notes
         WHERE tenant_id = ${tenantId} AND studio_id = ${studioId} AND pinned_at IS NOT NULL
         ORDER BY pinned_at DESC LIMIT ${OVERVIEW_PINNED}) p),
      'notes', ${noteLinesSql(tenantId, studioId, 0, OVERVIEW_ITEMS)},
      'decisions', (SELECT coalesce(json_agg(x ORDER BY x.created_at DESC, x.id DESC), '[]') FROM (
         SELECT d.id, d.question, d.created_at, d.created_at AT TIME ZONE 'UTC' AS at, u.name, u.handle
         FROM decisions d JOIN users u ON u.id = d.author_id
         WHERE d.tenant_id = ${tenantId} AND d.studio_id = ${studioId}
         ORDER BY d.created_at DESC, d.id DESC LIMIT ${OVERVIEW_ITEMS}) x),
      'commitments', (SELECT coalesce(json_agg(x ORDER BY x.created_at DESC, x.id DESC), '[]') FROM (
         SELECT c.id, c.title, c.critical_mass, c.activated_at IS NOT NULL AS activated, c.created_at,
           (SELECT count(*) FROM commitment_participants cp WHERE cp.commitment_id = c.id)::int AS joined
         FROM commitments c
         WHERE c.tenant_id = ${tenantId} AND c.studio_id = ${studioId}
         ORDER BY c.created_at DESC, c.id DESC LIMIT ${OVERVIEW_ITEMS}) x),
      'agents', (SELECT coalesce(json_agg(a ORDER BY a.name), '[]') FROM (
         SELECT name, handle FROM users
         WHERE tenant_id = ${tenantId} AND owner_studio_id = ${studioId} AND archived_at IS NULL) a),
      'n', ${countSql("notes", tenantId, studioId)}, 'd', ${countSql("decisions", tenantId, studioId)},
      'c', ${countSql("commitments", tenantId, studioId)}, 'm', ${countSql("studio_members", tenantId, studioId)})`,
  );
  return { studio, overview: overviewOf(content) };
}

function overviewOf(row: Row): StudioOverview {
  return {
    pinned: row.pinned.map((p) => ({ id: p.id, title: p.title })),
    notes: row.notes.map(noteLine),
    decisions: row.decisions.map((decision) => ({
      id: decision.id,
      question: decision.question,
      createdAt: new Date(decision.at),
      author: authorOf(decision),
    })),
    commitments: row.commitments.map((commitment) => ({
      id: commitment.id,
      title: commitment.title,
      criticalMass: commitment.critical_mass,
      activated: commitment.activated,
      joined: commitment.joined,
    })),
    counts: { notes: row.n, decisions: row.d, commitments: row.c, members: row.m },
    agents: row.agents.map(authorOf),
  };
}

/** A studio (authorized as loadStudio does) and a page of its notes, newest first, with how many there are. */
export async function studioNotes(
  ctx: Ctx,
  handle: string,
  page: { skip: number; take: number },
): Promise<{ studio: StudioScope; notes: NoteLine[]; total: number }> {
  const tenantId = ctx.tenant.id;
  const { studio, content } = await loadStudioWith<{ notes: NoteRow[]; total: number }>(
    ctx,
    handle,
    (
      studioId,
    ) => Prisma.sql`json_build_object('notes', ${noteLinesSql(tenantId, studioId, page.skip, page.take)},
      'total', ${countSql("notes", tenantId, studioId)})`,
  );
  return { studio, notes: content.notes.map(noteLine), total: content.total };
}
