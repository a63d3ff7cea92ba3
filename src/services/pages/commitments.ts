import { loadCommitment, loadStudio } from "../access.ts";
import { link, quote } from "../registry/markdown.ts";
import { definePage } from "../registry/types.ts";
import { pager, paging, studioCrumbs, when, who } from "./format.ts";
import { watchBlocks } from "./subscriptions.ts";
import { reviewableIn } from "./thread-reviews.ts";
import { threadBlocks, threadFeed } from "./threads.ts";

// A commitment can gather thousands; the first ones and the count say enough.
const SHOWN_PARTICIPANTS = 50;

export const commitmentsPage = definePage({
  pattern: "/studios/:studio/commitments",
  actions: ["create_commitment"],
  resolve: async (ctx, params) => ({ studio: await loadStudio(ctx, params.studio) }),
  async render(ctx, scope, query) {
    const s = scope.studio;
    const paged = paging(query);
    const where = { tenantId: ctx.tenant.id, studioId: s.id };
    const [items, total] = await Promise.all([
      ctx.db.commitment.findMany({
        where,
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        skip: paged.skip,
        take: paged.take,
        include: { _count: { select: { participants: true } } },
      }),
      ctx.db.commitment.count({ where }),
    ]);
    const lines = items.map(
      (c) =>
        `- ${link(c.title, `/studios/${s.handle}/commitments/${c.id}`)} — ${c._count.participants}/${c.criticalMass} joined${c.activatedAt ? " · **active**" : ""}`,
    );
    return {
      title: `Commitments in ${s.name}`,
      breadcrumb: [...studioCrumbs(s), { label: "Commitments" }],
      blocks: [
        { md: lines.length ? lines.join("\n") : "_No commitments yet._" },
        { md: pager(`/studios/${s.handle}/commitments`, paged, total) },
      ],
    };
  },
});

export const commitmentPage = definePage({
  pattern: "/studios/:studio/commitments/:commitment",
  actions: ["join_commitment", "add_comment", "subscribe", "unsubscribe", "approve_action", "reject_action"],
  async resolve(ctx, params) {
    const studio = await loadStudio(ctx, params.studio);
    const commitment = await loadCommitment(ctx, studio, params.commitment);
    // Approve and Reject beside a reply waiting here, for whoever may review it (thread-reviews.ts).
    return { studio, commitment, reviewable: await reviewableIn(ctx, commitment.id) };
  },
  async render(ctx, scope, query) {
    const s = scope.studio;
    const c = scope.commitment;
    const path = `/studios/${s.handle}/commitments/${c.id}`;
    const [author, participants, n, thread, watch] = await Promise.all([
      ctx.db.user.findUniqueOrThrow({ where: { id: c.authorId } }),
      ctx.db.commitmentParticipant.findMany({
        where: { commitmentId: c.id },
        include: { user: true },
        orderBy: { joinedAt: "asc" },
        take: SHOWN_PARTICIPANTS,
      }),
      ctx.db.commitmentParticipant.count({ where: { commitmentId: c.id } }),
      threadBlocks(ctx, "commitment", c.id, path, query),
      watchBlocks(ctx, scope),
    ]);
    const status = c.activatedAt
      ? `**Active** since ${when(c.activatedAt)}: critical mass of ${c.criticalMass} reached.`
      : `**Pending**: ${n} of ${c.criticalMass} needed have joined; ${c.criticalMass - n} more and it becomes active.`;
    return {
      title: c.title,
      breadcrumb: [
        ...studioCrumbs(s),
        { label: "Commitments", path: `/studios/${s.handle}/commitments` },
        { label: c.title },
      ],
      blocks: [
        { md: `Proposed by ${who(author)} · ${when(c.createdAt)} · commitment \`${c.id}\`` },
        ...(c.description ? [{ md: quote(c.description) }] : []),
        { md: status },
        {
          md: `## Participants (${n})\n\n${n ? participants.map((p) => `- ${who(p.user)} · ${when(p.joinedAt)}`).join("\n") : "_Nobody yet._"}${n > participants.length ? `\n\n…and ${n - participants.length} more.` : ""}`,
        },
        ...watch,
        ...thread.blocks,
      ],
      live: { since: thread.since },
    };
  },
  live: (ctx, scope) => threadFeed(ctx, "commitment", scope.commitment.id),
});
