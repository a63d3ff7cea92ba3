import { plural } from "../../lib/plural.ts";
import { permissionsOf } from "../actions/agent-settings.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { agentConfig } from "../agents/core/settings.ts";
import { ALWAYS_ALLOWED, ALWAYS_BLOCKED, capabilityLabel, GRANTABLE } from "../agents/policy/capabilities.ts";
import { markdownToHtml } from "../registry/html.ts";
import { mdEscape } from "../registry/markdown.ts";
import type { Block, PageDef } from "../registry/types.ts";
import { agentCrumbs } from "./format.ts";

const code = (names: readonly string[]) => names.map((n) => `\`${n}\``).join(", ");
/** Text inside a code span in a table cell: a `|` would end the cell, a backtick the span. */
const cell = (text: string) => text.replace(/`/g, "'").replace(/\|/g, "\\|");

/** Grantable actions in words, their names after them for whoever calls them: "Post a note (`create_note`)". */
const labelled = (names: readonly string[]) =>
  names.map((n) => `${capabilityLabel(n)} (\`${n}\`)`).join(", ");

/**
 * What the agent may do, in words. The always-allowed and never-allowed action names stay in
 * the markdown (a client may look one up); a browser folds the long list away.
 */
function capabilitiesBlock(unset: boolean, granted: readonly string[], approval: readonly string[]): Block {
  const head = [
    "## Capabilities",
    "",
    "**Always allowed**: reading any page it can see, searching, dismissing its notifications and keeping its scratchpad.",
    "",
    `**Never allowed**: its identity, studio membership, tokens and keys, other agents, approvals, schedules and webhooks (${plural(ALWAYS_BLOCKED.length, "action")}).`,
  ];
  const tail = [
    "",
    `**Yours to grant** (content): ${unset ? "all of them, until you choose (older agents keep working)" : `${granted.length} of ${GRANTABLE.length} granted`}. An agent can never do more than you could in a studio.`,
    "",
    `Granted now: ${labelled(granted) || "none"}.`,
    "",
    `Waiting for your approval: ${labelled(approval) || "nothing"}.`,
  ];
  const names = `Always allowed: ${code(ALWAYS_ALLOWED)}. Never allowed: ${code(ALWAYS_BLOCKED)}.`;
  return {
    md: [...head, "", names, ...tail].join("\n"),
    html: `${markdownToHtml(head.join("\n"))}<details class="seen"><summary>Which actions, by name</summary>${markdownToHtml(names)}</details>${markdownToHtml(tail.join("\n"))}`,
  };
}

export const agentSettingsPage: PageDef = {
  pattern: "/subagents/:handle/settings",
  actions: ["set_capabilities", "add_rule", "remove_rule"],
  resolve: async (ctx, p) => ({ agent: await loadAgent(ctx, p.handle!) }),
  async render(_ctx, scope) {
    const a = scope.agent!;
    const cfg = agentConfig(a);
    const granted = cfg.capabilities ?? [...GRANTABLE];
    const rules = cfg.rules.length
      ? [
          "| # | rule | action | params must match | decision |",
          "|---|---|---|---|---|",
          ...cfg.rules.map(
            (r, i) =>
              `| ${i + 1} | ${mdEscape(r.name)} | \`${r.action}\` | ${
                Object.entries(r.params)
                  .map(([k, v]) => `\`${k}\` ~ \`${cell(v)}\``)
                  .join(", ") || "—"
              } | **${r.decision}** |`,
          ),
        ].join("\n")
      : "_No rules: actions in the approval list wait for you, everything else granted runs._";
    return {
      title: `What ${a.name} may do`,
      breadcrumb: [...agentCrumbs(a), { label: "Settings" }],
      blocks: [
        capabilitiesBlock(cfg.capabilities === undefined, granted, cfg.requires_approval),
        {
          md: `## Approvals\n\nActions allowed after your approval wait for your review at ${`[/subagents/${a.handle}/pending](/subagents/${a.handle}/pending)`}. Runs **${cfg.approval_mode === "wait" ? "wait for" : "carry on without"}** the outcome; unreviewed actions expire after ${cfg.approval_expiry_hours} h.`,
        },
        // One form, one Save: what it may use, what waits for you and how reviews work are one decision.
        {
          form: {
            action: "set_capabilities",
            fixed: {},
            label: "Save what it may do",
            style: "block",
            values: permissionsOf(cfg),
          },
        },
        {
          md: `## Rules\n\nChecked in order; the first that matches an action (and all its param patterns) decides: **allow**, **require_approval** or **deny** (the agent is told the rule's name). No match: the approval list above.\n\n${rules}`,
        },
        // A rule is removed with the button naming it, never by typing its name.
        ...cfg.rules.map(
          (r): Block => ({
            form: { action: "remove_rule", fixed: { name: r.name }, label: `Remove “${r.name}”` },
          }),
        ),
      ],
    };
  },
};
