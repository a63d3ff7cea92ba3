// Full-text search over the studios the actor belongs to. Visibility is part of the
// query itself (a join on the actor's memberships), so no result can leak past it.
import { Prisma } from "../generated/prisma/client.ts";
import { readableByActor } from "./access.ts";
import type { Ctx } from "./registry/types.ts";

export interface Hit {
  kind: "note" | "decision" | "commitment" | "comment";
  id: string;
  studioId: string;
  studio: string;
  title: string;
  snippet: string;
  path: string;
  createdAt: Date;
}

interface Row {
  kind: Hit["kind"];
  id: string;
  studio_id: string;
  studio: string;
  title: string;
  body: string;
  subject_type: string | null;
  subject_id: string | null;
  created_at: Date;
  total: bigint;
}

export async function search(
  ctx: Ctx,
  query: string,
  skip: number,
  take: number,
): Promise<{ hits: Hit[]; total: number }> {
  const rows = await ctx.db.$queryRaw<Row[]>`
    WITH mine AS (
      SELECT s.id, s.handle FROM studios s
      JOIN studio_members m ON m.studio_id = s.id AND m.user_id = ${ctx.actor.id}
      WHERE s.tenant_id = ${ctx.tenant.id} AND ${readableByActor(ctx, Prisma.sql`s.id`)}
    ), q AS (SELECT websearch_to_tsquery('english', ${query}) AS query),
    docs AS (
      SELECT 'note' AS kind, n.id, mine.id AS studio_id, mine.handle AS studio, n.title, n.text AS body, NULL AS subject_type, NULL AS subject_id, n.created_at
        FROM notes n JOIN mine ON mine.id = n.studio_id WHERE n.tenant_id = ${ctx.tenant.id}
      UNION ALL
      SELECT 'decision', d.id, mine.id, mine.handle, d.question, d.description, NULL, NULL, d.created_at
        FROM decisions d JOIN mine ON mine.id = d.studio_id WHERE d.tenant_id = ${ctx.tenant.id}
      UNION ALL
      SELECT 'commitment', c.id, mine.id, mine.handle, c.title, c.description, NULL, NULL, c.created_at
        FROM commitments c JOIN mine ON mine.id = c.studio_id WHERE c.tenant_id = ${ctx.tenant.id}
      UNION ALL
      SELECT 'comment', c.id, mine.id, mine.handle, '', c.text, c.subject_type::text, c.subject_id, c.created_at
        FROM comments c JOIN mine ON mine.id = c.studio_id WHERE c.tenant_id = ${ctx.tenant.id}
    ), matched AS (
      SELECT docs.*, ts_rank(to_tsvector('english', docs.title || ' ' || docs.body), q.query) AS rank
      FROM docs, q
      WHERE to_tsvector('english', docs.title || ' ' || docs.body) @@ q.query
         OR (docs.title || ' ' || docs.body) ILIKE '%' || ${likeEscape(query)} || '%'
    )
    SELECT kind, id, studio_id, studio, title, body, subject_type, subject_id, created_at, count(*) OVER () AS total
    FROM matched ORDER BY rank DESC, created_at DESC, kind, id OFFSET ${skip} LIMIT ${take}`;
  return {
    total: rows.length ? Number(rows[0]!.total) : 0,
    hits: rows.map((row) => ({
      kind: row.kind,
      id: row.id,
      studioId: row.studio_id,
      studio: row.studio,
      title: row.title || (row.kind === "comment" ? "Comment" : "Untitled"),
      snippet: snippet(row.body, query),
      path:
        row.kind === "comment"
          ? `/studios/${row.studio}/${row.subject_type}s/${row.subject_id}`
          : `/studios/${row.studio}/${row.kind}s/${row.id}`,
      createdAt: row.created_at,
    })),
  };
}

function likeEscape(text: string): string {
  return text.replace(/[\\%_]/g, "\\$&");
}

function snippet(body: string, query: string): string {
  const flat = body.replace(/\s+/g, " ").trim();
  const word = query.split(/\s+/).find((w) => w.length > 2) ?? query;
  const start = Math.max(0, flat.toLowerCase().indexOf(word.toLowerCase()) - 60);
  const cut = flat.slice(start, start + 160);
  return `${start > 0 ? "…" : ""}${cut}${start + 160 < flat.length ? "…" : ""}`;
}
