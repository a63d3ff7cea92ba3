// How a run that did not finish is told to people who may not open it: the thread it was
// woken in, a mail, a webhook. In words, from its status and stop reason only — never its
// error text, which can quote what the run read.
import type { RunStatus } from "../../../generated/prisma/client.ts";
import { AGENTS_OFF } from "./kill-switch.ts";

export const UNFINISHED: RunStatus[] = ["failed", "timed_out", "cancelled"];

const STOPPED: Record<string, string> = {
  stopped_by_owner: "its owner stopped the run",
  archived: "it was archived",
  owner_deactivated: "its owner was deactivated",
  shutdown: "its worker shut down",
  [AGENTS_OFF]: "agents were switched off in this workspace",
};

const COULD_NOT: Record<string, string> = {
  llm_error: "the model was unavailable",
  unavailable: "the model was unavailable",
  llm_auth: "the model's provider refused its key",
  api_key_unavailable: "its model key is not usable",
  no_endpoint: "no model is set up for it",
  no_model: "no model is set up for it",
  invalid_output: "the model kept answering in a way it could not use",
  max_steps: "it reached its step limit",
  timeout: "it ran out of time",
  cost_limit: "it reached its cost limit",
  worker_lost: "its worker kept stopping",
  lease_lost: "its worker lost the run",
};

/** "stopped: its owner stopped the run", "could not finish: the model was unavailable" (after "@scout "). */
export function endingWords(run: { status: RunStatus; stopReason: string | null }): string {
  const reason = run.stopReason ?? "";
  if (run.status === "cancelled") return `stopped: ${STOPPED[reason] ?? "the run was stopped"}`;
  if (run.status === "timed_out") return `could not finish: ${COULD_NOT.timeout}`;
  return `could not finish: ${COULD_NOT[reason] ?? "something went wrong"}`;
}

/** What a run woken in a thread left there, beyond its status: whether it answered, and if not why. */
export interface ThreadOutcome {
  status: RunStatus;
  stopReason: string | null;
  /** It wrote a comment in the thread (its answer). */
  replied: boolean;
  /** An action of its waits for a manager's approval (its reply, most often). */
  awaitingApproval: boolean;
  /** The last page it tried to open answered 403 or 404. */
  blocked: boolean;
}

/**
 * Why a run woken in a thread left no answer there, in words its waker may read whoever they
 * are: never its final message, which may hold what only its managers can read (the
 * disclosure rule would have held a comment quoting it for approval). `thread` follows
 * "@scout" directly (it starts with its own space or "'s"); `told` follows "did not answer
 * your mention: ". Null: it answered, or is still at work.
 */
export function unansweredWords(run: ThreadOutcome): { thread: string; told: string } | null {
  if (run.replied) return null;
  if (run.awaitingApproval && (run.status === "waiting" || run.status === "completed"))
    return {
      thread: "'s reply is waiting for its owner's approval",
      told: "its reply is waiting for its owner's approval",
    };
  if (run.status !== "completed") return null;
  if (run.blocked) return { thread: " could not open that page", told: "it could not open that page" };
  return { thread: " looked and had nothing to add", told: "it looked and had nothing to add" };
}
