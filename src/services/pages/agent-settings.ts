import { plural } from "../../lib/plural.ts";
import { parsePatterns, permissionsOf } from "../actions/agent-settings.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { type AgentConfig, agentConfig, type Rule, tenantSettings } from "../agents/core/settings.ts";
import { isToolName } from "../agents/core/tool-names.ts";
import { backtest, backtestSummary } from "../agents/policy/backtest.ts";
import {
  ALWAYS_ALLOWED,
  ALWAYS_BLOCKED,
  capabilityLabel,
  GRANTABLE,
  HUMAN_ONLY_WHY,
} from "../agents/policy/capabilities.ts";
import { markdownToHtml } from "../registry/html.ts";
import { link, mdEscape } from "../registry/markdown.ts";
import { type Block, definePage, type PageCtx, type Query } from "../registry/types.ts";
import { connectedToolBlocks } from "./agent-tools.ts";
import { agentCrumbs, excerpt, when } from "./format.ts";

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
function capabilitiesBlock(
  granted: readonly string[],
  approval: readonly string[],
  humanOnly: readonly string[],
): Block {
  const head = [
    "## Capabilities",
    "",
    "**Always allowed**: reading any page it can see, searching, dismissing its notifications and keeping its scratchpad. (`call_tool` is how it calls a connected tool: each tool is granted on its own, under Connected tools.)",
    "",
    `**Never allowed**: its identity, studio membership, tokens and keys, other agents, approvals, schedules and webhooks (${plural(ALWAYS_BLOCKED.length, "action")}).`,
  ];
  const tail = [
    "",
    `**Yours to grant** (content): ${granted.length} of ${GRANTABLE.length} granted. A new agent starts able to read and comment; grant more here. An agent can never do more than you could in a studio.`,
    "",
    `Granted now: ${labelled(granted) || "none"}.`,
    ...(humanOnly.length
      ? ["", `**Human-only in this workspace** (its admins keep them for people): ${labelled(humanOnly)}.`]
      : []),
    "",
    `Waiting for your approval: ${labelled(approval) || "nothing"}.`,
  ];
  const names = `Always allowed: ${code(ALWAYS_ALLOWED)}. Never allowed: ${code(ALWAYS_BLOCKED)}.`;
  return {
    md: [...head, "", names, ...tail].join("\n"),
    html: `${markdownToHtml(head.join("\n"))}<details class="seen"><summary>Which actions, by name</summary>${markdownToHtml(names)}</details>${markdownToHtml(tail.join("\n"))}`,
  };
}

/** Where a rule came from, when "Approve and always allow this" made it. */
function originOf(handle: string, rule: Rule): string {
  if (!rule.origin) return "";
  const madeAt = new Date(rule.origin.at);
  return ` (from approval [#${rule.origin.pending}](/subagents/${handle}/pending/${rule.origin.pending}), by @${rule.origin.by}, on ${Number.isNaN(madeAt.getTime()) ? rule.origin.at : when(madeAt)})`;
}

export const agentSettingsPage = definePage({
  pattern: "/subagents/:handle/settings",
  actions: ["set_capabilities", "set_tool_level", "try_rule", "add_rule", "remove_rule"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope, query) {
    const agent = scope.agent;
    const config = agentConfig(agent);
    const humanOnly = tenantSettings(ctx.tenant).human_only;
    // Built-in actions only: connected tools have their own part below (agent-tools.ts).
    const builtIn = (names: readonly string[]) => names.filter((name) => !isToolName(name));
    const granted = builtIn(config.capabilities).filter((c) => !humanOnly.includes(c));
    const rules = config.rules.length
      ? [
          "| # | rule | action | where | params must match | decision |",
          "|---|---|---|---|---|---|",
          ...config.rules.map(
            (rule, index) =>
              `| ${index + 1} | ${mdEscape(rule.name)}${originOf(agent.handle, rule)} | \`${rule.action}\` | ${rule.studio ? `studio \`${rule.studio}\`` : "anywhere"} | ${
                Object.entries(rule.params)
                  .map(([param, pattern]) => `\`${param}\` ~ \`${cell(pattern)}\``)
                  .join(", ") || "—"
              } | **${rule.decision}** |`,
          ),
        ].join("\n")
      : "_No rules: actions in the approval list wait for you, everything else granted runs._";
    return {
      title: `What ${agent.name} may do`,
      breadcrumb: [...agentCrumbs(agent), { label: "Settings" }],
      blocks: [
        capabilitiesBlock(granted, builtIn(config.requires_approval), humanOnly),
        {
          md: `## Approvals\n\nActions allowed after your approval wait for your review at ${`[/subagents/${agent.handle}/pending](/subagents/${agent.handle}/pending)`}. Runs **${config.approval_mode === "wait" ? "wait for" : "carry on without"}** the outcome; unreviewed actions expire after ${config.approval_expiry_hours} h.`,
        },
        // One form, one Save: what it may use, what waits for you and how reviews work are one decision.
        {
          form: {
            action: "set_capabilities",
            fixed: {},
            label: "Save what it may do",
            style: "block",
            // Human-only actions show as not allowed, greyed out, saying why.
            values: { ...permissionsOf(config), ...Object.fromEntries(humanOnly.map((h) => [h, "off"])) },
            disabled: Object.fromEntries(humanOnly.map((h) => [h, `Greyed out: ${HUMAN_ONLY_WHY}.`])),
          },
        },
        ...(await connectedToolBlocks(ctx, agent, config)),
        {
          md: `## Rules\n\nChecked in order; the first that matches an action (and all its param patterns) decides: **allow**, **require_approval** or **deny** (the agent is told the rule's name). No match: the approval list above.\n\n${rules}`,
        },
        // A rule is removed with the button naming it, never by typing its name.
        ...config.rules.map(
          (rule): Block => ({
            form: { action: "remove_rule", fixed: { name: rule.name }, label: `Remove “${rule.name}”` },
          }),
        ),
        ...(await ruleForms(ctx, agent, config, query)),
      ],
    };
  },
});

/** What try_rule put in the address, as the form's values: the form keeps what was typed. */
function triedValues(query: Query): Record<string, string> {
  const values: Record<string, string | undefined> = {
    action: query.try_action,
    decision: query.try_decision,
    param_patterns: query.try_patterns,
    position: query.try_position,
  };
  return Object.fromEntries(
    Object.entries(values).filter((entry): entry is [string, string] => Boolean(entry[1])),
  );
}

/**
 * Trying a rule and adding one, together under the rules: the try form (keeping what was
 * typed), what the tried rule would have done right under it, and the add form, filled with
 * the tried rule ("Add this rule") so that only its name is left to type.
 */
async function ruleForms(
  ctx: PageCtx,
  agent: { id: string; handle: string },
  config: AgentConfig,
  query: Query,
) {
  const tried = triedValues(query);
  const result = await triedRule(ctx, agent, config, query);
  const forms: Block[] = [
    {
      md: "### Try a rule\n\nSee what it would have done to the agent's actions of the last 30 days before you add it.",
    },
    { form: { action: "try_rule", fixed: {}, label: "Try it", style: "block", values: tried } },
    ...result,
    {
      md: result.length
        ? "### Add this rule\n\nThe rule you tried, ready to add: give it a name."
        : "### Add a rule",
    },
    {
      form: {
        action: "add_rule",
        fixed: {},
        label: result.length ? "Add this rule" : "Add rule",
        style: "block",
        values: result.length ? tried : {},
      },
    },
  ];
  return forms;
}

/** The rule in the page's address (try_rule), tried on the agent's last 30 days; nothing when none is. */
async function triedRule(
  ctx: PageCtx,
  agent: { id: string; handle: string },
  config: AgentConfig,
  query: Query,
): Promise<Block[]> {
  const action = query.try_action;
  const decision = query.try_decision;
  if (!action || (decision !== "allow" && decision !== "require_approval" && decision !== "deny")) return [];
  let params: Record<string, string>;
  try {
    params = parsePatterns(ctx, action, query.try_patterns);
  } catch {
    return [
      {
        md: "#### What this rule would have done\n\n_Its param patterns cannot be read: try it again with the form._",
      },
    ];
  }
  const position = Number(query.try_position) || undefined;
  const rule = { name: "(tried)", action, decision, params } as const;
  const result = await backtest(ctx.db, agent.id, config, rule, position);
  const patterns = Object.entries(params)
    .map(([param, pattern]) => `\`${param}\` ~ \`${cell(pattern)}\``)
    .join(", ");
  const sections = (["held", "refused", "allowed"] as const).map((outcome) => {
    const { count, examples } = result.outcomes[outcome];
    const title = outcome === "held" ? "Held for approval" : outcome === "refused" ? "Refused" : "Allowed";
    const lines = examples.map(
      (example) =>
        `- \`${example.action}\` ${when(example.at)} · ${link(`run ${example.runId}, step ${example.step}`, `/subagents/${agent.handle}/runs/${example.runId}/steps/${example.step}`)} · ${mdEscape(excerpt(JSON.stringify(example.params), 120))}`,
    );
    return `**${title} (${count})**${lines.length ? `\n\n${lines.join("\n")}` : ""}`;
  });
  const markdown = [
    "#### What this rule would have done",
    "",
    `Tried: \`${action}\` → **${decision}**${patterns ? ` when ${patterns}` : ""}, at position ${position ?? config.rules.length + 1}. Nothing was saved: add it with **Add this rule** below.`,
    "",
    backtestSummary(result),
    // With nothing to try it on, three empty counts would say it three times more.
    ...(result.total ? ["", sections.join("\n\n")] : []),
  ].join("\n");
  // In a browser the try form's redirect lands here (#tried), right under the form.
  return [{ md: markdown, html: `<section id="tried" class="tried">${markdownToHtml(markdown)}</section>` }];
}
