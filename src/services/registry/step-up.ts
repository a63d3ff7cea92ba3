// Re-confirmation before sensitive changes ("step-up"). An action marked `confirmRecent` asks a
// person on a session to prove again that it is them when the session's last confirmation is
// older than the window: whether it asks is decided here, once, for the form that shows the
// field and for the pipeline that checks it (registry.ts `run`, before the action runs). What
// counts as proof and how long a confirmation lasts belong to services/accounts/step-up.ts,
// handed to the registry as its `stepUp` hook (this layer cannot import it).
// Never asked: tokens and MCP (they named the action on purpose, and token-scope.ts holds them
// to the `manage` scope for every marked action), and agents in process (no session; every
// marked action is always blocked for them, services/agents/policy/capabilities.ts).
import type { ActionDef, Ctx } from "./types.ts";

/**
 * What a form sends the proof as. Beside the action's params, never one of them: a param may
 * be a secret of its own (a provider key), and the proof is never echoed or kept hidden.
 */
export const RECONFIRM_FIELD = "_reconfirm";
export const RECONFIRM_LABEL = "Your password or a two-factor code";

export interface StepUp {
  /** The session's last confirmation is older than the window (or unknown). */
  stale(ctx: Ctx): boolean;
  /**
   * Checks the proof: right, the session is confirmed from now on (and `ctx.auth.confirmation`
   * says so); missing, a 403 naming what to send; wrong, a 400 naming the field; too many
   * wrong ones, a 429. Runs outside the action's transaction: a failure counts even so.
   */
  confirm(ctx: Ctx, proof: string | undefined): Promise<void>;
}

/** Whether this actor must re-confirm before `action` runs: a marked action, a person's session, a stale confirmation. */
export function asksConfirmation(stepUp: StepUp | undefined, ctx: Ctx, action: ActionDef): boolean {
  return Boolean(action.confirmRecent && ctx.auth?.via === "session" && stepUp?.stale(ctx));
}
