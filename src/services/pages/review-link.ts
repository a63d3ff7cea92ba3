// The page a mail's review link opens: the action it names, and one button (approve, or
// reject with a reason) for the person it was sent to. Its GET decides nothing, so a mail
// scanner that follows the link approves nothing; a link used, expired or decided says so.
import { NotFoundError } from "../../lib/errors.ts";
import { pendingPath } from "../agents/core/notify.ts";
import { findLink, linkRefusal } from "../reach/review-links.ts";
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
    const l = (await findLink(ctx.db, ctx.tenant.id, scope.reviewToken))!;
    const p = l.pending;
    const refusal = linkRefusal(l, ctx.actor.id);
    const mine = l.userId === ctx.actor.id;
    const titles = mine ? await pageTitles(ctx, [p.pagePath]) : new Map<string, string>();
    const base = `/subagents/${p.agent.handle}`;
    const def = ctx.actionDefs.get(p.actionName);
    const blocks: Block[] = [];
    if (refusal) blocks.push({ md: `**This link cannot be used.** ${mdEscape(refusal)}` });
    // Someone else's link shows nothing of the action: it was sent to its reviewer only.
    if (mine) {
      blocks.push({
        md: [
          `### #${p.id} · ${doing(p.actionName)} by ${link(p.agent.name, base)}`,
          "",
          `on ${pageLink(titles, p.pagePath)} · asked ${when(p.createdAt)} · ${p.status === "pending" ? `expires ${when(p.expiresAt)}` : `**${p.status}**`}`,
        ].join("\n"),
      });
      if (p.disclosure) blocks.push({ md: `**${mdEscape(p.disclosure)}** Approve only if they may see it.` });
      blocks.push({ md: paramsMarkdown(def, (p.editedParams ?? p.params) as Record<string, unknown>) });
      if (p.reason) blocks.push({ md: `The agent's reason:\n\n${quote(p.reason)}` });
    }
    if (!refusal)
      blocks.push(
        l.decision === "approve"
          ? {
              form: {
                action: "approve_from_link",
                fixed: { token: scope.reviewToken },
                label: `Approve #${p.id}`,
                // The one thing this page is for: a full button, as the mail's, not an inline link-sized one.
                style: "block",
              },
            }
          : {
              form: {
                action: "reject_from_link",
                fixed: { token: scope.reviewToken },
                label: `Reject #${p.id}`,
                fields: ["reason"],
                style: "block",
              },
            },
      );
    if (mine)
      blocks.push({
        md: `Or ${link("review it on its page", pendingPath(p.agent.handle, p.id))}: edit its params, or decide otherwise.`,
      });
    return {
      title: l.decision === "approve" ? "Approve an agent's action" : "Reject an agent's action",
      breadcrumb: [home, { label: "Approvals", path: "/approvals" }, { label: `#${p.id}` }],
      blocks,
    };
  },
});
