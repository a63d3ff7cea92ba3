// Pausing a run and resuming it (agents/runtime/pause.ts holds the worker's side). A running
// run is asked to pause and does at its next step boundary, releasing its worker; a queued
// one pauses at once. Resuming queues it again through the outbox, as an answer does: the
// run continues from its recorded steps, with the steps, cost and working time it has left.
import { z } from "zod";
import { ConflictError } from "../../lib/errors.ts";
import { mayManage } from "../agents/core/ownership.ts";
import { requeue } from "../agents/core/runs.ts";
import { emit } from "../events.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { type Ctx, defineAction, type Scope } from "../registry/types.ts";

/** A person who manages the agent: a member who gave it the task may stop it, not hold it. */
function managers(ctx: Ctx, scope: Scope): string | null {
  if (ctx.actor.kind !== "person") return "only the agent's owner can do this";
  return scope.agent && !mayManage(ctx.actor, scope.agent)
    ? "only the agent's managers pause its runs"
    : null;
}

export const pauseRun = defineAction({
  name: "pause_run",
  needs: ["taskRun", "agent"],
  description: "Pause this run after its current step; resume it later where it stopped",
  params: z.object({}),
  writes: true,
  audience: toAgentManagers("pause request"),
  available: (ctx, scope) => {
    const run = scope.taskRun;
    return (
      managers(ctx, scope) ??
      (run?.status === "queued" ||
      (run?.status === "running" && !run.pauseRequestedAt && !run.stopRequestedAt)
        ? null
        : "only a queued or running run can be paused")
    );
  },
  async execute(ctx, _params, scope) {
    const run = scope.taskRun;
    const { agent } = scope;
    const location = `/subagents/${agent.handle}/runs/${run.id}`;
    const now = new Date();
    const pausedBy = { pausedById: ctx.actor.id, pauseRequestedAt: now };
    // The audit trail: who asked, when (the run's own `run.paused` follows when it pauses).
    await emit(ctx, { type: "run.pause_requested", subjectType: "run", subjectId: run.id });
    // Not claimed yet: paused at once (its job, if it comes, finds nothing to claim).
    const held = await ctx.tx.subagentTaskRun.updateMany({
      where: { id: run.id, status: "queued" },
      data: { ...pausedBy, status: "paused", stopReason: "paused_by_owner" },
    });
    if (held.count) return { status: 200, location, notice: "Run paused" };
    // Running: its worker's heartbeat sees the request, and the run pauses before its next model call.
    const asked = await ctx.tx.subagentTaskRun.updateMany({
      where: { id: run.id, status: "running", pauseRequestedAt: null, stopRequestedAt: null },
      data: pausedBy,
    });
    if (!asked.count) throw new ConflictError("The run is no longer running");
    return { status: 200, location, notice: "You asked it to pause after the step it was on." };
  },
});

export const resumeRun = defineAction({
  name: "resume_run",
  needs: ["taskRun", "agent"],
  description: "Resume this paused run where it stopped",
  params: z.object({}),
  writes: true,
  audience: toAgentManagers("resume"),
  available: (ctx, scope) =>
    managers(ctx, scope) ?? (scope.taskRun?.status === "paused" ? null : "the run is not paused"),
  async execute(ctx, _params, scope) {
    const run = scope.taskRun;
    const { agent } = scope;
    const location = `/subagents/${agent.handle}/runs/${run.id}`;
    // Locked: two resumes at once must not queue it twice.
    const [current] = await ctx.tx.$queryRaw<{ status: string }[]>`
      SELECT status FROM subagent_task_runs WHERE id = ${run.id} FOR UPDATE`;
    if (current?.status !== "paused") throw new ConflictError("The run is not paused");
    await ctx.tx.subagentTaskRun.update({
      where: { id: run.id },
      data: { pauseRequestedAt: null, pausedById: null, stopReason: null },
    });
    await requeue(ctx.tx, run, ctx.actor.id);
    return { status: 200, location, notice: "Resumed: the run continues where it paused" };
  },
});
