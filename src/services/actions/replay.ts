// "Re-run from here" on a finished run's step page: a new run with the original's steps up
// to that one copied, then live from it (agents/triggers/replay.ts), under the rules the
// original ran under or the agent's as they are now. Only the agent's
// managers, through the one owner check; the step is the page's own, read by its loader
// within the tenant, so the action takes no id at all.
import { z } from "zod";
import { mayManage } from "../agents/core/ownership.ts";
import { replayRun as queueReplay, REPLAY_RULES, REPLAYABLE } from "../agents/triggers/replay.ts";
import { assertInCatalogue } from "../money/catalogue.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { optionalText } from "../validation.ts";

export const replayRun = defineAction({
  name: "replay_run",
  needs: ["taskRun", "agent", "step"],
  description:
    "Re-run from here: a new run that remembers the steps before this one (copied, not done again) and goes on live from this step",
  params: z.object({
    model: optionalText(200, "another model to re-run it with (empty: the run's own)"),
    rules: z
      .enum(REPLAY_RULES)
      .default("original")
      .meta({
        label: "Rules",
        optionLabels: {
          original: "As the original ran under (what the agent may do, what needs approval, its rules)",
          current: "The agent's as they are now",
        },
      }),
  }),
  writes: true,
  audience: toAgentManagers("replay"),
  available: (ctx, scope) =>
    ctx.actor.kind !== "person"
      ? "only the agent's owner can do this"
      : !REPLAYABLE.includes(scope.taskRun?.status ?? "")
        ? "only a finished run can be re-run from a step"
        : scope.agent && !mayManage(ctx.actor, scope.agent)
          ? "only the agent's managers re-run its runs"
          : null,
  async execute(ctx, params, scope) {
    const run = scope.taskRun;
    const { agent } = scope;
    const { step } = scope;
    const model = params.model?.trim() || undefined;
    // Only the workspace's models, as for the agent's own (money/catalogue.ts).
    if (model) await assertInCatalogue(ctx.tx, ctx.tenant, { name: "model", label: "Model" }, [model]);
    const queued = await queueReplay(ctx.tx, ctx.tenant, agent, run, step, {
      actorId: ctx.actor.id,
      model,
      rules: params.rules,
    });
    return {
      status: 201,
      location: `/subagents/${agent.handle}/runs/${queued.id}`,
      notice: `Re-running from step ${step.number} as run ${queued.id}`,
    };
  },
});
