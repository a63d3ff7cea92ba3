// The workspace's kill switch (tenant setting `agents_enabled`, set on /settings/agents): while
// it is off, every trigger is recorded as a skipped run saying so (triggers/dispatcher.ts), a
// queued run ends before its first model call, and a running one at its next step
// (runtime/navigator-setup.ts reads it with each recorded call's budget).
import type { Finish } from "./runs.ts";

/** The stop reason of a skipped or stopped run while agents are off. */
export const AGENTS_OFF = "agents_disabled";

export const AGENTS_OFF_MESSAGE =
  "Agents are switched off in this workspace: a workspace admin can switch them on at /settings/agents.";

export const stoppedByKillSwitch = (): Finish => ({
  status: "cancelled",
  stopReason: AGENTS_OFF,
  error: AGENTS_OFF_MESSAGE,
});
