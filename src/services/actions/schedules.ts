// The owner's schedules for an agent: cron + time zone + task. The page that lists them
// (pages/schedules.ts) resolves the agent through the owner check, so every action here
// acts on an agent the actor owns; a schedule id is looked up under that agent only.
import { z } from "zod";
import { NotFoundError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { checkSchedule } from "../agents/automations/schedules.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import {
  type ActionCtx,
  type AgentScope,
  type Ctx,
  defineAction,
  type ScopeWith,
} from "../registry/types.ts";
import { idSchema, longText } from "../validation.ts";

const peopleOnly = (ctx: Ctx) => (ctx.actor.kind === "person" ? null : "only people configure agents");

const cron = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(100, "at most 100 characters")
  .meta({ label: "Cron expression", description: "minute hour day month weekday, e.g. 0 9 * * 1-5" });
const timeZone = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(64, "at most 64 characters")
  .meta({ label: "Time zone", description: "IANA name, e.g. Europe/Paris" });
const task = longText(4000, "what the agent should do each time");
const scheduleId = idSchema.meta({ label: "Schedule", pickedBeside: true, formerly: "schedule" });

const pagePath = (scope: ScopeWith<"agent">) => `/subagents/${scope.agent.handle}/schedules`;

/** The schedule, if it is one of this page's agent's; locked, so two edits of it apply one after the other. */
async function loadSchedule(ctx: ActionCtx, agent: AgentScope, id: string) {
  const rows = await ctx.tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM agent_schedules WHERE id = ${id} AND agent_id = ${agent.id} AND tenant_id = ${ctx.tenant.id}
    FOR UPDATE`;
  if (!rows.length) throw new NotFoundError(`No schedule ${id} of @${agent.handle}`);
  return ctx.tx.agentSchedule.findUniqueOrThrow({ where: { id } });
}

export const addSchedule = defineAction({
  name: "add_schedule",
  needs: ["agent"],
  description: "Add a schedule: a cron expression in a time zone, and a task",
  params: z.object({ cron, time_zone: timeZone.default("UTC"), task }),
  writes: true,
  audience: toAgentManagers("schedule"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const checked = checkSchedule(params.cron, params.time_zone);
    const id = newId();
    await ctx.tx.agentSchedule.create({
      data: {
        id,
        tenantId: ctx.tenant.id,
        agentId: agent.id,
        createdById: ctx.actor.id,
        cron: checked.cron,
        timeZone: checked.timeZone,
        task: params.task,
        nextFireAt: checked.nextFireAt,
      },
    });
    return { status: 201, location: `${pagePath(scope)}#${id}`, notice: "Schedule added" };
  },
});

export const updateSchedule = defineAction({
  name: "update_schedule",
  needs: ["agent"],
  description: "Change a schedule's cron expression, time zone or task",
  params: z.object({
    id: scheduleId,
    cron: cron.optional(),
    time_zone: timeZone.optional(),
    task: task.optional(),
  }),
  writes: true,
  audience: toAgentManagers("schedule"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const schedule = await loadSchedule(ctx, scope.agent, params.id);
    const checked = checkSchedule(params.cron ?? schedule.cron, params.time_zone ?? schedule.timeZone);
    await ctx.tx.agentSchedule.update({
      where: { id: schedule.id },
      data: {
        cron: checked.cron,
        timeZone: checked.timeZone,
        task: params.task ?? schedule.task,
        // A new rhythm starts from now; a paused schedule gets its slot when resumed.
        nextFireAt: schedule.enabled ? checked.nextFireAt : null,
      },
    });
    return { status: 200, location: `${pagePath(scope)}#${schedule.id}`, notice: "Schedule saved" };
  },
});

export const pauseSchedule = defineAction({
  name: "pause_schedule",
  needs: ["agent"],
  description: "Pause a schedule: it fires nothing until resumed",
  params: z.object({ id: scheduleId }),
  writes: true,
  audience: toAgentManagers("schedule"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const schedule = await loadSchedule(ctx, scope.agent, params.id);
    await ctx.tx.agentSchedule.update({
      where: { id: schedule.id },
      data: { enabled: false, nextFireAt: null },
    });
    return { status: 200, location: `${pagePath(scope)}#${schedule.id}`, notice: "Schedule paused" };
  },
});

export const resumeSchedule = defineAction({
  name: "resume_schedule",
  needs: ["agent"],
  description: "Resume a paused schedule from its next slot",
  params: z.object({ id: scheduleId }),
  writes: true,
  audience: toAgentManagers("schedule"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const schedule = await loadSchedule(ctx, scope.agent, params.id);
    // From now on: the slots it missed while paused are not made up.
    const { nextFireAt } = checkSchedule(schedule.cron, schedule.timeZone);
    await ctx.tx.agentSchedule.update({ where: { id: schedule.id }, data: { enabled: true, nextFireAt } });
    return { status: 200, location: `${pagePath(scope)}#${schedule.id}`, notice: "Schedule resumed" };
  },
});

export const removeSchedule = defineAction({
  name: "remove_schedule",
  needs: ["agent"],
  destructive: "The agent is no longer woken on this schedule.",
  description: "Remove a schedule (its past runs stay)",
  params: z.object({ id: scheduleId }),
  writes: true,
  audience: toAgentManagers("schedule"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const schedule = await loadSchedule(ctx, scope.agent, params.id);
    await ctx.tx.agentSchedule.delete({ where: { id: schedule.id } });
    return { status: 200, location: pagePath(scope), notice: "Schedule removed" };
  },
});
