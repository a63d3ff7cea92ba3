import type { AgentSchedule, SubagentTaskRun } from "../../generated/prisma/client.ts";
import { nextSlots, slotLabel } from "../agents/automations/schedules.ts";
import { loadAgent } from "../agents/core/ownership.ts";
import { code, link, mdEscape, quote } from "../registry/markdown.ts";
import { type Block, definePage, type PageDef } from "../registry/types.ts";
import { agentCrumbs, when } from "./format.ts";

type Listed = AgentSchedule & { lastRun: Pick<SubagentTaskRun, "id" | "status"> | null };

/** Schedules of an agent, oldest first, with their last run's status. */
export function listSchedules(
  db: Parameters<PageDef["resolve"]>[0]["db"],
  tenantId: string,
  agentId: string,
) {
  return db.agentSchedule.findMany({
    where: { tenantId, agentId },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    include: { lastRun: { select: { id: true, status: true } } },
  });
}

/** `Mon 30 Nov 2026 09:00 Europe/Paris (2026-11-30 08:00 UTC)`, or why there is none. */
export function nextFireText(schedule: AgentSchedule): string {
  if (!schedule.enabled) return "paused";
  if (!schedule.nextFireAt) return "never again";
  const due = schedule.nextFireAt.getTime() <= Date.now() ? " — due, fires at the next sweep" : "";
  return `${slotLabel(schedule.nextFireAt, schedule.timeZone)} (${when(schedule.nextFireAt)})${due}`;
}

export function lastRunText(handle: string, schedule: Listed): string {
  if (!schedule.lastRun || !schedule.lastFiredAt) return "none yet";
  return `${link(`Run ${schedule.lastRun.id}`, `/subagents/${handle}/runs/${schedule.lastRun.id}`)} (**${schedule.lastRun.status}**) for ${slotLabel(schedule.lastFiredAt, schedule.timeZone)}`;
}

/** One line per schedule, for the agent's own page. */
export function scheduleLine(handle: string, schedule: Listed): string {
  return `- ${link(`${schedule.cron} (${schedule.timeZone})`, `/subagents/${handle}/schedules#${schedule.id}`)} · next: ${nextFireText(schedule)} · last run: ${lastRunText(handle, schedule)}`;
}

function scheduleBlocks(handle: string, schedule: Listed): Block[] {
  const later =
    schedule.enabled && schedule.nextFireAt
      ? nextSlots(schedule.cron, schedule.timeZone, 2, schedule.nextFireAt)
      : [];
  const markdown = [
    `### ${code(schedule.cron)} in ${mdEscape(schedule.timeZone)}${schedule.enabled ? "" : " · **paused**"} {#${schedule.id}}`,
    "",
    `Schedule \`${schedule.id}\` · added ${when(schedule.createdAt)}`,
    "",
    `- **Next fire time:** ${nextFireText(schedule)}`,
    ...(later.length ? [`- **Then:** ${later.map((d) => slotLabel(d, schedule.timeZone)).join("; ")}`] : []),
    `- **Last run:** ${lastRunText(handle, schedule)}`,
    "",
    "Task:",
    "",
    quote(schedule.task),
  ].join("\n");
  const fixed = { id: schedule.id };
  return [
    // Its heading is the anchor a run's "what woke it" link lands on.
    { md: markdown },
    schedule.enabled
      ? { form: { action: "pause_schedule", fixed, label: "Pause" } }
      : { form: { action: "resume_schedule", fixed, label: "Resume" } },
    {
      form: {
        action: "update_schedule",
        fixed,
        label: "Edit",
        style: "folded",
        fields: ["cron", "time_zone", "task"],
        values: { cron: schedule.cron, time_zone: schedule.timeZone, task: schedule.task },
      },
    },
    { form: { action: "remove_schedule", fixed, label: "Remove" } },
  ];
}

export const schedulesPage = definePage({
  pattern: "/subagents/:handle/schedules",
  actions: ["add_schedule", "update_schedule", "pause_schedule", "resume_schedule", "remove_schedule"],
  // Its actions act on one schedule, picked by the buttons beside each (pickedBeside).
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope) {
    const agent = scope.agent;
    const schedules = await listSchedules(ctx.db, ctx.tenant.id, agent.id);
    return {
      title: `${agent.name}'s schedules`,
      breadcrumb: [...agentCrumbs(agent), { label: "Schedules" }],
      blocks: [
        {
          md: `Each schedule wakes ${mdEscape(agent.name)} with its task at the times its cron expression names, read in its time zone (daylight saving included). Five fields: minute hour day-of-month month day-of-week, e.g. \`0 9 * * 1-5\` is every weekday at 9:00. At most once a minute. Each slot starts one run; after an outage a schedule fires once, not once per missed slot.${agent.archivedAt ? "\n\n**This agent is archived: its schedules do not fire.**" : ""}${agent.pausedAt ? "\n\n**This agent is paused: each slot is recorded as a skipped run.**" : ""}`,
        },
        ...(schedules.length
          ? schedules.flatMap((s) => scheduleBlocks(agent.handle, s))
          : [{ md: "_No schedules yet: add one to wake this agent on its own._" }]),
      ],
    };
  },
});
