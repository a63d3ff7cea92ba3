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
    const s = scope.studio;
    const paged = paging(query);
    const where = { tenantId: ctx.tenant.id, studioId: s.id };
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
      (d) =>
        `- ${link(d.question, `/studios/${s.handle}/decisions/${d.id}`)} — ${who(d.author)}, ${when(d.createdAt)}`,
    );
    return {
      title: `Decisions in ${s.name}`,
      breadcrumb: [...studioCrumbs(s), { label: "Decisions" }],
      blocks: [
        { md: lines.length ? lines.join("\n") : "_No decisions yet._" },
        { md: pager(`/studios/${s.handle}/decisions`, paged, total) },
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
    const s = scope.studio;
    const d = scope.decision;
    const path = `/studios/${s.handle}/decisions/${d.id}`;
    const [author, options, thread, watch] = await Promise.all([
      ctx.db.user.findUniqueOrThrow({ where: { id: d.authorId } }),
      ctx.db.decisionOption.findMany({
        where: { decisionId: d.id },
        orderBy: { createdAt: "asc" },
        include: { votes: true },
      }),
      threadBlocks(ctx, "decision", d.id, path, query),
      watchBlocks(ctx, scope),
    ]);
    const ranked = options
      .map((o) => ({
        o,
        accepted: o.votes.filter((v) => v.accepted).length,
        preferred: o.votes.filter((v) => v.preferred).length,
        mine: o.votes.find((v) => v.userId === ctx.actor.id),
      }))
      .sort((a, b) => b.accepted - a.accepted || b.preferred - a.preferred);
    const voters = new Set(options.flatMap((o) => o.votes.map((v) => v.userId))).size;
    const rows = ranked.map(
      (r, i) =>
        `| ${i + 1} | ${mdEscape(r.o.title)} | \`${r.o.id}\` | ${r.accepted} | ${r.preferred} | ${r.mine ? `${r.mine.accepted ? "accept" : "—"}${r.mine.preferred ? ", prefer" : ""}` : "not voted"} |`,
    );
    const leader =
      ranked[0] && ranked[0].accepted > 0
        ? `Leading: **${mdEscape(ranked[0].o.title)}**.`
        : "No option accepted yet.";
    const blocks: Block[] = [
      { md: `Asked by ${who(author)} · ${when(d.createdAt)} · decision \`${d.id}\`` },
      ...(d.description ? [{ md: quote(d.description) }] : []),
      {
        md: options.length
          ? `## Options and results\n\n${voters} ${voters === 1 ? "person has" : "people have"} voted. ${leader} Accept every option you could live with; prefer your favourites.\n\n| # | option | id | accepted | preferred | your vote |\n|---|---|---|---|---|---|\n${rows.join("\n")}`
          : "## Options and results\n\n_No options yet: add one._",
      },
      ...ranked.map(
        (r): Block => ({
          form: {
            action: "vote",
            fixed: { option_id: r.o.id },
            fields: ["accept", "prefer"],
            label: r.mine ? `Change vote on “${r.o.title}”` : `Vote on “${r.o.title}”`,
            values: r.mine ? { accept: r.mine.accepted, prefer: r.mine.preferred } : undefined,
          },
        }),
      ),
      ...watch,
      ...thread.blocks,
    ];
    return {
      title: d.question,
      breadcrumb: [
        ...studioCrumbs(s),
        { label: "Decisions", path: `/studios/${s.handle}/decisions` },
        { label: d.question },
      ],
      blocks,
      live: { since: thread.since },
    };
  },
  live: (ctx, scope) => threadFeed(ctx, "decision", scope.decision.id),
});
