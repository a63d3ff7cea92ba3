import { z } from "zod";
import { ConflictError } from "../../lib/errors.ts";
import { mayManage } from "../agents/core/ownership.ts";
import { requeue } from "../agents/core/runs.ts";
import { agentConfig, MAX_STEPS_LIMIT, resolveModel, tenantSettings } from "../agents/core/settings.ts";
import { recordStep } from "../agents/core/steps.ts";
import { queueTriggered } from "../agents/triggers/dispatcher.ts";
import { retrySkipped } from "../agents/triggers/retry.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { longText } from "../validation.ts";

const ownerOnly = (ctx: { actor: { kind: string } }) =>
  ctx.actor.kind === "person" ? null : "only the agent's owner can do this";

export const runTask = defineAction({
  name: "run_task",
  needs: ["agent"],
  description: "Give it a task to do now",
  params: z.object({
    task: longText(10_000, "what it should do"),
    max_steps: z
      .number()
      .int("a whole number")
      .min(1, "at least 1")
      .max(MAX_STEPS_LIMIT, `at most ${MAX_STEPS_LIMIT}`)
      .optional(),
    dry: z.boolean().optional().meta({
      label: "Try without acting",
      description:
        "a dry run: it reads as usual, and every write is recorded as what it would have done, never done",
    }),
  }),
  writes: true,
  audience: toAgentManagers("task"),
  available: (ctx, scope) =>
    ownerOnly(ctx) ??
    (!tenantSettings(ctx.tenant).agents_enabled
      ? "agents are switched off in this workspace"
      : scope.agent?.archivedAt
        ? "the subagent is archived"
        : scope.agent?.pausedKind === "cost_limit"
          ? "the subagent reached its monthly cost limit; raise the limit on its usage page"
          : scope.agent?.pausedAt
            ? "the subagent is paused; resume it first"
            : null),
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const config = agentConfig(agent);
    const settings = tenantSettings(ctx.tenant);
    // Through the dispatcher's guards like every trigger (`available` refused a paused agent
    // already); a manual run is not held to the trigger rate.
    const run = await queueTriggered(ctx.tx, agent, settings, {
      tenantId: ctx.tenant.id,
      agentId: agent.id,
      initiatedById: ctx.actor.id,
      triggerKind: "manual",
      chainDepth: 0,
      task: params.task,
      // A studio member who may give it tasks but does not manage it: the run reads within their view.
      viewerIds: mayManage(ctx.actor, agent) ? [] : [ctx.actor.id],
      model: resolveModel(config, settings, undefined),
      maxSteps: params.max_steps ?? config.max_steps,
      timeoutSeconds: config.timeout_seconds,
      dry: params.dry ?? false,
    });
    if (!run) throw new ConflictError(`@${agent.handle} cannot start a run now: see its runs for why.`);
    return {
      status: 201,
      location: `/subagents/${agent.handle}/runs/${run.id}`,
      notice: params.dry
        ? `You gave @${agent.handle} this task as a dry run: nothing it writes will be done.`
        : `You gave @${agent.handle} this task.`,
    };
  },
});

export const stopRun = defineAction({
  name: "stop_run",
  needs: ["taskRun", "agent"],
  description: "Stop this run",
  params: z.object({}),
  writes: true,
  audience: toAgentManagers("stop request"),
  available: (ctx, scope) =>
    ownerOnly(ctx) ??
    (["queued", "running", "waiting", "paused"].includes(scope.taskRun?.status ?? "")
      ? null
      : "the run is not active"),
  async execute(ctx, _params, scope) {
    const run = scope.taskRun;
    const { agent } = scope;
    const location = `/subagents/${agent.handle}/runs/${run.id}`;
    // Not started, waiting or paused: cancel at once. Running: ask its worker, which sees it within a heartbeat and aborts.
    const now = new Date();
    const cancelled = await ctx.tx.subagentTaskRun.updateMany({
      where: { id: run.id, status: { in: ["queued", "waiting", "paused"] } },
      data: {
        status: "cancelled",
        stopReason: "stopped_by_owner",
        error: "Stopped by its owner.",
        stopRequestedAt: now,
        completedAt: now,
      },
    });
    if (cancelled.count) return { status: 200, location, notice: "Run cancelled" };
    const requested = await ctx.tx.subagentTaskRun.updateMany({
      where: { id: run.id, status: "running" },
      data: { stopRequestedAt: now },
    });
    if (!requested.count) throw new ConflictError("The run has already ended");
    return { status: 200, location, notice: "You asked it to stop after the step it was on." };
  },
});

export const retryRun = defineAction({
  name: "retry_run",
  needs: ["taskRun", "agent"],
  description: "Run this skipped trigger now (through the same guards; it may wait for the agent's rate)",
  params: z.object({}),
  writes: true,
  audience: toAgentManagers("retry"),
  available: (ctx, scope) =>
    ownerOnly(ctx) ??
    (scope.taskRun?.status !== "skipped"
      ? "only a skipped run can be retried"
      : scope.agent && !mayManage(ctx.actor, scope.agent)
        ? "only the agent's managers retry its runs"
        : null),
  async execute(ctx, _params, scope) {
    const run = scope.taskRun;
    const { agent } = scope;
    const queued = await retrySkipped(ctx.tx, ctx.tenant, agent, run);
    return {
      status: 201,
      location: `/subagents/${agent.handle}/runs/${queued.id}`,
      notice: `Retried as run ${queued.id}`,
    };
  },
});

export const answerQuestion = defineAction({
  name: "answer_question",
  needs: ["taskRun", "agent"],
  description: "Answer the agent's question; the run resumes",
  params: z.object({ answer: longText(5_000, "your answer") }),
  writes: true,
  audience: toAgentManagers("answer"),
  available: (ctx, scope) =>
    ownerOnly(ctx) ??
    (scope.taskRun?.status === "waiting" && scope.taskRun.stopReason === "asked_owner"
      ? null
      : "the run is not waiting for an answer"),
  async execute(ctx, params, scope) {
    const run = scope.taskRun;
    const { agent } = scope;
    // Lock the run: two answers at once must not both resume it.
    const [current] = await ctx.tx.$queryRaw<{ status: string; steps_count: number }[]>`
      SELECT status, steps_count FROM subagent_task_runs WHERE id = ${run.id} FOR UPDATE`;
    if (current?.status !== "waiting" || run.stopReason !== "asked_owner")
      throw new ConflictError("The run is no longer waiting for an answer");
    const last = await ctx.tx.subagentTaskRunStep.findFirst({
      where: { runId: run.id },
      orderBy: { number: "desc" },
    });
    const resultPath = (last?.detail as Record<string, unknown> | null)?.resultPath;
    await recordStep(ctx.tx, run, null, {
      number: current.steps_count + 1,
      type: "answer",
      path: typeof resultPath === "string" ? resultPath : undefined,
      detail: { answer: params.answer, by: ctx.actor.handle, resultPath },
    });
    await ctx.tx.subagentTaskRun.update({ where: { id: run.id }, data: { answer: params.answer } });
    await requeue(ctx.tx, run, ctx.actor.id);
    return {
      status: 200,
      location: `/subagents/${agent.handle}/runs/${run.id}`,
      notice: "Answer sent; the run resumes",
    };
  },
});
