// "Approve and always allow this": from one approved action, the rule that lets the same
// action through next time without review. Scoped to the agent, the action, the studio it
// acted in, and the params that identify what it acted on — pinned to their exact values
// unless the reviewer widens them. Free text (a comment's words) is left unpinned, or no
// second action would ever match. The disclosure rule still holds whatever a rule allows.
// A rule is never wider than what the reviewer saw: it pins at least one param, or the
// reviewer chose, in words, "any <action> in <studio>"; the page says the breadth before
// the click (ruleBreadth), and the notice after it.
import { ValidationError } from "../../../lib/errors.ts";
import type { Rule } from "../core/settings.ts";

/** Longer than this, or on several lines, a value is the action's free text, not what identifies it. */
const MAX_PINNED = 80;

const escapeRe = (text: string) => text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&");

/** "name=^value$" lines, one per identifying param: what the review form offers to confirm or widen. */
export function proposedPatterns(params: Record<string, unknown>): string {
  return Object.entries(params)
    .filter(([, value]) => value !== undefined && value !== null && value !== "")
    .map(([key, value]) => [key, typeof value === "string" ? value : JSON.stringify(value)] as const)
    .filter(([, text]) => text.length <= MAX_PINNED && !/[\r\n]/.test(text))
    .map(([key, text]) => `${key}=^${escapeRe(text)}$`)
    .join("\n");
}

/** Where a rule keeps to, in words: "in the studio general", or anywhere the agent acts. */
const where = (studio: string | null) => (studio ? `in the studio ${studio}` : "wherever it acts");

/**
 * What a rule lets through, in words: "`create_note` in the studio general when title
 * matches `^Findings$` and text matches `^All good$`", or, with no params, "any `create_note`
 * in the studio general (whatever its params)".
 */
export function ruleBreadth(action: string, params: Record<string, string>, studio: string | null): string {
  // By name: the same rule reads the same wherever its params came from (jsonb reorders keys).
  const lines = Object.entries(params)
    .sort(([left], [right]) => left.localeCompare(right))
    .map(([name, pattern]) => `${name} matches \`${pattern}\``);
  if (!lines.length) return `any \`${action}\` ${where(studio)} (whatever its params)`;
  return `\`${action}\` ${where(studio)} when ${lines.join(" and ")}`;
}

/**
 * The params a new always-allow rule pins, checked: none is only for a reviewer who chose
 * "any" (`allowAny`), and "any" with patterns given is two answers at once.
 */
export function checkedBreadth(params: Record<string, string>, allowAny: boolean, action: string): void {
  const pinned = Object.keys(params).length > 0;
  if (!pinned && !allowAny)
    throw new ValidationError([
      {
        field: "allow_when",
        message: `keep at least one param=regex line, or choose “Approve and always allow any \`${action}\`” to allow it whatever its params`,
      },
    ]);
  if (pinned && allowAny)
    throw new ValidationError([
      {
        field: "allow_any",
        message: "choose either patterns to match or any params, not both",
      },
    ]);
}

/** The rule, named for the approval it came from. */
export function allowRule(
  pending: { id: string; actionName: string },
  params: Record<string, string>,
  studio: string | null,
  approver: string,
  date = new Date(),
): Rule {
  return {
    name: `Always allow (from #${pending.id})`,
    action: pending.actionName,
    params,
    decision: "allow",
    ...(studio && { studio }),
    origin: { pending: pending.id, by: approver, at: date.toISOString() },
  };
}

/** Held for whose connection it would use, or what it would disclose: the reviewer's decision each time, never a rule's. */
export const NOT_FOR_RULES = ["disclosure", "connection_owner"];

/**
 * A queued action as the rules judge it: a tool call as the tool it calls and its arguments
 * (actions/tool-calls.ts), anything else as itself. A rule made from one names the same.
 */
export function judgedPending(
  actionName: string,
  params: Record<string, unknown>,
): { action: string; params: Record<string, unknown> } {
  if (actionName !== "call_tool" || typeof params.tool !== "string") return { action: actionName, params };
  const args = params.arguments;
  return {
    action: params.tool,
    params: args && typeof args === "object" && !Array.isArray(args) ? (args as Record<string, unknown>) : {},
  };
}
