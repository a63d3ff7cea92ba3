// What a subagent may do, defined once beside the action registry. Every action is in
// exactly one set (a test checks no overlap and full coverage):
//   always allowed — harmless housekeeping and reading;
//   always blocked — identity, membership, security, tenant and agent administration;
//   grantable      — content actions, which the owner ticks per agent.
import type { SubagentTaskRun, Tenant, User } from "../../../generated/prisma/client.ts";
import type { ActionDef } from "../../registry/types.ts";
import { agentConfig, configUnder, tenantSettings } from "../core/settings.ts";
import { isToolName } from "../core/tool-names.ts";

// `call_tool` is how a run calls any tool: each tool is a capability of its own, granted by
// name (`<slug>__<tool>`) and judged when called (actions/tool-calls.ts).
export const ALWAYS_ALLOWED = ["dismiss", "dismiss_all", "search", "update_scratchpad", "call_tool"] as const;

export const ALWAYS_BLOCKED = [
  "create_studio",
  "update_studio",
  "join_studio",
  "update_member_role",
  "remove_member",
  "update_profile",
  "create_api_token",
  "revoke_api_token",
  // A person's own sign-in, and letting people go: never an agent's to do.
  "change_password",
  "end_session",
  "end_other_sessions",
  "rename_passkey",
  "remove_passkey",
  "start_two_factor",
  "confirm_two_factor",
  "renew_recovery_codes",
  "turn_off_two_factor",
  "deactivate_person",
  "reactivate_person",
  // Who administers the workspace and where it answers: its people's to decide.
  "change_role",
  "add_hostname",
  "remove_hostname",
  // Bringing people in opens the workspace to them: a person's decision, never an agent's.
  "invite_people",
  "revoke_invitation",
  "set_invite_link",
  // How people sign in (single sign-on, SSO only): account security, never an agent's.
  "set_sso_provider",
  "remove_sso_provider",
  "set_two_factor_policy",
  // Connecting a tool hands the workspace's words to another server: its people's choice,
  // as is accepting a changed tool (the rug-pull check) and which hosts may be connected.
  "add_tool_connection",
  "test_tool_connection",
  "sign_in_tool_connection",
  "disconnect_tool_connection",
  "accept_tool_change",
  "set_tool_hosts",
  "create_subagent",
  "update_subagent",
  "add_to_studio",
  "remove_from_studio",
  "pause_subagent",
  "resume_subagent",
  "archive_subagent",
  "unarchive_subagent",
  "transfer_subagent",
  "set_member_runs",
  "run_task",
  "stop_run",
  "pause_run",
  "resume_run",
  // Its managers correct its memory; the agent keeps it with update_scratchpad.
  "edit_scratchpad",
  "clear_scratchpad",
  // Forgetting what its tokens read is its managers' decision to disclose, never its own.
  "clear_agent_label",
  "retry_run",
  "replay_run",
  "answer_question",
  "approve_action",
  "reject_action",
  // A mail's review link is its recipient's: an agent that read one must not decide with it.
  "approve_from_link",
  "reject_from_link",
  "set_capabilities",
  "set_tool_level",
  "add_rule",
  "try_rule",
  "remove_rule",
  // Its settings are its managers' to bring back: an agent never restores a version of itself.
  "restore_agent_version",
  // What a run of it must do is its managers' judgement: an agent never writes its own tests.
  "save_test_case",
  "update_test_case_expectations",
  "delete_test_case",
  // Trying a candidate of itself spends its managers' money on their question, not its own.
  "start_experiment",
  "add_schedule",
  "update_schedule",
  "pause_schedule",
  "resume_schedule",
  "remove_schedule",
  "add_api_key",
  "test_api_key",
  "revoke_api_key",
  "set_agent_api_key",
  "set_cost_limit",
  "set_model_price",
  "remove_model_price",
  "pause_subscription",
  "resume_subscription",
  "remove_subscription",
  // An agent must not mint itself a way in from outside, nor see a signing secret.
  "create_webhook",
  "rotate_webhook_secret",
  "set_webhook_signature",
  "send_test_delivery",
  "disable_webhook",
  "enable_webhook",
  "delete_webhook",
  // The workspace's own limits on agents are its admins' alone.
  "set_human_only",
  // How people are reached outside the app: an agent must not reroute its owner's mail or
  // point an endpoint at a receiver of its choosing.
  "set_notifications",
  // A person's quiet is theirs: an agent never mutes or unmutes what reaches its people.
  "mute_agent_mentions",
  "unmute_agent_mentions",
  "create_outgoing_webhook",
  "enable_outgoing_webhook",
  "disable_outgoing_webhook",
  "delete_outgoing_webhook",
  "confirm_outgoing_webhook",
  "test_outgoing_webhook",
  "set_agents_enabled",
  "set_agent_limits",
  "set_default_capabilities",
  "refresh_models",
] as const;

/**
 * The content actions an owner grants, grouped by what they touch, each with the words a
 * person knows it by (the settings form and page show these; the action name is the hint).
 */
export const GRANTABLE_GROUPS = [
  {
    group: "Notes",
    actions: [
      ["create_note", "Post a note"],
      ["update_note", "Edit its own notes"],
      ["pin_note", "Pin a note"],
      ["unpin_note", "Unpin a note"],
      ["confirm_read", "Confirm it read a note"],
    ],
  },
  { group: "Comments", actions: [["add_comment", "Comment and reply"]] },
  {
    group: "Decisions",
    actions: [
      ["create_decision", "Ask for a decision"],
      ["add_option", "Add an option"],
      ["vote", "Vote on a decision"],
    ],
  },
  {
    group: "Commitments",
    actions: [
      ["create_commitment", "Propose a commitment"],
      ["join_commitment", "Join a commitment"],
    ],
  },
  {
    group: "Watching",
    actions: [
      ["subscribe", "Watch a page"],
      ["unsubscribe", "Stop watching a page"],
    ],
  },
] as const;

export type Grantable = (typeof GRANTABLE_GROUPS)[number]["actions"][number][0];

export const GRANTABLE: readonly Grantable[] = GRANTABLE_GROUPS.flatMap((g) =>
  g.actions.map(([name]) => name),
);

/** "Vote on a decision" for `vote`: how a person reads a grantable action's name. */
export function capabilityLabel(action: string): string {
  for (const group of GRANTABLE_GROUPS)
    for (const [name, label] of group.actions) if (name === action) return label;
  return action;
}

const allowed = new Set<string>(ALWAYS_ALLOWED);
const blocked = new Set<string>(ALWAYS_BLOCKED);
const grantable = new Set<string>(GRANTABLE);

export type CapabilityClass = "allowed" | "blocked" | "grantable";

export function capabilityClass(action: string): CapabilityClass | null {
  return allowed.has(action)
    ? "allowed"
    : blocked.has(action)
      ? "blocked"
      : grantable.has(action) || isToolName(action)
        ? "grantable"
        : null;
}

/** Why the workspace keeps an action for people, as the capabilities page and a refusal say it. */
export const HUMAN_ONLY_WHY = "human-only in this workspace: its admins keep it for people";

/**
 * Why an agent may not use an action, or null if it may. `granted` is the agent's
 * `capabilities` setting; `humanOnly` the workspace's actions no agent may be granted.
 */
export function capabilityDenial(
  action: string,
  granted: readonly string[],
  humanOnly: readonly string[] = [],
): string | null {
  const cls = capabilityClass(action);
  if (cls === "allowed") return null;
  if (cls === "blocked" || cls === null) return `capability \`${action}\` is never available to agents`;
  if (humanOnly.includes(action)) return `\`${action}\` is ${HUMAN_ONLY_WHY}`;
  if (granted.includes(action)) return null;
  return `capability \`${action}\` is not granted to this agent (its owner can grant it in the agent's settings)`;
}

/** The actions an agent may use somewhere, in `all`'s order: the always-allowed and the granted, less the workspace's human-only. */
export function usableBy<A extends { name: string }>(
  all: Iterable<A>,
  granted: readonly string[],
  humanOnly: readonly string[] = [],
): A[] {
  return [...all].filter((a) => !capabilityDenial(a.name, granted, humanOnly));
}

/**
 * The actions a run may use anywhere: those its agent's capabilities allowed when it was
 * queued (its policy snapshot; the agent's configuration for a run queued before there
 * were snapshots), in the registry's order (catalog.ts: those more pages offer first). Its
 * typed tools (step-prompt.ts), so the tools, the first thing a request sends, are the same
 * bytes at every step and a provider serves them and all that follows from its prompt
 * cache: a list grown as pages offered actions broke the cache at the request's very start.
 */
export function runActions(
  run: Pick<SubagentTaskRun, "policy">,
  agent: Pick<User, "agentConfig">,
  tenant: Pick<Tenant, "settings">,
  all: Iterable<ActionDef>,
): ActionDef[] {
  const cfg = run.policy ? configUnder(agent.agentConfig, run.policy) : agentConfig(agent);
  // A run calls its tools by their own names (runtime/run-tools.ts), never through `call_tool`.
  const actions = [...all].filter((action) => action.name !== "call_tool");
  return usableBy(actions, cfg.capabilities, tenantSettings(tenant).human_only);
}
