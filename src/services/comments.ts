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
  const chain: { type: string; id: string }[] = [];
  let cursor = parentId;
  for (let i = 0; cursor && i < 50; i++) {
    chain.push({ type: "comment", id: cursor });
    const parent: { parentId: string | null } | null = await tx.comment.findUnique({
      where: { id: cursor },
      select: { parentId: true },
    });
    cursor = parent?.parentId ?? null;
  }
  chain.push({ type: subjectType, id: subjectId });
  return chain;
}
