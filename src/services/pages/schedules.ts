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
export function nextFireText(s: AgentSchedule): string {
  if (!s.enabled) return "paused";
  if (!s.nextFireAt) return "never again";
  const due = s.nextFireAt.getTime() <= Date.now() ? " — due, fires at the next sweep" : "";
  return `${slotLabel(s.nextFireAt, s.timeZone)} (${when(s.nextFireAt)})${due}`;
}

export function lastRunText(handle: string, s: Listed): string {
  if (!s.lastRun || !s.lastFiredAt) return "none yet";
  return `${link(`Run ${s.lastRun.id}`, `/subagents/${handle}/runs/${s.lastRun.id}`)} (**${s.lastRun.status}**) for ${slotLabel(s.lastFiredAt, s.timeZone)}`;
}

/** One line per schedule, for the agent's own page. */
export function scheduleLine(handle: string, s: Listed): string {
  return `- ${link(`${s.cron} (${s.timeZone})`, `/subagents/${handle}/schedules#${s.id}`)} · next: ${nextFireText(s)} · last run: ${lastRunText(handle, s)}`;
}

function scheduleBlocks(handle: string, s: Listed): Block[] {
  const later = s.enabled && s.nextFireAt ? nextSlots(s.cron, s.timeZone, 2, s.nextFireAt) : [];
  const md = [
    `### ${code(s.cron)} in ${mdEscape(s.timeZone)}${s.enabled ? "" : " · **paused**"} {#${s.id}}`,
    "",
    `Schedule \`${s.id}\` · added ${when(s.createdAt)}`,
    "",
    `- **Next fire time:** ${nextFireText(s)}`,
    ...(later.length ? [`- **Then:** ${later.map((d) => slotLabel(d, s.timeZone)).join("; ")}`] : []),
    `- **Last run:** ${lastRunText(handle, s)}`,
    "",
    "Task:",
    "",
    quote(s.task),
  ].join("\n");
  const fixed = { schedule: s.id };
  return [
    // Its heading is the anchor a run's "what woke it" link lands on.
    { md },
    s.enabled
      ? { form: { action: "pause_schedule", fixed, label: "Pause" } }
      : { form: { action: "resume_schedule", fixed, label: "Resume" } },
    {
      form: {
        action: "update_schedule",
        fixed,
        label: "Edit",
        style: "folded",
        fields: ["cron", "time_zone", "task"],
        values: { cron: s.cron, time_zone: s.timeZone, task: s.task },
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
    const a = scope.agent;
    const schedules = await listSchedules(ctx.db, ctx.tenant.id, a.id);
    return {
      title: `${a.name}'s schedules`,
      breadcrumb: [...agentCrumbs(a), { label: "Schedules" }],
      blocks: [
        {
          md: `Each schedule wakes ${mdEscape(a.name)} with its task at the times its cron expression names, read in its time zone (daylight saving included). Five fields: minute hour day-of-month month day-of-week, e.g. \`0 9 * * 1-5\` is every weekday at 9:00. At most once a minute. Each slot starts one run; after an outage a schedule fires once, not once per missed slot.${a.archivedAt ? "\n\n**This agent is archived: its schedules do not fire.**" : ""}${a.pausedAt ? "\n\n**This agent is paused: each slot is recorded as a skipped run.**" : ""}`,
        },
        ...(schedules.length
          ? schedules.flatMap((s) => scheduleBlocks(a.handle, s))
          : [{ md: "_No schedules yet: add one to wake this agent on its own._" }]),
      ],
    };
  },
});
