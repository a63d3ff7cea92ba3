// The AgentNavigator: what a run needs before its first step (navigator-setup.ts), then the
// loop (loop.ts) with its real ports — the catalog's in-process markdown API as the agent,
// Postgres for steps and the ledger, the LLM client, and the run's logger, trace, metrics
// and live text behind its one `emit`.
import { hotQuery, type PrismaClient } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import type { Logger } from "../../../lib/logger.ts";
import { runSteps } from "../../../metrics/metrics.ts";
import { registry } from "../../catalog/catalog.ts";
import { readPage, runAction } from "../../catalog/markdown-api.ts";
import { callStarted } from "../../live/publish.ts";
import type { TextPublisher } from "../../live/text.ts";
import { type Endpoint, markKeyFailed } from "../../money/keys.ts";
import { pauseAtLimit, recordUsage } from "../../money/ledger.ts";
import type { Usage } from "../../money/pricing.ts";
import { type Ctx, toActor } from "../../registry/types.ts";
import { experimentStop } from "../core/experiments.ts";
import type { RunStart } from "../core/run-start.ts";
import type { Finish } from "../core/runs.ts";
import { recordResources, recordStep } from "../core/steps.ts";
import { runActions } from "../policy/capabilities.ts";
import { storedFlow } from "../policy/labels.ts";
import { judgedConfig } from "../policy/policy.ts";
import type { StopReason } from "./heartbeat.ts";
import type { LlmClient } from "./llm.ts";
import { navigate } from "./loop.ts";
import { asPinned, type Prepared, prepare } from "./navigator-setup.ts";
import type { NavigatorEvent, NavigatorPorts, Step } from "./ports.ts";
import { connectedToolsOf } from "./run-tools.ts";
import { type Resumable, setUpRun, stopped } from "./step-state.ts";
import { NO_TRACE, type RunTrace } from "./tracing.ts";

export { MAX_INVALID_IN_A_ROW } from "./decisions.ts";
export { type Resumable, stopped };

export interface NavigatorDeps {
  prisma: PrismaClient;
  llm: LlmClient;
  /** The shared endpoint (operator's proxy); null when none is configured. */
  endpoint: Endpoint | null;
  defaultModel?: string;
  /** The most prompt tokens a step may send (PROMPT_TOKEN_BUDGET). */
  promptBudget?: number;
  /** The worker's lease id, required to advance the run. */
  owner: string;
  /** The run's own logger: its lines carry the run, agent and tenant (process-agent-run.ts). */
  log?: Logger;
  /** Fired when its owner asks it to pause: it does before its next model call (pause.ts). */
  pause?: AbortSignal;
  /** Where the model's reply goes as it streams, for the run page (services/live/text.ts). */
  text?: TextPublisher;
  /** This job's spans of the run (tracing.ts); none when tracing is off. */
  trace?: RunTrace;
}

export async function runNavigator(
  deps: NavigatorDeps,
  claimed: RunStart,
  signal: AbortSignal,
  resumable: Resumable = {},
): Promise<Finish> {
  const inFlight: Promise<unknown>[] = [];
  const start = asPinned(claimed);
  try {
    const prepared = await prepare(deps.prisma, start, deps.endpoint, deps.defaultModel);
    if ("status" in prepared) return prepared;
    const ports = realPorts(deps, start, prepared, inFlight);
    // A resumed run's calls still out belonged to a worker that stopped: nobody will hear back.
    if (start.run.stepsCount)
      await deps.prisma.toolCall.updateMany({
        where: { runId: start.run.id, status: "calling" },
        data: { status: "interrupted" },
      });
    const options = {
      ports,
      stop: signal,
      ...(deps.pause && { pause: deps.pause }),
      ...(deps.promptBudget !== undefined && { promptBudget: deps.promptBudget }),
      usable: runActions(start.run, start.agent, start.tenant, registry.actions.values()),
      lookup: (name: string) => registry.actions.get(name),
      connected: await connectedToolsOf(deps.prisma, start),
    };
    return await navigate(setUpRun(start, prepared, options, resumable));
  } finally {
    // A run never ends ahead of a record it started: its end would race the record's lease check.
    await Promise.allSettled(inFlight);
  }
}

/** The context the run acts in; each step gets a fresh copy (`fresh` below). */
function runContext(prisma: PrismaClient, start: RunStart, prepared: Prepared): Ctx {
  const { run, agent, tenant } = start;
  return {
    db: prisma,
    tenant,
    actor: toActor(agent),
    run: {
      id: run.id,
      chainDepth: run.chainDepth,
      ...(prepared.pinnedPolicy !== undefined && { pinnedPolicy: prepared.pinnedPolicy }),
      ...(run.dry && { dry: true }),
    },
    // What it read survives a crash or a wait on the run's row: a resumed run starts where it left off.
    // On the pool directly (hotQuery): it is on the step path of every run that reads a new studio.
    flow: storedFlow(run.label, (label) =>
      hotQuery(
        prisma,
        Prisma.sql`UPDATE subagent_task_runs SET label = ${JSON.stringify(label)}::jsonb WHERE id = ${run.id}`,
      ),
    ),
    ...(start.viewers.length && { viewers: start.viewers }),
  };
}

function realPorts(
  deps: NavigatorDeps,
  start: RunStart,
  prepared: Prepared,
  inFlight: Promise<unknown>[],
): NavigatorPorts {
  const { prisma, owner } = deps;
  const { run, agent } = start;
  const ctx = runContext(prisma, start, prepared);
  /** A new context per step, so an owner's change to the agent's capabilities or rules takes
   * effect at its next step, not its next run. Reading a page lists actions with the
   * configuration that came back with the last recorded call; executing one reads it afresh,
   * so a rule the owner added while the model was thinking applies to that very action. */
  const fresh = (agentConfig: Prisma.JsonValue): Ctx => {
    const row = { id: agent.id, parentId: agent.parentId, ownerStudioId: agent.ownerStudioId };
    return { ...ctx, primed: { agent: { ...row, agentConfig } } };
  };
  return {
    readPage: (path, agentConfig) => readPage(fresh(agentConfig), path),
    readFirstPage: (agentConfig) => {
      const first = fresh(agentConfig);
      first.primed = { ...first.primed, whoami: start.whoami };
      return readPage(first, "/whoami");
    },
    act: async (request) => {
      let recorded: Step | undefined;
      const result = await runAction({ ...ctx }, request.path, request.action, request.params, {
        reason: request.reason,
        inTx: async (tx, outcome, emitted) => {
          recorded = request.step(outcome);
          await recordStep(tx, run, owner, { ...recorded, number: request.stepNumber });
          // A queued action is not a resource yet: it becomes one when approved (recorded then).
          const created = emitted.filter((event) => event.subjectType !== "pending_action");
          await recordResources(tx, run, request.stepNumber, outcome.location, created);
        },
      });
      if (!result.ok) return result;
      if (!recorded) throw new Error("the action's transaction committed without its step");
      return { ok: true, page: result.page, pending: result.outcome.pending, recorded };
    },
    recordStep: (record) => {
      const written = recordStep(prisma, run, owner, record);
      inFlight.push(written);
      return written;
    },
    charge: (spent, record) => recordUsage(prisma, spent, new Date(), record && { owner, record }),
    callModel: (model, request) =>
      (deps.trace ?? NO_TRACE).chat(model, prepared.endpoint, request.prompt, () =>
        deps.llm(prepared.endpoint, request),
      ),
    pauseAtCostLimit: (budget) => pauseAtLimit(prisma, agent, budget, run.id),
    ...(run.experimentId && { experimentStop: () => experimentStop(prisma, run.experimentId!) }),
    markKeyFailed: (keyId, message) => markKeyFailed(prisma, keyId, message),
    emit: (event) => emitEvent(deps, start, ctx, event),
  };
}

/** The one sink of what the loop tells its watchers: metrics, the trace, live text, the log. */
function emitEvent(deps: NavigatorDeps, start: RunStart, ctx: Ctx, event: NavigatorEvent): void {
  switch (event.type) {
    case "step_recorded":
      runSteps.inc({ type: event.step.type });
      deps.trace?.recorded(event.step);
      return;
    case "decided":
      deps.trace?.tool(event.decision, judgedConfig(ctx, event.agentConfig));
      return;
    case "call_started":
      callStarted(deps.prisma, start.run, event.stepNumber);
      return;
    case "text":
      deps.text?.publish(start.run.id, event.stepNumber, event.text);
      return;
    case "text_end":
      deps.text?.end(start.run.id);
      return;
    case "warning":
      deps.log?.warn(event.fields, event.message);
      return;
  }
}

export type { StopReason, Usage };
