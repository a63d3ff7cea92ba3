// What a subagent may do, defined once beside the action registry. Every action is in
// exactly one set (a test checks no overlap and full coverage):
//   always allowed — harmless housekeeping and reading;
//   always blocked — identity, membership, security, tenant and agent administration;
//   grantable      — content actions, which the owner ticks per agent.
export const ALWAYS_ALLOWED = ["dismiss", "dismiss_all", "search", "update_scratchpad"] as const;

export const ALWAYS_BLOCKED = [
  "create_studio",
  "update_studio",
  "join_studio",
  "update_member_role",
  "remove_member",
  "update_profile",
  "create_api_token",
  "revoke_api_token",
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
  "answer_question",
  "approve_action",
  "reject_action",
  "set_capabilities",
  "set_approval_requirements",
  "set_approval_mode",
  "add_rule",
  "remove_rule",
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
  "disable_webhook",
  "enable_webhook",
  "delete_webhook",
] as const;

export const GRANTABLE = [
  "create_note",
  "update_note",
  "pin_note",
  "unpin_note",
  "confirm_read",
  "add_comment",
  "create_decision",
  "add_option",
  "vote",
  "create_commitment",
  "join_commitment",
  "subscribe",
  "unsubscribe",
] as const;

const allowed = new Set<string>(ALWAYS_ALLOWED);
const blocked = new Set<string>(ALWAYS_BLOCKED);
const grantable = new Set<string>(GRANTABLE);

export type CapabilityClass = "allowed" | "blocked" | "grantable";

export function capabilityClass(action: string): CapabilityClass | null {
  return allowed.has(action)
    ? "allowed"
    : blocked.has(action)
      ? "blocked"
      : grantable.has(action)
        ? "grantable"
        : null;
}

/**
 * Why an agent may not use an action, or null if it may. `granted` is the agent's
 * `capabilities` setting: absent allows every grantable action (agents made before the
 * setting existed keep working); an empty list allows none.
 */
export function capabilityDenial(action: string, granted: readonly string[] | undefined): string | null {
  const cls = capabilityClass(action);
  if (cls === "allowed") return null;
  if (cls === "blocked" || cls === null) return `capability \`${action}\` is never available to agents`;
  if (granted === undefined || granted.includes(action)) return null;
  return `capability \`${action}\` is not granted to this agent (its owner can grant it in the agent's settings)`;
}
