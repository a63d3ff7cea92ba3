import type { Db } from "../db/prisma.ts";
import type { SubjectType } from "../generated/prisma/client.ts";
import { pager, paging, when, who } from "./pages/format.ts";
import { quote } from "./registry/markdown.ts";
import type { Block, Ctx, Query } from "./registry/types.ts";

export const COMMENTS_PER_PAGE = 20;

/** Top-level comments paginated, each followed by its replies, oldest first, as one markdown block. */
export async function commentsBlock(
  ctx: Ctx,
  subjectType: SubjectType,
  subjectId: string,
  path: string,
  query: Query,
): Promise<Block[]> {
  const where = { tenantId: ctx.tenant.id, subjectType, subjectId };
  const pg = paging(query, COMMENTS_PER_PAGE);
  const [roots, total] = await Promise.all([
    ctx.db.comment.findMany({
      where: { ...where, parentId: null },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      skip: pg.skip,
      take: pg.take,
      include: { author: true },
    }),
    ctx.db.comment.count({ where: { ...where, parentId: null } }),
  ]);
  const replies = total
    ? await ctx.db.comment.findMany({
        where: { ...where, parentId: { not: null } },
        orderBy: { createdAt: "asc" },
        include: { author: true },
      })
    : [];
  const children = new Map<string, typeof replies>();
  for (const r of replies) children.set(r.parentId!, [...(children.get(r.parentId!) ?? []), r]);

  const blocks: Block[] = [
    { md: `## Comments (${total + replies.length})${roots.length ? "" : "\n\n_No comments yet._"}` },
  ];
  const render = (c: (typeof roots)[number], depth: number) => {
    const lead = depth === 0 ? "" : `${"↳ ".repeat(Math.min(depth, 4))}reply · `;
    blocks.push({
      md: `${lead}**${who(c.author)}** · ${when(c.createdAt)} · comment \`${c.id}\`\n\n${quote(c.text)}`,
    });
    blocks.push({
      form: {
        action: "add_comment",
        fixed: { reply_to: c.id },
        fields: ["text"],
        label: "Reply",
        style: "folded",
      },
    });
    for (const child of children.get(c.id) ?? []) render(child, depth + 1);
  };
  for (const root of roots) render(root, 0);
  const more = pager(path, pg, total);
  if (more) blocks.push({ md: more });
  return blocks;
}

/** The chain from a comment up to its subject: [{comment parent}, …, {note}]. */
export async function commentChain(tx: Db, parentId: string | null, subjectType: string, subjectId: string) {
  // One recursive query, not one query per ancestor.
  const ancestors = parentId
    ? await tx.$queryRaw<{ id: string }[]>`
        WITH RECURSIVE up(id, parent_id, depth) AS (
          SELECT id, parent_id, 0 FROM comments WHERE id = ${parentId}
          UNION ALL
          SELECT c.id, c.parent_id, up.depth + 1 FROM comments c JOIN up ON c.id = up.parent_id WHERE up.depth < 50
        )
        SELECT id FROM up ORDER BY depth`
    : [];
  return [...ancestors.map((r) => ({ type: "comment", id: r.id })), { type: subjectType, id: subjectId }];
}
