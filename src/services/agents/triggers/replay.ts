// A finished run re-played from one of its steps by one of its agent's managers: "what would
// it have done from here, with another model, or with the rules as they are now?". A new run
// (trigger `replay`, linked both ways: its replay_of_run_id and replay_from_step, the
// original's list of replays) whose steps before the branching one are the original's rows,
// copied and marked `replayed`: nothing they did (actions, approvals, comments) executes
// again, and their cost is not charged again. It is queued through the dispatcher's guards
// like any trigger, with the original's task, label and viewers (as retry.ts), so it reads
// and discloses no more than the original could; from the branching step on it runs live,
// and its first prompt is the original's at that step (runtime/replay-seed.ts). Its actions
// are judged by the rules the original was queued under, or on request the agent's now.
import type { Db } from "../../../db/prisma.ts";
import type { SubagentTaskRun, SubagentTaskRunStep, Tenant, User } from "../../../generated/prisma/client.ts";
import { ConflictError, ValidationError } from "../../../lib/errors.ts";
import { newId, sha256 } from "../../../lib/ids.ts";
import { parseLabel } from "../../registry/audiences.ts";
import type { QueuedRun } from "../core/runs.ts";
import { agentConfig, POLICY_KEYS, tenantSettings } from "../core/settings.ts";
import { queueTriggered } from "./dispatcher.ts";

/** Runs that may be re-played: ended after doing something (a skipped run has no steps). */
export const REPLAYABLE = ["completed", "failed", "cancelled", "timed_out"];

/** Under the rules the original was queued under (runs.ts keeps them), or the agent's now. */
export const REPLAY_RULES = ["original", "current"] as const;
export type ReplayRules = (typeof REPLAY_RULES)[number];

/**
 * One replay per (run, step, model, rules), however often the button is pressed: under the
 * original's rules, once; under the current ones, once per version of them — "change a
 * rule, then re-run" is what a replay is for.
 */
export const replayKey = (run: Pick<SubagentTaskRun, "id">, step: number, model: string, rules: string) =>
  `replay:${run.id}:${step}:${model}:${rules}`;

/** What decides an action's fate (capabilities, approvals, rules), short-hashed. */
export function policyVersion(agent: Pick<User, "agentConfig">): string {
  const c = agentConfig(agent);
  return sha256(JSON.stringify(POLICY_KEYS.map((k) => c[k]))).slice(0, 12);
}

/** Whether a step was a model call whose prompt was kept: only there can a run branch. */
export const branchable = (s: Pick<SubagentTaskRunStep, "detail">) =>
  typeof (s.detail as { prompt?: { hash?: unknown } } | null)?.prompt?.hash === "string";

export async function replayRun(
  tx: Db,
  tenant: Pick<Tenant, "settings">,
  agent: Pick<User, "id" | "handle" | "pausedAt" | "pausedReason" | "archivedAt" | "agentConfig">,
  original: SubagentTaskRun,
  from: Pick<SubagentTaskRunStep, "number" | "detail">,
  o: { actorId: string; model?: string; rules?: ReplayRules },
): Promise<QueuedRun> {
  const keepRules = (o.rules ?? "original") === "original";
  if (!REPLAYABLE.includes(original.status))
    throw new ConflictError("Only a finished run can be re-run from a step.");
  if (!branchable(from))
    throw new ValidationError([
      {
        field: "step",
        label: "Step",
        message: `step ${from.number} made no model call the run kept the prompt of: re-run from a later step`,
      },
    ]);
  if (agent.archivedAt) throw new ConflictError(`@${agent.handle} is archived: unarchive it, then re-run.`);
  if (agent.pausedAt) throw new ConflictError(`@${agent.handle} is paused: resume it, then re-run.`);
  const settings = tenantSettings(tenant);
  if (!settings.agents_enabled) throw new ConflictError("Agents are switched off in this workspace.");
  const model = o.model ?? original.model;
  if (!model) throw new ConflictError("The run had no model recorded: name one to re-run it with.");
  if (keepRules && original.policy === null)
    throw new ConflictError(
      "This run predates keeping the rules a run was queued under: re-run it with the agent's current rules.",
    );
  const key = replayKey(original, from.number, model, keepRules ? "original" : policyVersion(agent));
  const done = await tx.subagentTaskRun.findUnique({
    where: { agentId_triggerEventId: { agentId: agent.id, triggerEventId: key } },
    select: { id: true },
  });
  if (done)
    throw new ConflictError(
      `Already re-run from step ${from.number} with ${model} under ${keepRules ? "the original's rules" : "these rules"} as run ${done.id}.`,
    );
  const queued = await queueTriggered(tx, agent, settings, {
    tenantId: original.tenantId,
    agentId: agent.id,
    initiatedById: o.actorId,
    triggerEventId: key,
    triggerKind: "replay",
    triggerRef: original.id,
    threadId: original.threadId ?? undefined,
    chainDepth: 0,
    task: original.task,
    // Everything it will remember, the original read: it carries the original's label and viewers.
    label: parseLabel(original.label),
    viewerIds: original.viewerIds,
    model,
    maxSteps: original.maxSteps,
    timeoutSeconds: original.timeoutSeconds,
    // A dry run's steps did nothing: re-played, it goes on doing nothing.
    dry: original.dry,
  });
  if (!queued) throw new ConflictError(`@${agent.handle} cannot start a run now: see its runs for why.`);
  await copySteps(tx, original, queued.id, from.number, keepRules);
  return queued;
}

/** The original's steps before `from`, as rows of the new run: records, not work (no duration, so no time spent). */
async function copySteps(tx: Db, original: SubagentTaskRun, runId: string, from: number, pin: boolean) {
  const steps = await tx.subagentTaskRunStep.findMany({
    where: { runId: original.id, number: { lt: from } },
    orderBy: { number: "asc" },
  });
  await tx.subagentTaskRunStep.createMany({
    data: steps.map((s) => ({
      id: newId(),
      runId,
      tenantId: s.tenantId,
      number: s.number,
      type: s.type,
      path: s.path,
      detail: s.detail ?? {},
      inputTokens: s.inputTokens,
      outputTokens: s.outputTokens,
      llmMs: s.llmMs,
      durationMs: 0,
      modelText: s.modelText,
      replayed: true,
    })),
  });
  await tx.subagentTaskRun.update({
    where: { id: runId },
    data: {
      stepsCount: steps.length,
      replayOfRunId: original.id,
      replayFromStep: from,
      // Judged by the original's rules (navigator-setup.ts pins them), whatever the agent's now.
      ...(pin && { policy: original.policy ?? undefined, policyPinned: true }),
    },
  });
}
