// What a run needs before its first LLM call, and the ends it can come to without one: no
// model, no endpoint, a key that cannot be used; the limits checked before every call.
import type { PrismaClient } from "../../../db/prisma.ts";
import type { SubagentTaskRunStep } from "../../../generated/prisma/client.ts";
import { DecryptError } from "../../../lib/secrets.ts";
import type { Endpoint } from "../../money/keys.ts";
import { endpointFor, KeyUnavailableError } from "../../money/keys.ts";
import type { Budget } from "../../money/ledger.ts";
import { usd } from "../../money/pricing.ts";
import { EXPERIMENT_STOPPED } from "../core/experiments.ts";
import { stoppedByKillSwitch } from "../core/kill-switch.ts";
import type { RunStart } from "../core/run-start.ts";
import type { Finish } from "../core/runs.ts";
import { type AgentConfig, agentConfig, asPinnedBy, resolveModel, tenantSettings } from "../core/settings.ts";
import { type ReplaySeed, replaySeed } from "./replay-seed.ts";

export interface Prepared {
  cfg: AgentConfig;
  model: string;
  endpoint: Endpoint;
  /** The steps recorded so far: a resumed run continues from them. */
  previous: SubagentTaskRunStep[];
  /** A replay's first live step: what the original saw there (replay-seed.ts). */
  seed?: ReplaySeed | null;
  /** A replay under its original's rules: the policy it is judged by (triggers/replay.ts). */
  pinnedPolicy?: unknown;
}

/**
 * The run as it reads its agent: a run pinned to settings (a replay under its original's
 * rules, an experiment's candidate version) sees them wherever it reads its configuration —
 * its prompt, its limits, its actions and tools, its guard — as if they were the agent's.
 */
export function asPinned(start: RunStart): RunStart {
  const agent = asPinnedBy(start.agent, start.run);
  return agent === start.agent ? start : { ...start, agent };
}

export async function prepare(
  prisma: PrismaClient,
  start: RunStart,
  shared: Endpoint | null,
  defaultModel: string | undefined,
): Promise<Prepared | Finish> {
  const { run, agent, tenant } = start;
  // The claim read the agent, its owner and the tenant; a run that never recorded a step has none to resume from.
  const previous = run.stepsCount
    ? await prisma.subagentTaskRunStep.findMany({ where: { runId: run.id }, orderBy: { number: "asc" } })
    : [];
  // Switched off while it was queued (or waiting): it ends before its first step.
  if (!tenantSettings(tenant).agents_enabled) return stoppedByKillSwitch();
  const cfg = agentConfig(agent);
  const model = run.model ?? resolveModel(cfg, tenantSettings(tenant), defaultModel);
  if (!model)
    return {
      status: "failed",
      stopReason: "no_model",
      error:
        "No model is configured: set one on the agent, a tenant default, or LLM_DEFAULT_MODEL on the server.",
    };
  let endpoint: Endpoint | null;
  try {
    endpoint = await endpointFor(prisma, agent, cfg.api_key_id, shared);
  } catch (err) {
    if (!(err instanceof KeyUnavailableError || err instanceof DecryptError)) throw err;
    const error =
      err instanceof DecryptError
        ? `This agent's API key (id ${cfg.api_key_id}) cannot be decrypted with the server's keys (APP_ENCRYPTION_KEYS): add it again.`
        : err.message;
    return { status: "failed", stopReason: "api_key_unavailable", error };
  }
  if (!endpoint)
    return {
      status: "failed",
      stopReason: "no_endpoint",
      error: "No LLM endpoint is configured (LLM_BASE_URL), and the agent has no API key of its own.",
    };
  // A pinned run is judged by its pin (the claim read it with the run): a replay that keeps its
  // original's rules, an experiment's side under the version it tries.
  const pinned = run.policyPinned ? { pinnedPolicy: run.policy } : {};
  if (!run.replayOfRunId) return { cfg, model, endpoint, previous, ...pinned };
  const seed = await replaySeed(prisma, run, previous);
  return { cfg, model, endpoint, previous, seed, ...pinned };
}

export const timedOut = (seconds: number): Finish => ({
  status: "timed_out",
  stopReason: "timeout",
  error: `Ran out of time (${seconds} s).`,
});

/** The limits a run may have reached before its next LLM call; null while it may go on. */
export async function limitReached(
  start: RunStart,
  state: {
    counted: number;
    deadline: number;
    budget: Budget;
    endpoint: Endpoint;
    /** Pauses the agent at its monthly cost limit (ledger.ts pauseAtLimit). */
    pauseAtCostLimit: (budget: Budget) => Promise<void>;
    /** An experiment's run: why its experiment stops it (core/experiments.ts), or null. */
    experimentStop?: () => Promise<string | null>;
  },
): Promise<Finish | null> {
  const { run } = start;
  if (state.counted >= run.maxSteps)
    return {
      status: "failed",
      stopReason: "max_steps",
      error: `Reached the limit of ${run.maxSteps} steps before finishing.`,
    };
  if (Date.now() >= state.deadline) return timedOut(run.timeoutSeconds);
  if (state.budget.agentsOff) return stoppedByKillSwitch();
  // Revoking a key is often urgent (it leaked): a run using it stops at its next call.
  if (state.budget.keyGone)
    return {
      status: "failed",
      stopReason: "api_key_unavailable",
      error: `The API key ${state.endpoint.label ?? ""} was revoked during the run: pick another key, or the shared endpoint, on the agent's page.`,
    };
  if (state.budget.spentMicros >= state.budget.limitMicros) {
    await state.pauseAtCostLimit(state.budget);
    return {
      status: "cancelled",
      stopReason: "cost_limit",
      error: `Stopped at the monthly cost limit: ${usd(state.budget.spentMicros)} spent of ${usd(state.budget.limitMicros)}. The agent is paused until you raise its limit or resume it.`,
    };
  }
  const experiment = await state.experimentStop?.();
  if (experiment) return { status: "cancelled", stopReason: EXPERIMENT_STOPPED, error: experiment };
  return null;
}
