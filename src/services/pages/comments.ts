import type { Db } from "../../db/prisma.ts";
import type { SubjectType } from "../../generated/prisma/client.ts";
import { managedAmong } from "../access.ts";
import { escapeHtml, markdownToHtml } from "../registry/html.ts";
import { link, quote } from "../registry/markdown.ts";
import type { Block, Ctx, Query } from "../registry/types.ts";
import { pager, paging, when, who } from "./format.ts";
import { editedBeforeApproval, editedMark } from "./pending-format.ts";
import { runPath } from "./run-steps.ts";

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
  const paged = paging(query, COMMENTS_PER_PAGE);
  const [roots, total] = await Promise.all([
    ctx.db.comment.findMany({
      where: { ...where, parentId: null },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      skip: paged.skip,
      take: paged.take,
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
  for (const reply of replies)
    children.set(reply.parentId!, [...(children.get(reply.parentId!) ?? []), reply]);

  const written = [...roots, ...replies].filter((c) => c.author.kind === "subagent");
  const [managed, edited] = await Promise.all([
    managedAmong(
      ctx,
      written.map((c) => c.authorId),
    ),
    editedBeforeApproval(
      ctx,
      written.filter((c) => c.runId).map((c) => c.id),
    ),
  ]);
  const blocks: Block[] = [
    { md: `## Comments (${total + replies.length})${roots.length ? "" : "\n\n_No comments yet._"}` },
  ];
  const render = (comment: (typeof roots)[number], depth: number) => {
    // Agents read the nesting as arrows; a browser indents each reply under the one it answers.
    const level = Math.min(depth, 4);
    const lead = depth === 0 ? "" : `${"↳ ".repeat(level)}reply · `;
    const badge = comment.author.kind === "subagent" ? aiBadge(comment, managed.has(comment.authorId)) : null;
    // Agents reply by the comment's id; people reply with the link under it, so their view leaves it out.
    const head = (prefix: string, id: string) =>
      `${prefix}**${who(comment.author)}**${badge ? ` · ${badge.md}` : ""} · ${when(comment.createdAt)}${editedMark(edited.get(comment.id))}${id}\n\n${quote(comment.text)}`;
    const html = markdownToHtml(head("", ""));
    blocks.push({
      md: head(lead, ` · comment \`${comment.id}\``),
      html: `<div class="comment depth-${level}">${badge ? badge.html(html) : html}</div>`,
    });
    blocks.push({
      form: {
        action: "add_comment",
        fixed: { reply_to: comment.id },
        fields: ["text"],
        label: "Reply",
        style: "folded",
        depth: level,
      },
    });
    for (const child of children.get(comment.id) ?? []) render(child, depth + 1);
  };
  for (const root of roots) render(root, 0);
  const more = pager(path, paged, total);
  if (more) blocks.push({ md: more });
  return blocks;
}

/**
 * Says a comment was written by an AI agent, linked to the run that wrote it for whoever
 * may open that run (the agent's manager), to the agent's profile for everyone else.
 */
function aiBadge(comment: { runId: string | null; author: { handle: string } }, managesAgent: boolean) {
  const href =
    managesAgent && comment.runId
      ? runPath(comment.author.handle, comment.runId)
      : `/u/${comment.author.handle}`;
  const label = managesAgent && comment.runId ? "AI · its run" : "AI agent";
  const markdown = link(label, href);
  return {
    md: markdown,
    html: (html: string) =>
      html.replace(
        `<a href="${escapeHtml(href)}">${escapeHtml(label)}</a>`,
        `<a class="ai-badge" href="${escapeHtml(href)}" title="Written by an AI agent">${escapeHtml(label)}</a>`,
      ),
  };
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
