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
    const studio = scope.studio;
    const paged = paging(query);
    const where = { tenantId: ctx.tenant.id, studioId: studio.id };
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
      (commitment) =>
        `- ${link(commitment.title, `/studios/${studio.handle}/commitments/${commitment.id}`)} — ${commitment._count.participants}/${commitment.criticalMass} joined${commitment.activatedAt ? " · **active**" : ""}`,
    );
    return {
      title: `Commitments in ${studio.name}`,
      breadcrumb: [...studioCrumbs(studio), { label: "Commitments" }],
      blocks: [
        { md: lines.length ? lines.join("\n") : "_No commitments yet._" },
        { md: pager(`/studios/${studio.handle}/commitments`, paged, total) },
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
    const studio = scope.studio;
    const commitment = scope.commitment;
    const path = `/studios/${studio.handle}/commitments/${commitment.id}`;
    const [author, participants, joinedCount, thread, watch] = await Promise.all([
      ctx.db.user.findUniqueOrThrow({ where: { id: commitment.authorId } }),
      ctx.db.commitmentParticipant.findMany({
        where: { commitmentId: commitment.id },
        include: { user: true },
        orderBy: { joinedAt: "asc" },
        take: SHOWN_PARTICIPANTS,
      }),
      ctx.db.commitmentParticipant.count({ where: { commitmentId: commitment.id } }),
      threadBlocks(ctx, "commitment", commitment.id, path, query),
      watchBlocks(ctx, scope),
    ]);
    const status = commitment.activatedAt
      ? `**Active** since ${when(commitment.activatedAt)}: critical mass of ${commitment.criticalMass} reached.`
      : `**Pending**: ${joinedCount} of ${commitment.criticalMass} needed have joined; ${commitment.criticalMass - joinedCount} more and it becomes active.`;
    return {
      title: commitment.title,
      breadcrumb: [
        ...studioCrumbs(studio),
        { label: "Commitments", path: `/studios/${studio.handle}/commitments` },
        { label: commitment.title },
      ],
      blocks: [
        {
          md: `Proposed by ${who(author)} · ${when(commitment.createdAt)} · commitment \`${commitment.id}\``,
        },
        ...(commitment.description ? [{ md: quote(commitment.description) }] : []),
        { md: status },
        {
          md: `## Participants (${joinedCount})\n\n${joinedCount ? participants.map((p) => `- ${who(p.user)} · ${when(p.joinedAt)}`).join("\n") : "_Nobody yet._"}${joinedCount > participants.length ? `\n\n…and ${joinedCount - participants.length} more.` : ""}`,
        },
        ...watch,
        ...thread.blocks,
      ],
      live: { since: thread.since },
    };
  },
  live: (ctx, scope) => threadFeed(ctx, "commitment", scope.commitment.id),
});
