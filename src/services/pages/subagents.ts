import { loadOwnedAgent, managedAgentsWhere } from "../access.ts";
import { agentConfig } from "../agents/settings.ts";
import { spentThisMonth, toMicros } from "../money/ledger.ts";
import { usd } from "../money/pricing.ts";
import { code, link, mdEscape, quote } from "../registry/markdown.ts";
import type { Crumb, PageDef } from "../registry/types.ts";
import { home, pager, paging, when } from "./format.ts";
import { runLine } from "./runs.ts";
import { listSchedules, scheduleLine } from "./schedules.ts";

export const subagentsCrumb: Crumb = { label: "Subagents", path: "/subagents" };

export function agentCrumbs(agent: { handle: string; name: string }): Crumb[] {
  return [home, subagentsCrumb, { label: agent.name, path: `/subagents/${agent.handle}` }];
}

export const subagentsPage: PageDef = {
  pattern: "/subagents",
  actions: ["create_subagent"],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const pg = paging(query);
    const where = managedAgentsWhere(ctx);
    const [agents, total] = await Promise.all([
      ctx.db.user.findMany({
        where,
        orderBy: [{ archivedAt: { sort: "asc", nulls: "first" } }, { name: "asc" }],
        skip: pg.skip,
        take: pg.take,
        include: { _count: { select: { agentRuns: true, memberships: true } } },
      }),
      ctx.db.user.count({ where }),
    ]);
    const lines = agents.map((a) => {
      const cfg = agentConfig(a);
      return `- ${link(a.name, `/subagents/${a.handle}`)} (\`@${a.handle}\`)${a.archivedAt ? " · **archived**" : ""} · ${a._count.memberships} studio${a._count.memberships === 1 ? "" : "s"} · ${a._count.agentRuns} runs · model ${cfg.model ? `\`${cfg.model}\`` : "default"}`;
    });
    return {
      title: "Your subagents",
      breadcrumb: [home, { label: "Subagents" }],
      blocks: [
        {
          md: "Subagents are AI users you own. They act through the same pages and actions as you, when @mentioned, when someone replies to them, or when you give them a task.",
        },
        { md: lines.length ? lines.join("\n") : "_You have no subagents yet._" },
        { md: pager("/subagents", pg, total) },
      ],
    };
  },
};

export const subagentPage: PageDef = {
  pattern: "/subagents/:handle",
  actions: [
    "update_subagent",
    "set_agent_api_key",
    "add_to_studio",
    "remove_from_studio",
    "pause_subagent",
    "resume_subagent",
    "archive_subagent",
    "unarchive_subagent",
  ],
  resolve: async (ctx, p) => ({ agent: await loadOwnedAgent(ctx, p.handle!) }),
  async render(ctx, scope) {
    const a = scope.agent!;
    const cfg = agentConfig(a);
    const [studios, runs, keys, spent, watching, webhooks, schedules] = await Promise.all([
      ctx.db.studioMember.findMany({
        where: { userId: a.id },
        include: { studio: true },
        orderBy: { createdAt: "asc" },
      }),
      ctx.db.subagentTaskRun.findMany({
        where: { agentId: a.id },
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        take: 5,
      }),
      ctx.db.agentApiKey.findMany({
        where: { tenantId: ctx.tenant.id, ownerId: ctx.actor.id, revokedAt: null },
        orderBy: { createdAt: "asc" },
      }),
      spentThisMonth(ctx.db, a.id),
      ctx.db.agentSubscription.groupBy({ by: ["enabled"], where: { agentId: a.id }, _count: true }),
      ctx.db.agentWebhook.findMany({
        where: { tenantId: ctx.tenant.id, agentId: a.id },
        select: { enabled: true },
      }),
      listSchedules(ctx.db, ctx.tenant.id, a.id),
    ]);
    const watched = (on: boolean) => watching.find((w) => w.enabled === on)?._count ?? 0;
    const key = cfg.api_key_id ? keys.find((k) => k.id === cfg.api_key_id) : undefined;
    const keyLabel = cfg.api_key_id
      ? key
        ? `your key “${mdEscape(key.label)}” (${code(`…${key.keyHint}`)})${key.authFailedAt ? " — **refused by the provider**" : ""}`
        : "**a revoked or deleted key: its runs fail until you pick another**"
      : "the workspace's shared endpoint";
    const base = `/subagents/${a.handle}`;
    return {
      title: a.name,
      breadcrumb: [home, subagentsCrumb, { label: a.name }],
      blocks: [
        {
          md: `\`@${a.handle}\` · created ${when(a.createdAt)}${a.archivedAt ? ` · **archived** ${when(a.archivedAt)}: it is not triggered and cannot run` : ""}${a.pausedAt ? ` · **paused** ${when(a.pausedAt)}${a.pausedReason ? ` (${mdEscape(a.pausedReason)})` : ""}: triggers are recorded as skipped` : ""}`,
        },
        {
          md: `${link("Run a task", `${base}/run`)} · ${link("All runs", `${base}/runs`)} · ${link("Capabilities, approvals and rules", `${base}/settings`)} · ${link("Schedules", `${base}/schedules`)} · ${link("Actions to review", `${base}/pending`)} · ${link("Usage and cost", `${base}/usage`)}`,
        },
        {
          md: [
            "## Configuration",
            "",
            `| setting | value |`,
            `|---|---|`,
            `| model | ${cfg.model ? `\`${mdEscape(cfg.model)}\`` : "workspace default"} |`,
            `| max steps per run | ${cfg.max_steps} |`,
            `| timeout per run | ${cfg.timeout_seconds} s |`,
            `| model calls paid by | ${keyLabel} |`,
            `| monthly cost limit | ${usd(toMicros(cfg.cost_limit_usd))} (${usd(spent)} spent this month) |`,
          ].join("\n"),
        },
        {
          md: `## Who pays for its model calls\n\n${keys.length ? "One of your own provider keys (the calls go straight to that provider), or the workspace's shared endpoint." : `You have no keys of your own: it uses the workspace's shared endpoint. ${link("Add a key", `/u/${ctx.actor.handle}/settings/api-keys`)} to pay with your own provider account.`}`,
        },
        {
          form: {
            action: "set_agent_api_key",
            fixed: {},
            label: "Save",
            style: "block",
            values: { api_key: key?.id ?? "shared" },
            choices: {
              api_key: [
                { value: "shared", label: "Shared workspace endpoint" },
                ...keys.map((k) => ({ value: k.id, label: `${k.label} (…${k.keyHint})` })),
              ],
            },
          },
        },
        {
          md: `### Identity prompt\n\n${cfg.identity_prompt ? quote(cfg.identity_prompt) : "_None: it acts as a general helpful assistant._"}`,
        },
        {
          md: `## Studios\n\n${studios.length ? studios.map((m) => `- ${link(m.studio.name, `/studios/${m.studio.handle}`)} (\`${m.studio.handle}\`)`).join("\n") : "_Not in any studio yet: add it to one so it can be mentioned there._"}`,
        },
        {
          md: [
            "## What wakes it",
            "",
            "Mentions and replies in its studios, the run form, and:",
            "",
            `### Subscriptions\n\n${link(`${watched(true)} subscription${watched(true) === 1 ? "" : "s"}`, `${base}/subscriptions`)}${watched(false) ? ` (${watched(false)} paused)` : ""}: have it watch a studio, note, decision or commitment from that page.`,
            "",
            `### Schedules\n\n${schedules.length ? schedules.map((s) => scheduleLine(a.handle, s)).join("\n") : "_None yet._"}\n\n${link("Manage schedules", `${base}/schedules`)}`,
            "",
            `### Webhooks\n\n${webhooks.length ? `${webhooks.length} webhook${webhooks.length === 1 ? "" : "s"} (${webhooks.filter((h) => h.enabled).length} enabled): other systems start its runs with signed deliveries.` : "None: other systems can start its runs with signed deliveries once you create one."} ${link("Manage its webhooks", `${base}/webhooks`)}.`,
          ].join("\n"),
        },
        {
          md: `## Recent runs\n\n${runs.length ? runs.map((r) => runLine(a.handle, r)).join("\n") : "_No runs yet._"}`,
        },
      ],
    };
  },
};
