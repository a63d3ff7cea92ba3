// The page a mail's review link opens: the action it names, and one button (approve, or
// reject with a reason) for the person it was sent to. Its GET decides nothing, so a mail
// scanner that follows the link approves nothing; a link used, expired or decided says so.
// Only its recipient, while they still manage the agent, reads what the action would do.
import { NotFoundError } from "../../lib/errors.ts";
import { pendingPath } from "../agents/core/notify.ts";
import { findLink, linkRefusal, stillManages } from "../reach/review-links.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, definePage } from "../registry/types.ts";
import { home, when } from "./format.ts";
import { doing, pageLink, pageTitles, paramsMarkdown } from "./pending-format.ts";

export const reviewLinkPage = definePage({
  pattern: "/review/:token",
  actions: ["approve_from_link", "reject_from_link"],
  async resolve(ctx, params) {
    const found = await findLink(ctx.db, ctx.tenant.id, params.token);
    if (!found) throw new NotFoundError("No such review link: check that the whole address was copied.");
    return { reviewToken: params.token, pendingId: found.pendingId };
  },
  async render(ctx, scope) {
    const reviewLink = (await findLink(ctx.db, ctx.tenant.id, scope.reviewToken))!;
    const pending = reviewLink.pending;
    const manages = await stillManages(ctx.db, reviewLink, ctx.actor.id);
    const refusal = linkRefusal(reviewLink, ctx.actor.id, manages);
    const mine = reviewLink.userId === ctx.actor.id && manages;
    const titles = mine ? await pageTitles(ctx, [pending.pagePath]) : new Map<string, string>();
    const base = `/subagents/${pending.agent.handle}`;
    const def = ctx.actionDefs.get(pending.actionName);
    const blocks: Block[] = [];
    if (refusal) blocks.push({ md: `**This link cannot be used.** ${mdEscape(refusal)}` });
    // Someone else's link shows nothing of the action: it was sent to its reviewer only, and
    // to them only while they manage the agent.
    if (mine) {
      blocks.push({
        md: [
          `### #${pending.id} · ${doing(pending.actionName)} by ${link(pending.agent.name, base)}`,
          "",
          `on ${pageLink(titles, pending.pagePath)} · asked ${when(pending.createdAt)} · ${pending.status === "pending" ? `expires ${when(pending.expiresAt)}` : `**${pending.status}**`}`,
        ].join("\n"),
      });
      if (pending.disclosure)
        blocks.push({ md: `**${mdEscape(pending.disclosure)}** Approve only if they may see it.` });
      blocks.push({
        md: paramsMarkdown(def, (pending.editedParams ?? pending.params) as Record<string, unknown>),
      });
      if (pending.reason) blocks.push({ md: `The agent's reason:\n\n${quote(pending.reason)}` });
    }
    if (!refusal)
      blocks.push(
        reviewLink.decision === "approve"
          ? {
              form: {
                action: "approve_from_link",
                fixed: { token: scope.reviewToken },
                label: `Approve #${pending.id}`,
                // The one thing this page is for: a full button, as the mail's, not an inline link-sized one.
                style: "block",
              },
            }
          : {
              form: {
                action: "reject_from_link",
                fixed: { token: scope.reviewToken },
                label: `Reject #${pending.id}`,
                fields: ["reason"],
                style: "block",
              },
            },
      );
    if (mine)
      blocks.push({
        md: `Or ${link("review it on its page", pendingPath(pending.agent.handle, pending.id))}: edit its params, or decide otherwise.`,
      });
    return {
      title: reviewLink.decision === "approve" ? "Approve an agent's action" : "Reject an agent's action",
      breadcrumb: [home, { label: "Approvals", path: "/approvals" }, { label: `#${pending.id}` }],
      blocks,
    };
  },
});
