// Starting an experiment (core/experiments.ts reads it): each of the agent's test cases queued
// twice as a dry run — under its current settings and under the candidate's — through the
// dispatcher's guards like any trigger. Each run's settings are pinned (its `policy` holds the
// whole version it runs under, `policyPinned`), so a change to the agent while it runs changes
// neither side. Its runs go in `parallel` lanes of their own (runs.ts claims one run per agent
// and lane at a time): at most that many run at once, beside the agent's own work.
import type { Db } from "../../../db/prisma.ts";
import type { Prisma, Tenant, User } from "../../../generated/prisma/client.ts";
import { ConflictError } from "../../../lib/errors.ts";
import { newId } from "../../../lib/ids.ts";
import { parseLabel } from "../../registry/audiences.ts";
import { ARMS, type Arm, type Candidate } from "../core/experiments.ts";
import type { NewRun } from "../core/runs.ts";
import { agentConfig, resolveModel, tenantSettings, versionedSettings } from "../core/settings.ts";
import { latestVersion } from "../core/versions.ts";
import { queueTriggered } from "./dispatcher.ts";

/** The most cases one experiment runs (each twice). */
export const MAX_EXPERIMENT_CASES = 50;

export interface NewExperiment {
  actorId: string;
  candidate: Candidate;
  /** What the candidate is, in words ("version 2", "model `gpt-4o`"). */
  candidateWords: string;
  /** The candidate's whole versioned settings. */
  candidateSettings: Record<string, unknown>;
  costCapMicros: bigint;
  parallel: number;
}

type ExperimentAgent = Pick<
  User,
  "id" | "tenantId" | "agentConfig" | "pausedAt" | "pausedReason" | "archivedAt"
>;

/** Queues the experiment's runs in the caller's transaction; returns its id. */
export async function startExperiment(
  tx: Db,
  tenant: Pick<Tenant, "settings">,
  agent: ExperimentAgent,
  o: NewExperiment,
): Promise<string> {
  const cases = await tx.agentTestCase.findMany({
    where: { agentId: agent.id },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    take: MAX_EXPERIMENT_CASES,
  });
  if (!cases.length)
    throw new ConflictError("This agent has no test cases yet: save one from a run's page first.");
  const baseline = await latestVersion(tx, agent.id);
  const sides: Record<Arm, { settings: Record<string, unknown>; version: number | null }> = {
    current: { settings: versionedSettings(agent.agentConfig), version: baseline },
    candidate: {
      settings: o.candidateSettings,
      version: o.candidate.kind === "version" ? o.candidate.version : null,
    },
  };
  const id = newId();
  await tx.agentExperiment.create({
    data: {
      id,
      tenantId: agent.tenantId,
      agentId: agent.id,
      createdById: o.actorId,
      candidate: o.candidate as Prisma.InputJsonValue,
      candidateWords: o.candidateWords,
      baselineVersion: baseline,
      costCapMicros: o.costCapMicros,
      parallel: o.parallel,
    },
  });
  let slot = 0;
  for (const testCase of cases)
    for (const arm of ARMS) {
      const lane = `experiment:${id}:${slot++ % o.parallel}`;
      await queueSide(tx, tenant, agent, {
        experimentId: id,
        testCase,
        arm,
        ...sides[arm],
        lane,
        actorId: o.actorId,
      });
    }
  return id;
}

interface Side {
  experimentId: string;
  testCase: { id: string; task: string; label: Prisma.JsonValue; viewerIds: string[] };
  arm: Arm;
  settings: Record<string, unknown>;
  /** The version these settings are, when they are one (the run page links it). */
  version: number | null;
  lane: string;
  actorId: string;
}

/** One case on one side: a dry run under that side's settings, pinned. */
async function queueSide(tx: Db, tenant: Pick<Tenant, "settings">, agent: ExperimentAgent, side: Side) {
  const cfg = agentConfig({ agentConfig: side.settings as Prisma.JsonValue });
  const settings = tenantSettings(tenant);
  const run: NewRun = {
    tenantId: agent.tenantId,
    agentId: agent.id,
    initiatedById: side.actorId,
    triggerKind: "experiment",
    triggerEventId: `experiment:${side.experimentId}:${side.testCase.id}:${side.arm}`,
    triggerRef: side.experimentId,
    chainDepth: 0,
    task: side.testCase.task,
    // Within the view and label of the run the case was saved from: it reads no more than it did.
    label: parseLabel(side.testCase.label),
    viewerIds: side.testCase.viewerIds,
    model: resolveModel(cfg, settings, undefined),
    maxSteps: cfg.max_steps,
    timeoutSeconds: cfg.timeout_seconds,
    dry: true,
    lane: side.lane,
  };
  const queued = await queueTriggered(tx, agent, settings, run);
  if (!queued)
    throw new ConflictError(
      "The agent cannot start runs now (paused, archived or switched off): see its runs for why.",
    );
  await tx.$executeRaw`
    UPDATE subagent_task_runs
    SET policy = ${JSON.stringify({ ...side.settings, version: side.version })}::jsonb, policy_pinned = true,
        experiment_id = ${side.experimentId}, case_id = ${side.testCase.id}, arm = ${side.arm}
    WHERE id = ${queued.id}`;
}
