// "Approve and always allow this": from one approved action, the rule that lets the same
// action through next time without review. Scoped to the agent, the action, the studio it
// acted in, and the params that identify what it acted on — pinned to their exact values
// unless the reviewer widens them. Free text (a comment's words) is left unpinned, or no
// second action would ever match. The disclosure rule still holds whatever a rule allows.
import type { Rule } from "../core/settings.ts";

/** Longer than this, or on several lines, a value is the action's free text, not what identifies it. */
const MAX_PINNED = 80;

const escapeRe = (s: string) => s.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");

/** "name=^value$" lines, one per identifying param: what the review form offers to confirm or widen. */
export function proposedPatterns(params: Record<string, unknown>): string {
  return Object.entries(params)
    .filter(([, value]) => value !== undefined && value !== null && value !== "")
    .map(([key, v]) => [key, typeof v === "string" ? v : JSON.stringify(v)] as const)
    .filter(([, text]) => text.length <= MAX_PINNED && !/[\r\n]/.test(text))
    .map(([k, text]) => `${k}=^${escapeRe(text)}$`)
    .join("\n");
}

/** The rule, named for the approval it came from. */
export function allowRule(
  p: { id: string; actionName: string },
  params: Record<string, string>,
  studio: string | null,
  by: string,
  date = new Date(),
): Rule {
  return {
    name: `Always allow (from #${p.id})`,
    action: p.actionName,
    params,
    decision: "allow",
    ...(studio && { studio }),
    origin: { pending: p.id, by, at: date.toISOString() },
  };
}
