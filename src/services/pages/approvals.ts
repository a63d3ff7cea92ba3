import type { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.ts";
import { NotFoundError } from "../../lib/errors.ts";
import { loadAgent, managedBy } from "../agents/core/ownership.ts";
import { proposedPatterns } from "../agents/policy/always-allow.ts";
import { awaitingReview } from "../agents/policy/approvals.ts";
import { changesFeed } from "../live/feed.ts";
import { studioHandleOf } from "../page-titles.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, definePage, type PageCtx } from "../registry/types.ts";
import { agentCrumbs, home, pager, paging, when } from "./format.ts";
import { doing, editedMarkdown, pageLink, pageTitles, paramsMarkdown } from "./pending-format.ts";

type Pending = Prisma.AgentPendingActionGetPayload<{ include: { agent: true; run: true; reviewedBy: true } }>;
const include = { agent: true, run: true, reviewedBy: true } as const;

/** Past its expiry an action is expired, whether or not the sweep has marked it so yet. */
const statusOf = (p: Pending) => (p.status === "pending" && p.expiresAt <= new Date() ? "expired" : p.status);

function reasonOf(rule: string): string {
  if (rule === "requires_approval") return "the approval list";
  if (rule === "disclosure") return "what it would disclose";
  return `rule “${mdEscape(rule)}”`;
}

/** Everything a reviewer needs in one place: who, why, where (by its title), what exactly (by label), until when. */
export function pendingBlocks(
  ctx: PageCtx,
  p: Pending,
  detailed: boolean,
  titles: Map<string, string>,
): Block[] {
  const base = `/subagents/${p.agent.handle}`;
  const status = statusOf(p);
  const def = ctx.actionDefs.get(p.actionName);
  const params = (p.editedParams ?? p.params) as Record<string, unknown>;
  const head = [
    `### #${p.id} · ${doing(p.actionName)} by ${link(p.agent.name, base)} · **${status}**`,
    "",
    [
      `on ${pageLink(titles, p.pagePath)}`,
      p.run ? `run ${link(p.run.id, `${base}/runs/${p.run.id}`)} (${p.run.triggerKind})` : "outside a run",
      `asked ${when(p.createdAt)}`,
      status === "pending"
        ? `expires ${when(p.expiresAt)}`
        : status === "expired"
          ? `expired ${when(p.expiresAt)}`
          : null,
      `because of ${reasonOf(p.matchedRule)}`,
    ]
      .filter(Boolean)
      .join(" · "),
  ].join("\n");
  const review = detailed && status === "pending";
  const blocks: Block[] = [
    { md: head },
    // What approving would disclose, in words: the decision a reviewer is really making.
    ...(p.disclosure ? [{ md: `**${mdEscape(p.disclosure)}** Approve only if they may see it.` }] : []),
    // In a browser the review form right below shows them, a field each, editable: not twice.
    { md: paramsMarkdown(def, params), ...(review && def && { html: "" }) },
  ];
  const edited = editedMarkdown(def, p, p.reviewedBy?.handle);
  if (edited) blocks.push({ md: edited });
  if (p.reason) blocks.push({ md: `The agent's reason:\n\n${quote(p.reason)}` });
  if (detailed && p.contextSummary)
    blocks.push({ md: `What it was working on:\n\n${quote(p.contextSummary)}` });
  if (p.reviewedBy)
    blocks.push({
      md: `Reviewed by @${p.reviewedBy.handle} ${p.reviewedAt ? when(p.reviewedAt) : ""}${p.reviewNote ? `: ${mdEscape(p.reviewNote)}` : ""}`,
    });
  if (p.status === "executed")
    blocks.push({
      md: `Executed: ${mdEscape(p.result ?? "")}${p.resultPath ? ` → ${pageLink(titles, p.resultPath)}` : ""}`,
    });
  if (p.status === "failed") blocks.push({ md: `Failed: ${mdEscape(p.error ?? "")}` });
  if (status === "pending") {
    blocks.push(...reviewForms(p.id, review && def ? { schema: def.params, params } : undefined));
    // Review turns into rubber-stamping without it; a disclosure is never a rule's to allow.
    if (review && p.matchedRule !== "disclosure")
      blocks.push(
        {
          md: `**Approve and always allow this**: approves #${p.id} and adds a rule, first of ${mdEscape(p.agent.name)}'s rules, that lets the same action through without review${studioHandleOf(p.pagePath) ? ` in this studio` : ""} when its params match these patterns (exact values as asked; widen or delete a line to allow more). It shows on the agent's settings page, where you can remove it.`,
        },
        {
          form: {
            action: "approve_action",
            fixed: { id: p.id, always_allow: "true" },
            label: "Approve and always allow this",
            fields: ["allow_when"],
            values: { allow_when: proposedPatterns(params) },
            style: "block",
          },
        },
      );
    if (!detailed)
      blocks.push({ md: link("Review in detail, or edit the params first", `${base}/pending/${p.id}`) });
  }
  return blocks;
}

/**
 * Approve and Reject beside a queued action: with its params a field each when `edit` is
 * given (its own page), as two buttons otherwise. Reject asks for the reason when confirmed.
 */
export function reviewForms(
  id: string,
  edit?: { schema: z.ZodObject; params: Record<string, unknown> },
  labels = { approve: `Approve #${id}`, reject: `Reject #${id}` },
): Block[] {
  return [
    {
      form: {
        action: "approve_action",
        fixed: { id },
        label: labels.approve,
        fields: edit ? ["params"] : [],
        ...(edit && {
          values: { params: edit.params },
          nested: { params: edit.schema },
          style: "block" as const,
        }),
      },
    },
    { form: { action: "reject_action", fixed: { id }, label: labels.reject, fields: [] } },
  ];
}

async function listing(
  ctx: PageCtx,
  where: Prisma.AgentPendingActionWhereInput,
  path: string,
  query: Record<string, string | undefined>,
) {
  const paged = paging(query);
  const now = new Date();
  const open = { ...where, ...awaitingReview(now) };
  const [pending, recent, total] = await Promise.all([
    ctx.db.agentPendingAction.findMany({
      where: open,
      include,
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      skip: paged.skip,
      take: paged.take,
    }),
    ctx.db.agentPendingAction.findMany({
      where: { ...where, NOT: awaitingReview(now) },
      include,
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: 10,
    }),
    ctx.db.agentPendingAction.count({ where: open }),
  ]);
  const titles = await pageTitles(
    ctx,
    [...pending, ...recent].flatMap((p) => [p.pagePath, p.resultPath ?? ""]),
  );
  const blocks: Block[] = [
    { md: `## Waiting for your review (${total})${total ? "" : "\n\n_Nothing to review._"}` },
  ];
  for (const p of pending) blocks.push(...pendingBlocks(ctx, p, false, titles));
  const more = pager(path, paged, total);
  if (more) blocks.push({ md: more });
  blocks.push({
    md: `## Recently reviewed\n\n${recent.length ? recent.map((p) => `- ${link(`#${p.id}`, `/subagents/${p.agent.handle}/pending/${p.id}`)} \`${p.actionName}\` by @${p.agent.handle} on ${pageLink(titles, p.pagePath)} — **${statusOf(p)}**${p.reviewedBy ? ` by @${p.reviewedBy.handle}` : ""}${p.reviewNote ? `: ${mdEscape(p.reviewNote)}` : p.error ? `: ${mdEscape(p.error)}` : ""}`).join("\n") : "_None yet._"}`,
  });
  return blocks;
}

export const approvalsPage = definePage({
  pattern: "/approvals",
  actions: ["approve_action", "reject_action"],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    return {
      title: "Approvals",
      breadcrumb: [home, { label: "Approvals" }],
      blocks: await listing(
        ctx,
        { tenantId: ctx.tenant.id, agent: managedBy(ctx.actor.id) },
        "/approvals",
        query,
      ),
    };
  },
});

export const agentPendingPage = definePage({
  pattern: "/subagents/:handle/pending",
  actions: ["approve_action", "reject_action"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope, query) {
    const a = scope.agent;
    return {
      title: `${a.name}: actions to review`,
      breadcrumb: [...agentCrumbs(a), { label: "Pending" }],
      blocks: await listing(
        ctx,
        { tenantId: ctx.tenant.id, agentId: a.id },
        `/subagents/${a.handle}/pending`,
        query,
      ),
    };
  },
});

export const pendingPage = definePage({
  pattern: "/subagents/:handle/pending/:pending",
  actions: ["approve_action", "reject_action"],
  async resolve(ctx, params) {
    const agent = await loadAgent(ctx, params.handle);
    const found = await ctx.db.agentPendingAction.findFirst({
      where: { id: params.pending, agentId: agent.id, tenantId: ctx.tenant.id },
      select: { id: true },
    });
    if (!found) throw new NotFoundError(`No pending action #${params.pending}`);
    return { agent, pendingId: found.id };
  },
  async render(ctx, scope) {
    const a = scope.agent;
    const p = await ctx.db.agentPendingAction.findFirst({
      where: { id: scope.pendingId, agentId: a.id, tenantId: ctx.tenant.id },
      include,
    });
    if (!p) throw new NotFoundError(`No pending action #${scope.pendingId}`);
    return {
      title: `Review #${p.id}: ${p.actionName}`,
      breadcrumb: [
        ...agentCrumbs(a),
        { label: "Pending", path: `/subagents/${a.handle}/pending` },
        { label: `#${p.id}` },
      ],
      blocks: pendingBlocks(ctx, p, true, await pageTitles(ctx, [p.pagePath, p.resultPath ?? ""])),
      // Approved, it runs in a moment (the approved-actions worker): the page shows the outcome live.
      live: p.status === "approved" ? { since: p.status } : undefined,
    };
  },
  live: (ctx, scope) =>
    changesFeed([`pending:${scope.pendingId}`], async () => {
      const p = await ctx.db.agentPendingAction.findUniqueOrThrow({
        where: { id: scope.pendingId },
        select: { status: true },
      });
      return { digest: p.status, data: { status: p.status } };
    }),
});
