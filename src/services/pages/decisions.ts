import { loadDecision, loadStudio } from "../access.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, definePage } from "../registry/types.ts";
import { pager, paging, studioCrumbs, when, who } from "./format.ts";
import { watchBlocks } from "./subscriptions.ts";
import { reviewableIn } from "./thread-reviews.ts";
import { threadBlocks, threadFeed } from "./threads.ts";

export const decisionsPage = definePage({
  pattern: "/studios/:studio/decisions",
  actions: ["create_decision"],
  resolve: async (ctx, params) => ({ studio: await loadStudio(ctx, params.studio) }),
  async render(ctx, scope, query) {
    const studio = scope.studio;
    const paged = paging(query);
    const where = { tenantId: ctx.tenant.id, studioId: studio.id };
    const [items, total] = await Promise.all([
      ctx.db.decision.findMany({
        where,
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        skip: paged.skip,
        take: paged.take,
        include: { author: true },
      }),
      ctx.db.decision.count({ where }),
    ]);
    const lines = items.map(
      (decision) =>
        `- ${link(decision.question, `/studios/${studio.handle}/decisions/${decision.id}`)} — ${who(decision.author)}, ${when(decision.createdAt)}`,
    );
    return {
      title: `Decisions in ${studio.name}`,
      breadcrumb: [...studioCrumbs(studio), { label: "Decisions" }],
      blocks: [
        { md: lines.length ? lines.join("\n") : "_No decisions yet._" },
        { md: pager(`/studios/${studio.handle}/decisions`, paged, total) },
      ],
    };
  },
});

export const decisionPage = definePage({
  pattern: "/studios/:studio/decisions/:decision",
  actions: [
    "vote",
    "add_option",
    "add_comment",
    "subscribe",
    "unsubscribe",
    "approve_action",
    "reject_action",
  ],
  async resolve(ctx, params) {
    const studio = await loadStudio(ctx, params.studio);
    const decision = await loadDecision(ctx, studio, params.decision);
    // Approve and Reject beside a reply waiting here, for whoever may review it (thread-reviews.ts).
    return { studio, decision, reviewable: await reviewableIn(ctx, decision.id) };
  },
  async render(ctx, scope, query) {
    const studio = scope.studio;
    const decision = scope.decision;
    const path = `/studios/${studio.handle}/decisions/${decision.id}`;
    const [author, options, thread, watch] = await Promise.all([
      ctx.db.user.findUniqueOrThrow({ where: { id: decision.authorId } }),
      ctx.db.decisionOption.findMany({
        where: { decisionId: decision.id },
        orderBy: { createdAt: "asc" },
        include: { votes: true },
      }),
      threadBlocks(ctx, "decision", decision.id, path, query),
      watchBlocks(ctx, scope),
    ]);
    const ranked = options
      .map((option) => ({
        option,
        accepted: option.votes.filter((v) => v.accepted).length,
        preferred: option.votes.filter((v) => v.preferred).length,
        mine: option.votes.find((v) => v.userId === ctx.actor.id),
      }))
      .sort((a, b) => b.accepted - a.accepted || b.preferred - a.preferred);
    const voters = new Set(options.flatMap((o) => o.votes.map((v) => v.userId))).size;
    const rows = ranked.map(
      (choice, index) =>
        `| ${index + 1} | ${mdEscape(choice.option.title)} | \`${choice.option.id}\` | ${choice.accepted} | ${choice.preferred} | ${choice.mine ? `${choice.mine.accepted ? "accept" : "—"}${choice.mine.preferred ? ", prefer" : ""}` : "not voted"} |`,
    );
    const leader =
      ranked[0] && ranked[0].accepted > 0
        ? `Leading: **${mdEscape(ranked[0].option.title)}**.`
        : "No option accepted yet.";
    const blocks: Block[] = [
      { md: `Asked by ${who(author)} · ${when(decision.createdAt)} · decision \`${decision.id}\`` },
      ...(decision.description ? [{ md: quote(decision.description) }] : []),
      {
        md: options.length
          ? `## Options and results\n\n${voters} ${voters === 1 ? "person has" : "people have"} voted. ${leader} Accept every option you could live with; prefer your favourites.\n\n| # | option | id | accepted | preferred | your vote |\n|---|---|---|---|---|---|\n${rows.join("\n")}`
          : "## Options and results\n\n_No options yet: add one._",
      },
      ...ranked.map(
        (choice): Block => ({
          form: {
            action: "vote",
            fixed: { option_id: choice.option.id },
            fields: ["accept", "prefer"],
            label: choice.mine
              ? `Change vote on “${choice.option.title}”`
              : `Vote on “${choice.option.title}”`,
            values: choice.mine ? { accept: choice.mine.accepted, prefer: choice.mine.preferred } : undefined,
          },
        }),
      ),
      ...watch,
      ...thread.blocks,
    ];
    return {
      title: decision.question,
      breadcrumb: [
        ...studioCrumbs(studio),
        { label: "Decisions", path: `/studios/${studio.handle}/decisions` },
        { label: decision.question },
      ],
      blocks,
      live: { since: thread.since },
    };
  },
  live: (ctx, scope) => threadFeed(ctx, "decision", scope.decision.id),
});
