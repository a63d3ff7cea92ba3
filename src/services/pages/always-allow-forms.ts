// "Approve and always allow this" on a pending action's review: two worded choices, each
// saying the rule's breadth before the click. Pinned: the params as asked (the box may widen
// them, keeping at least one line). Any: every such action in the studio, whatever its params,
// named as such. Never a rule wider than the words beside its button.

import { parsePatterns } from "../actions/agent-settings.ts";
import { judgedPending, proposedPatterns, ruleBreadth } from "../agents/policy/always-allow.ts";
import { studioHandleOf } from "../page-titles.ts";
import { mdEscape } from "../registry/markdown.ts";
import type { Block } from "../registry/types.ts";

interface Reviewed {
  id: string;
  actionName: string;
  pagePath: string;
  agent: { name: string };
}

/** The proposed patterns as the rule would hold them; none when they would not parse. */
function proposedRule(actionDefs: Parameters<typeof parsePatterns>[0], action: string, patterns: string) {
  try {
    return parsePatterns(actionDefs, action, patterns, "allow_when");
  } catch {
    return {};
  }
}

export function alwaysAllowBlocks(
  asked: Reviewed,
  askedParams: Record<string, unknown>,
  actionDefs: Parameters<typeof parsePatterns>[0],
): Block[] {
  // A tool call's rule names the tool and matches its arguments (actions/tool-calls.ts).
  const judged = judgedPending(asked.actionName, askedParams);
  const pending = { ...asked, actionName: judged.action };
  const params = judged.params;
  const studio = studioHandleOf(pending.pagePath);
  const patterns = proposedPatterns(params);
  const pinned = proposedRule(actionDefs, pending.actionName, patterns);
  const rules = `first of ${mdEscape(pending.agent.name)}'s rules; it shows on the agent's settings page, where you can remove it`;
  const blocks: Block[] = [];
  if (Object.keys(pinned).length)
    blocks.push(
      {
        md: `**Approve and always allow this**: approves #${pending.id} and adds a rule (${rules}) that lets ${ruleBreadth(pending.actionName, pinned, studio)} through without review — the exact values as asked. Widen or delete a line below to allow more; at least one must stay.`,
      },
      {
        form: {
          action: "approve_action",
          fixed: { id: pending.id, always_allow: "true" },
          label: "Approve and always allow this",
          fields: ["allow_when"],
          values: { allow_when: patterns },
          style: "block",
        },
      },
    );
  blocks.push(
    {
      md: `**Approve and always allow any \`${pending.actionName}\`**: approves #${pending.id} and adds a rule (${rules}) that lets ${ruleBreadth(pending.actionName, {}, studio)} through without review.`,
    },
    {
      form: {
        action: "approve_action",
        fixed: { id: pending.id, always_allow: "true", allow_any: "true" },
        label: `Approve and always allow any ${pending.actionName}${studio ? ` in ${studio}` : ""}`,
        fields: [],
        style: "block",
      },
    },
  );
  return blocks;
}
