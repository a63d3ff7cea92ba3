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

const authorOf = (x: Author): Author => ({ name: x.name, handle: x.handle });

const noteLine = (n: NoteRow): NoteLine => ({
  id: n.id,
  title: n.title,
  createdAt: new Date(n.at),
  pinned: n.pinned,
  author: authorOf(n),
});

const countSql = (
  table: "notes" | "decisions" | "commitments" | "studio_members",
  t: string,
  s: Prisma.Sql,
) => Prisma.sql`(SELECT count(*) FROM ${Prisma.raw(table)} WHERE studio_id = ${s} AND tenant_id = ${t})::int`;

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
  const t = ctx.tenant.id;
  const { studio, content: r } = await loadStudioWith<Row>(
    ctx,
    handle,
    (studioId) => Prisma.sql`
    json_build_object(
      'pinned', (SELECT coalesce(json_agg(p ORDER BY p.pinned_at DESC), '[]') FROM (
         SELECT id, title, pinned_at FROM notes
         WHERE tenant_id = ${t} AND studio_id = ${studioId} AND pinned_at IS NOT NULL
         ORDER BY pinned_at DESC LIMIT ${OVERVIEW_PINNED}) p),
      'notes', ${noteLinesSql(t, studioId, 0, OVERVIEW_ITEMS)},
      'decisions', (SELECT coalesce(json_agg(x ORDER BY x.created_at DESC, x.id DESC), '[]') FROM (
         SELECT d.id, d.question, d.created_at, d.created_at AT TIME ZONE 'UTC' AS at, u.name, u.handle
         FROM decisions d JOIN users u ON u.id = d.author_id
         WHERE d.tenant_id = ${t} AND d.studio_id = ${studioId}
         ORDER BY d.created_at DESC, d.id DESC LIMIT ${OVERVIEW_ITEMS}) x),
      'commitments', (SELECT coalesce(json_agg(x ORDER BY x.created_at DESC, x.id DESC), '[]') FROM (
         SELECT c.id, c.title, c.critical_mass, c.activated_at IS NOT NULL AS activated, c.created_at,
           (SELECT count(*) FROM commitment_participants cp WHERE cp.commitment_id = c.id)::int AS joined
         FROM commitments c
         WHERE c.tenant_id = ${t} AND c.studio_id = ${studioId}
         ORDER BY c.created_at DESC, c.id DESC LIMIT ${OVERVIEW_ITEMS}) x),
      'agents', (SELECT coalesce(json_agg(a ORDER BY a.name), '[]') FROM (
         SELECT name, handle FROM users
         WHERE tenant_id = ${t} AND owner_studio_id = ${studioId} AND archived_at IS NULL) a),
      'n', ${countSql("notes", t, studioId)}, 'd', ${countSql("decisions", t, studioId)},
      'c', ${countSql("commitments", t, studioId)}, 'm', ${countSql("studio_members", t, studioId)})`,
  );
  return { studio, overview: overviewOf(r) };
}

function overviewOf(r: Row): StudioOverview {
  return {
    pinned: r.pinned.map((p) => ({ id: p.id, title: p.title })),
    notes: r.notes.map(noteLine),
    decisions: r.decisions.map((d) => ({
      id: d.id,
      question: d.question,
      createdAt: new Date(d.at),
      author: authorOf(d),
    })),
    commitments: r.commitments.map((c) => ({
      id: c.id,
      title: c.title,
      criticalMass: c.critical_mass,
      activated: c.activated,
      joined: c.joined,
    })),
    counts: { notes: r.n, decisions: r.d, commitments: r.c, members: r.m },
    agents: r.agents.map(authorOf),
  };
}

/** A studio (authorized as loadStudio does) and a page of its notes, newest first, with how many there are. */
export async function studioNotes(
  ctx: Ctx,
  handle: string,
  page: { skip: number; take: number },
): Promise<{ studio: StudioScope; notes: NoteLine[]; total: number }> {
  const t = ctx.tenant.id;
  const { studio, content } = await loadStudioWith<{ notes: NoteRow[]; total: number }>(
    ctx,
    handle,
    (studioId) => Prisma.sql`json_build_object('notes', ${noteLinesSql(t, studioId, page.skip, page.take)},
      'total', ${countSql("notes", t, studioId)})`,
  );
  return { studio, notes: content.notes.map(noteLine), total: content.total };
}
