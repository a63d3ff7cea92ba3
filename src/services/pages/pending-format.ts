// How an action waiting for review reads, wherever it is shown (the queue, its own page,
// the run that asked for it, the thread it would write in): the page by its title, what it
// would do in words, each param by its label, and what a reviewer's edit changed.
import type { AgentPendingAction } from "../../generated/prisma/client.ts";
import { managedBy } from "../agents/core/ownership.ts";
import { capabilityLabel } from "../agents/policy/capabilities.ts";
import { pageTitles as titlesFor } from "../page-titles.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { fields, labelOf } from "../registry/params.ts";
import type { ActionDef, Ctx } from "../registry/types.ts";
import { excerpt } from "./format.ts";

/** Pages named for the person reading (page-titles.ts). */
export const pageTitles = (ctx: Ctx, paths: string[]) =>
  titlesFor(ctx.db, ctx.tenant.id, { userId: ctx.actor.id }, paths);

/** The page a queued action acts on, as a link named by its title (its path when it has none). */
export function pageLink(titles: Map<string, string>, path: string): string {
  return link(mdEscape(titles.get(path) ?? path), path);
}

/** What a queued action would do, in words: "Comment and reply (`add_comment`)". */
export const doing = (action: string) =>
  capabilityLabel(action) === action ? `\`${action}\`` : `${capabilityLabel(action)} (\`${action}\`)`;

/** What it would write, as a person names it: "reply", "note"; what not doing it means. */
const WRITES: Record<string, string> = {
  add_comment: "reply",
  create_note: "note",
  update_note: "edit",
  create_decision: "decision",
  add_option: "option",
  create_commitment: "commitment",
  vote: "vote",
};
export const writeOf = (action: string) => WRITES[action] ?? "action";

const shown = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

/** Each param by its label (from the action's schema), long text quoted; one the schema does not know, by name. */
export function paramsMarkdown(def: ActionDef | undefined, params: Record<string, unknown>): string {
  const known = def ? fields(def.params) : [];
  const label = (name: string) => {
    const field = known.find((x) => x.name === name);
    return field ? labelOf(field) : name;
  };
  const entries = Object.entries(params).filter(
    ([, value]) => value !== undefined && value !== null && value !== "",
  );
  if (!entries.length) return "_No params._";
  return entries
    .map(([name, value]) => {
      const text = shown(value);
      return text.length > 80 || text.includes("\n")
        ? `**${mdEscape(label(name))}**\n\n${quote(text)}`
        : `**${mdEscape(label(name))}**: ${mdEscape(text)}`;
    })
    .join("\n\n");
}

/** The params a reviewer's edit changed, by label, each with what the agent had asked: empty when none. */
export function editedMarkdown(
  def: ActionDef | undefined,
  pending: Pick<AgentPendingAction, "params" | "editedParams">,
  reviewer: string | undefined,
): string {
  if (!pending.editedParams) return "";
  const asked = pending.params as Record<string, unknown>;
  const edited = pending.editedParams as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(asked), ...Object.keys(edited)])].filter(
    (k) => shown(asked[k] ?? "") !== shown(edited[k] ?? ""),
  );
  const label = (name: string) => {
    const field = def && fields(def.params).find((x) => x.name === name);
    return field ? labelOf(field) : name;
  };
  const changes = keys.map(
    (k) => `**${mdEscape(label(k))}** (it asked for “${mdEscape(excerpt(shown(asked[k] ?? ""), 80))}”)`,
  );
  return `Edited${reviewer ? ` by @${reviewer}` : ""} before approval: ${changes.join(", ") || "nothing that shows"}.`;
}

/**
 * "@scout's reply on the note “Retro day” in General: “Thursday suits…”": a queued action in
 * one sentence, for the confirmation of its rejection. Null for one this person does not manage.
 */
export async function describePending(ctx: Ctx, id: string): Promise<string | null> {
  const pending = await ctx.db.agentPendingAction.findFirst({
    where: { id, tenantId: ctx.tenant.id, agent: managedBy(ctx.actor.id) },
    include: { agent: true },
  });
  if (!pending) return null;
  const titles = await pageTitles(ctx, [pending.pagePath]);
  const params = (pending.editedParams ?? pending.params) as Record<string, unknown>;
  const text = [params.text, params.title, params.question].find((v) => typeof v === "string") as
    | string
    | undefined;
  const what = `@${pending.agent.handle}'s ${writeOf(pending.actionName)} (${pending.actionName}) on ${titles.get(pending.pagePath) ?? pending.pagePath}`;
  return text ? `${what}: “${excerpt(text, 120)}”` : `${what}.`;
}

/**
 * Content an agent wrote through an approval that a person edited first (a comment, a note),
 * by id: who edited it. Its page says so, so nobody takes the reviewer's words for the agent's.
 */
export async function editedBeforeApproval(ctx: Ctx, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map();
  const rows = await ctx.db.agentPendingAction.findMany({
    where: { tenantId: ctx.tenant.id, resultSubjectId: { in: ids }, status: "executed" },
    select: { resultSubjectId: true, editedParams: true, reviewedBy: { select: { handle: true } } },
  });
  return new Map(
    rows
      .filter((r) => r.editedParams !== null && r.reviewedBy)
      .map((r) => [r.resultSubjectId!, r.reviewedBy!.handle] as const),
  );
}

/** " · edited by @alice before approval", linked to the reviewer; empty for content nobody edited. */
export const editedMark = (reviewer: string | undefined) =>
  reviewer ? ` · edited by [@${reviewer}](/u/${reviewer}) before approval` : "";
