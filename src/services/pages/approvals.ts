import type { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.ts";
import { NotFoundError } from "../../lib/errors.ts";
import { loadAgent, managedBy } from "../agents/core/ownership.ts";
import { NOT_FOR_RULES } from "../agents/policy/always-allow.ts";
import { awaitingReview } from "../agents/policy/approvals.ts";
import { changesFeed } from "../live/feed.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, definePage, type PageCtx } from "../registry/types.ts";
import { alwaysAllowBlocks } from "./always-allow-forms.ts";
import { agentCrumbs, home, pager, paging, when } from "./format.ts";
import { doing, editedMarkdown, pageLink, pageTitles, paramsMarkdown } from "./pending-format.ts";

type Pending = Prisma.AgentPendingActionGetPayload<{ include: { agent: true; run: true; reviewedBy: true } }>;
const include = { agent: true, run: true, reviewedBy: true } as const;

/** Past its expiry an action is expired, whether or not the sweep has marked it so yet. */
const statusOf = (pending: Pending) =>
  pending.status === "pending" && pending.expiresAt <= new Date() ? "expired" : pending.status;

function reasonOf(rule: string): string {
  if (rule === "requires_approval") return "the approval list";
  if (rule === "disclosure") return "what it would disclose";
  if (rule === "connection_owner") return "whose connection it would use";
  return `rule “${mdEscape(rule)}”`;
}

/** Everything a reviewer needs in one place: who, why, where (by its title), what exactly (by label), until when. */
export function pendingBlocks(
  ctx: PageCtx,
  pending: Pending,
  detailed: boolean,
  titles: Map<string, string>,
): Block[] {
  const base = `/subagents/${pending.agent.handle}`;
  const status = statusOf(pending);
  const def = ctx.actionDefs.get(pending.actionName);
  const params = (pending.editedParams ?? pending.params) as Record<string, unknown>;
  const head = [
    `### #${pending.id} · ${doing(pending.actionName)} by ${link(pending.agent.name, base)} · **${status}**`,
    "",
    [
      `on ${pageLink(titles, pending.pagePath)}`,
      pending.run
        ? `run ${link(pending.run.id, `${base}/runs/${pending.run.id}`)} (${pending.run.triggerKind})`
        : "outside a run",
      `asked ${when(pending.createdAt)}`,
      status === "pending"
        ? `expires ${when(pending.expiresAt)}`
        : status === "expired"
          ? `expired ${when(pending.expiresAt)}`
          : null,
      `because of ${reasonOf(pending.matchedRule)}`,
    ]
      .filter(Boolean)
      .join(" · "),
  ].join("\n");
  const review = detailed && status === "pending";
  const blocks: Block[] = [
    { md: head },
    // What approving would disclose, in words: the decision a reviewer is really making.
    ...(pending.disclosure
      ? [{ md: `**${mdEscape(pending.disclosure)}** Approve only if they may see it.` }]
      : []),
    // In a browser the review form right below shows them, a field each, editable: not twice.
    { md: paramsMarkdown(def, params), ...(review && def && { html: "" }) },
  ];
  const edited = editedMarkdown(def, pending, pending.reviewedBy?.handle);
  if (edited) blocks.push({ md: edited });
  if (pending.reason) blocks.push({ md: `The agent's reason:\n\n${quote(pending.reason)}` });
  if (detailed && pending.contextSummary)
    blocks.push({ md: `What it was working on:\n\n${quote(pending.contextSummary)}` });
  if (pending.reviewedBy)
    blocks.push({
      md: `Reviewed by @${pending.reviewedBy.handle} ${pending.reviewedAt ? when(pending.reviewedAt) : ""}${pending.reviewNote ? `: ${mdEscape(pending.reviewNote)}` : ""}`,
    });
  if (pending.status === "executed")
    blocks.push({
      md: `Executed: ${mdEscape(pending.result ?? "")}${pending.resultPath ? ` → ${pageLink(titles, pending.resultPath)}` : ""}`,
    });
  if (pending.status === "failed") blocks.push({ md: `Failed: ${mdEscape(pending.error ?? "")}` });
  if (status === "pending") {
    blocks.push(...reviewForms(pending.id, review && def ? { schema: def.params, params } : undefined));
    // Review turns into rubber-stamping without it; a disclosure is never a rule's to allow.
    if (review && !NOT_FOR_RULES.includes(pending.matchedRule))
      blocks.push(...alwaysAllowBlocks(pending, params, ctx));
    if (!detailed)
      blocks.push({
        md: link("Review in detail, or edit the params first", `${base}/pending/${pending.id}`),
      });
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
  for (const queued of pending) blocks.push(...pendingBlocks(ctx, queued, false, titles));
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
    const agent = scope.agent;
    return {
      title: `${agent.name}: actions to review`,
      breadcrumb: [...agentCrumbs(agent), { label: "Pending" }],
      blocks: await listing(
        ctx,
        { tenantId: ctx.tenant.id, agentId: agent.id },
        `/subagents/${agent.handle}/pending`,
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
    const agent = scope.agent;
    const pending = await ctx.db.agentPendingAction.findFirst({
      where: { id: scope.pendingId, agentId: agent.id, tenantId: ctx.tenant.id },
      include,
    });
    if (!pending) throw new NotFoundError(`No pending action #${scope.pendingId}`);
    return {
      title: `Review #${pending.id}: ${pending.actionName}`,
      breadcrumb: [
        ...agentCrumbs(agent),
        { label: "Pending", path: `/subagents/${agent.handle}/pending` },
        { label: `#${pending.id}` },
      ],
      blocks: pendingBlocks(
        ctx,
        pending,
        true,
        await pageTitles(ctx, [pending.pagePath, pending.resultPath ?? ""]),
      ),
      // Approved, it runs in a moment (the approved-actions worker): the page shows the outcome live.
      live: pending.status === "approved" ? { since: pending.status } : undefined,
    };
  },
  live: (ctx, scope) =>
    changesFeed([`pending:${scope.pendingId}`], async () => {
      const pending = await ctx.db.agentPendingAction.findUniqueOrThrow({
        where: { id: scope.pendingId },
        select: { status: true },
      });
      return { digest: pending.status, data: { status: pending.status } };
    }),
});
