import { plural } from "../../lib/plural.ts";
import { updateSubagent } from "../actions/subagents.ts";
import { keysOf, loadAgent, mayManage, visibleTo, withOwnerStudio } from "../agents/core/ownership.ts";
import { agentConfig } from "../agents/core/settings.ts";
import { capabilityLabel } from "../agents/policy/capabilities.ts";
import { transferDisclosure } from "../agents/policy/transfer-disclosure.ts";
import { modelCatalogue } from "../money/catalogue.ts";
import { spentThisMonth, toMicros } from "../money/ledger.ts";
import { usd } from "../money/pricing.ts";
import { code, link, mdEscape, quote } from "../registry/markdown.ts";
import type { Block, Ctx, PageDef } from "../registry/types.ts";
import { home, pager, paging, subagentsCrumb, when } from "./format.ts";
import { modelChoices } from "./model-choices.ts";
import { runLine } from "./runs.ts";
import { listSchedules, scheduleLine } from "./schedules.ts";

export const subagentsPage: PageDef = {
  pattern: "/subagents",
  actions: ["create_subagent"],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const pg = paging(query);
    const where = { tenantId: ctx.tenant.id, kind: "subagent" as const, parentId: ctx.actor.id };
    const [agents, total, studioAgents, adminOf, catalogue] = await Promise.all([
      ctx.db.user.findMany({
        where,
        orderBy: [{ archivedAt: { sort: "asc", nulls: "first" } }, { name: "asc" }],
        skip: pg.skip,
        take: pg.take,
        include: { _count: { select: { agentRuns: true, memberships: true } } },
      }),
      ctx.db.user.count({ where }),
      ctx.db.user.findMany({
        where: { tenantId: ctx.tenant.id, ...visibleTo(ctx.actor.id), ownerStudioId: { not: null } },
        orderBy: [{ archivedAt: { sort: "asc", nulls: "first" } }, { name: "asc" }],
        include: { ...withOwnerStudio(ctx.actor.id), _count: { select: { agentRuns: true } } },
      }),
      ctx.db.studio.findMany({
        where: { tenantId: ctx.tenant.id, members: { some: { userId: ctx.actor.id, role: "admin" } } },
        orderBy: { name: "asc" },
        select: { handle: true, name: true },
      }),
      ctx.db.agentApiKey
        .findMany({ where: { tenantId: ctx.tenant.id, ownerId: ctx.actor.id }, select: { id: true } })
        .then((mine) => modelCatalogue(ctx.db, ctx.tenant, new Set(mine.map((k) => k.id)))),
    ]);
    const model = (a: { agentConfig: unknown }) => {
      const m = agentConfig({ agentConfig: a.agentConfig as object }).model;
      return `model ${m ? `\`${mdEscape(m)}\`` : "default"}`;
    };
    const lines = agents.map(
      (a) =>
        `- ${link(a.name, `/subagents/${a.handle}`)} (\`@${a.handle}\`)${a.archivedAt ? " · **archived**" : ""} · ${plural(a._count.memberships, "studio")} · ${plural(a._count.agentRuns, "run")} · ${model(a)}`,
    );
    const studioLines = studioAgents.map((a) => {
      const studio = a.ownerStudio!;
      const manages = mayManage(ctx.actor, a);
      const name =
        manages || agentConfig(a).members_may_run
          ? link(a.name, `/subagents/${a.handle}${manages ? "" : "/run"}`)
          : mdEscape(a.name);
      return `- ${name} (\`@${a.handle}\`) of ${link(studio.name, `/studios/${studio.handle}`)}${a.archivedAt ? " · **archived**" : ""} · ${plural(a._count.agentRuns, "run")} · ${model(a)} · ${manages ? "you manage it with the studio's other admins" : "its admins manage it"}`;
    });
    return {
      title: "Subagents",
      breadcrumb: [home, { label: "Subagents" }],
      blocks: [
        {
          md: "Subagents are AI users. They act through the same pages and actions as you: when @mentioned, when someone replies to them, or when they are given a task. An agent is yours, or a studio's: all of a studio's admins manage its agents, which act only in that studio and stay when their creator leaves.",
        },
        { md: `## Your agents\n\n${lines.join("\n") || "_You have no subagents yet._"}` },
        { md: pager("/subagents", pg, total) },
        {
          md: `## Your studios' agents\n\n${studioLines.join("\n") || "_None of your studios owns an agent yet._"}`,
        },
        ...(ctx.actor.tenantAdmin
          ? [
              {
                md: `As a workspace admin you can keep actions for people: ${link("workspace agent settings", "/settings/agents")}.`,
              },
            ]
          : []),
        {
          md: "## Create an agent\n\nIt starts able to read and comment. Grant more under **Capabilities** on its page once it exists.",
        },
        {
          form: {
            action: "create_subagent",
            fixed: {},
            label: "Create",
            style: "block",
            values: { studio: "", model: "" },
            choices: {
              model: modelChoices(catalogue, [], "Workspace default"),
              studio: [
                { value: "", label: "You" },
                ...adminOf.map((s) => ({ value: s.handle, label: `${s.name} (its admins)` })),
              ],
            },
          },
        },
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
    "transfer_subagent",
    "set_member_runs",
    "archive_subagent",
    "unarchive_subagent",
  ],
  resolve: async (ctx, p) => ({ agent: await loadAgent(ctx, p.handle!) }),
  async render(ctx, scope) {
    const a = scope.agent!;
    const cfg = agentConfig(a);
    const [studios, runs, keys, spent, watching, webhooks, schedules, mine, catalogue] = await Promise.all([
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
        where: { tenantId: ctx.tenant.id, ...keysOf(a), revokedAt: null },
        orderBy: { createdAt: "asc" },
      }),
      spentThisMonth(ctx.db, a.id),
      ctx.db.agentSubscription.groupBy({ by: ["enabled"], where: { agentId: a.id }, _count: true }),
      ctx.db.agentWebhook.findMany({
        where: { tenantId: ctx.tenant.id, agentId: a.id },
        select: { enabled: true },
      }),
      listSchedules(ctx.db, ctx.tenant.id, a.id),
      // The studios it could join: the actor's own (a studio's agent joins none).
      a.ownerStudio
        ? []
        : ctx.db.studio.findMany({
            where: { tenantId: ctx.tenant.id, members: { some: { userId: ctx.actor.id } } },
            orderBy: { name: "asc" },
            select: {
              handle: true,
              name: true,
              id: true,
              members: { where: { userId: ctx.actor.id }, select: { role: true } },
            },
          }),
      // Its managers see its own keys' models under the keys' names; other keys' are anonymous.
      ctx.db.agentApiKey
        .findMany({ where: { tenantId: ctx.tenant.id, ...keysOf(a) }, select: { id: true } })
        .then((own) => modelCatalogue(ctx.db, ctx.tenant, new Set(own.map((k) => k.id)))),
    ]);
    const watched = (on: boolean) => watching.find((w) => w.enabled === on)?._count ?? 0;
    const key = cfg.api_key_id ? keys.find((k) => k.id === cfg.api_key_id) : undefined;
    const keyLabel = cfg.api_key_id
      ? key
        ? `${a.ownerStudio ? "the studio's" : "your"} key “${mdEscape(key.label)}” (${code(`…${key.keyHint}`)})${key.authFailedAt ? " — **refused by the provider**" : ""}`
        : "**a revoked or deleted key: its runs fail until you pick another**"
      : "the workspace's shared endpoint";
    const base = `/subagents/${a.handle}`;
    const keysPage = a.ownerStudio
      ? `/studios/${a.ownerStudio.handle}/settings/api-keys`
      : `/u/${ctx.actor.handle}/settings/api-keys`;
    const owner = a.ownerStudio
      ? ` · owned by the studio ${link(a.ownerStudio.name, `/studios/${a.ownerStudio.handle}`)}: its admins manage it`
      : "";
    return {
      title: a.name,
      breadcrumb: [home, subagentsCrumb, { label: a.name }],
      blocks: [
        {
          md: `\`@${a.handle}\`${owner} · created ${when(a.createdAt)}${a.archivedAt ? ` · **archived** ${when(a.archivedAt)}: it is not triggered and cannot run` : ""}${a.pausedAt ? ` · **paused** ${when(a.pausedAt)}${a.pausedReason ? ` (${mdEscape(a.pausedReason)})` : ""}: triggers are recorded as skipped` : ""}`,
        },
        {
          md: `${link("Run a task", `${base}/run`)} · ${link("All runs", `${base}/runs`)} · ${link("Capabilities, approvals and rules", `${base}/settings`)} · ${link("Memory", `${base}/memory`)} · ${link("Schedules", `${base}/schedules`)} · ${link("Actions to review", `${base}/pending`)} · ${link("Usage and cost", `${base}/usage`)}`,
        },
        {
          md: `Besides reading, it may: ${cfg.capabilities.map(capabilityLabel).join(", ").toLowerCase() || "nothing"}. A new agent starts able to read and comment; grant more under ${link("Capabilities", `${base}/settings`)}.`,
        },
        {
          md: [
            "## Configuration",
            "",
            `| setting | value |`,
            `|---|---|`,
            `| model | ${cfg.model ? `\`${mdEscape(cfg.model)}\`` : "workspace default"} |`,
            `| fallback models | ${cfg.fallback_models.map(code).join(", ") || "none"} |`,
            `| max steps per run | ${cfg.max_steps} |`,
            `| timeout per run | ${cfg.timeout_seconds} s |`,
            `| model calls paid by | ${keyLabel} |`,
            `| monthly cost limit | ${usd(toMicros(cfg.cost_limit_usd))} (${usd(spent)} spent this month) |`,
          ].join("\n"),
        },
        // The model is picked from the workspace's catalogue, grouped by where it comes from, priced.
        {
          form: {
            action: "update_subagent",
            fixed: {},
            label: "Save configuration",
            style: "block",
            values: updateSubagent.current!(scope),
            choices: { model: modelChoices(catalogue, [cfg.model ?? ""], "Workspace default") },
          },
        },
        {
          md: `## Who pays for its model calls\n\n${keys.length ? `One of ${a.ownerStudio ? "the studio's" : "your own"} provider keys (the calls go straight to that provider), or the workspace's shared endpoint.` : `${a.ownerStudio ? "The studio has" : "You have"} no keys of its own: it uses the workspace's shared endpoint. ${link("Add a key", keysPage)} to pay with ${a.ownerStudio ? "the studio's" : "your own"} provider account.`}`,
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
                ...keys.map((k) => ({
                  value: k.id,
                  label: `${k.label} (…${k.keyHint})${k.authFailedAt ? " — refused by the provider" : ""}`,
                })),
              ],
            },
          },
        },
        {
          md: `### Identity prompt\n\n${cfg.identity_prompt ? quote(cfg.identity_prompt) : "_None: it acts as a general helpful assistant._"}`,
        },
        ...studioBlocks(a, cfg, studios, mine, await givingAway(ctx, a, mine)),
        {
          md: [
            "## What wakes it",
            "",
            "Mentions and replies in its studios, the run form, and:",
            "",
            `### Subscriptions\n\n${link(plural(watched(true), "subscription"), `${base}/subscriptions`)}${watched(false) ? ` (${watched(false)} paused)` : ""}: have it watch a studio, note, decision or commitment from that page.`,
            "",
            `### Schedules\n\n${schedules.length ? schedules.map((s) => scheduleLine(a.handle, s)).join("\n") : "_None yet._"}\n\n${link("Manage schedules", `${base}/schedules`)}`,
            "",
            `### Webhooks\n\n${webhooks.length ? `${plural(webhooks.length, "webhook")} (${webhooks.filter((h) => h.enabled).length} enabled): other systems start its runs with signed deliveries.` : "None: other systems can start its runs with signed deliveries once you create one."} ${link("Manage its webhooks", `${base}/webhooks`)}.`,
          ].join("\n"),
        },
        {
          md: `## Recent runs\n\n${runs.length ? runs.map((r) => runLine(a.handle, r)).join("\n") : "_No runs yet._"}`,
        },
      ],
    };
  },
};

/**
 * The agent's studios with a button to take it out of each, and the forms to add it to one of
 * the actor's studios or give it to one they administer (a studio's own agent stays put).
 */
/** For each studio the actor could give the agent to, what its admins would read that they cannot now. */
async function givingAway(
  ctx: Ctx,
  a: { id: string; handle: string; ownerStudio: unknown },
  mine: { id: string; name: string; members: { role: string }[] }[],
): Promise<string[]> {
  if (a.ownerStudio) return [];
  const targets = mine.filter((s) => s.members[0]?.role === "admin");
  const said = await Promise.all(targets.map((s) => transferDisclosure(ctx.db, ctx.tenant.id, a, s.id)));
  return targets.flatMap((s, i) => (said[i] ? [`To ${mdEscape(s.name)}: ${mdEscape(said[i]!)}`] : []));
}

function studioBlocks(
  a: { ownerStudio: unknown },
  cfg: ReturnType<typeof agentConfig>,
  studios: { studioId: string; studio: { name: string; handle: string } }[],
  mine: { id: string; handle: string; name: string; members: { role: string }[] }[],
  disclosures: string[],
): Block[] {
  const choices = (list: typeof mine) => ({ studio: list.map((s) => ({ value: s.handle, label: s.name })) });
  const joinable = mine.filter((s) => !studios.some((m) => m.studioId === s.id));
  const adminOf = mine.filter((s) => s.members[0]?.role === "admin");
  const blocks: Block[] = [
    {
      md: `## Studios\n\n${a.ownerStudio ? `It acts only in its own studio, as a member. ${cfg.members_may_run ? "Every member of the studio may give it tasks." : "Only the studio's admins give it tasks."}` : studios.length ? "" : "_Not in any studio yet: add it to one so it can be mentioned there._"}`,
    },
  ];
  for (const m of studios) {
    blocks.push({ md: `- ${link(m.studio.name, `/studios/${m.studio.handle}`)} (\`${m.studio.handle}\`)` });
    if (!a.ownerStudio)
      blocks.push({
        form: {
          action: "remove_from_studio",
          fixed: { studio: m.studio.handle },
          label: `Take out of ${m.studio.name}`,
        },
      });
  }
  if (joinable.length)
    blocks.push({
      form: {
        action: "add_to_studio",
        fixed: {},
        label: "Add to studio",
        style: "block",
        choices: choices(joinable),
      },
    });
  if (adminOf.length)
    blocks.push(
      {
        md: `### Give it to a studio${disclosures.length ? `\n\nA transfer is a decision to disclose: ${disclosures.join(" ")} Tick **Clear its memory first** to give it without its memory.` : ""}`,
      },
      {
        form: {
          action: "transfer_subagent",
          fixed: {},
          label: "Give it to the studio",
          style: "block",
          choices: choices(adminOf),
        },
      },
    );
  if (a.ownerStudio)
    blocks.push({
      form: {
        action: "set_member_runs",
        fixed: {},
        label: "Save",
        style: "block",
        values: { members_may_run: cfg.members_may_run },
      },
    });
  return blocks;
}
