// What the agents a thread woke asked to write there and did not (yet): a reply waiting for
// approval, with Approve and Reject for whoever may review it, and one that was refused or
// expired, said plainly. Without it a thread showed nothing, and a rejected reply just never came.
import { managedAmong } from "../access.ts";
import { AGENT_ARCHIVED, awaitingReview } from "../agents/policy/approvals.ts";
import { markdownToHtml } from "../registry/html.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import type { Block, Ctx } from "../registry/types.ts";
import { reviewForms } from "./approvals.ts";
import { writeOf } from "./pending-format.ts";

const SHOWN = 5;
const CONTENT = new Set(["reply", "note", "decision", "option", "commitment", "edit"]);

/** The queued actions of this thread's runs that this person may review now: a thread page's approvals act on these. */
export async function reviewableIn(ctx: Ctx, threadId: string): Promise<string[]> {
  if (ctx.actor.kind !== "person") return [];
  const rows = await ctx.db.agentPendingAction.findMany({
    where: { tenantId: ctx.tenant.id, run: { threadId }, ...awaitingReview() },
    select: { id: true, agentId: true },
  });
  const managed = await managedAmong(
    ctx,
    rows.map((r) => r.agentId),
  );
  return rows.filter((r) => managed.has(r.agentId)).map((r) => r.id);
}

export async function reviewBlocks(ctx: Ctx, threadId: string): Promise<Block[]> {
  const rows = await ctx.db.agentPendingAction.findMany({
    where: {
      tenantId: ctx.tenant.id,
      run: { threadId },
      status: { in: ["pending", "rejected", "expired", "failed"] },
    },
    include: { agent: true, reviewedBy: true },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: SHOWN,
  });
  const managed = await managedAmong(
    ctx,
    rows.map((r) => r.agentId),
  );
  const now = new Date();
  return rows.reverse().flatMap((pending): Block[] => {
    const write = writeOf(pending.actionName);
    const whose = `@${pending.agent.handle}'s ${write}`;
    const notDone = CONTENT.has(write) ? "Not posted" : "Not done";
    const manages = managed.has(pending.agentId);
    if (pending.status === "pending" && pending.expiresAt > now) {
      const text = (pending.editedParams ?? pending.params) as Record<string, unknown>;
      const said = manages && typeof text.text === "string" ? `\n\n${quote(text.text)}` : "";
      const which = manages
        ? link(`#${pending.id}`, `/subagents/${pending.agent.handle}/pending/${pending.id}`)
        : "";
      const markdown = `**${whose} is waiting for approval** (${which ? `${which}, ` : ""}\`${pending.actionName}\`)${manages ? "" : " by its owner"}.${said}`;
      const blocks: Block[] = [notice(markdown, "waiting")];
      if (manages)
        blocks.push(...reviewForms(pending.id, undefined, { approve: "Approve", reject: "Reject" }), {
          md: link("Edit it before approving", `/subagents/${pending.agent.handle}/pending/${pending.id}`),
        });
      return blocks;
    }
    const why =
      pending.status === "rejected"
        ? `was rejected by ${mdEscape(pending.reviewedBy?.name ?? "its owner")}${pending.reviewNote ? ` (${mdEscape(pending.reviewNote)})` : ""}`
        : pending.status === "failed"
          ? `was approved, but failed: ${mdEscape(pending.error ?? "")}`
          : pending.error === AGENT_ARCHIVED
            ? "expired: its agent was archived"
            : "expired before anyone approved it";
    return [notice(`**${notDone}**: ${whose} (\`${pending.actionName}\`) ${why}.`, "refused")];
  });
}

/** A notice in the thread, its markdown as is; in a browser, a box of its kind. */
function notice(markdown: string, kind: "waiting" | "refused"): Block {
  return { md: markdown, html: `<div class="review-notice ${kind}">${markdownToHtml(markdown)}</div>` };
}
