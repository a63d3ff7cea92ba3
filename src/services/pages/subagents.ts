import { plural } from "../../lib/plural.ts";
import { updateSubagent } from "../actions/subagents.ts";
import {
  boundMemberships,
  keysOf,
  loadAgent,
  mayManage,
  visibleTo,
  withOwnerStudio,
} from "../agents/core/ownership.ts";
import { agentConfig } from "../agents/core/settings.ts";
import { latestVersion } from "../agents/core/versions.ts";
import { capabilityLabel } from "../agents/policy/capabilities.ts";
import { transferDisclosure } from "../agents/policy/transfer-disclosure.ts";
import { modelCatalogue } from "../money/catalogue.ts";
import { spentThisMonth, toMicros } from "../money/ledger.ts";
import { usd } from "../money/pricing.ts";
import { code, link, mdEscape, quote } from "../registry/markdown.ts";
import { type AgentScope, type Block, definePage, type PageCtx, type PageView } from "../registry/types.ts";
import { testBeforeSaving } from "./agent-experiments.ts";
import { home, type Paging, pager, paging, studioName, subagentsCrumb, when } from "./format.ts";
import { modelChoices } from "./model-choices.ts";
import { runLine } from "./runs.ts";
import { listSchedules, scheduleLine } from "./schedules.ts";

export const subagentsPage = definePage({
  pattern: "/subagents",
  actions: ["create_subagent"],
  resolve: async () => ({}),
  render: async (ctx, _scope, query) => subagentsView(await loadSubagents(ctx, paging(query))),
});

/** What /subagents shows: the actor's own agents (a page of them), their studios' agents, and where they may create one. */
async function loadSubagents(ctx: PageCtx, paged: Paging) {
  const where = { tenantId: ctx.tenant.id, kind: "subagent" as const, parentId: ctx.actor.id };
  const [agents, total, studioAgents, adminOf, catalogue] = await Promise.all([
    ctx.db.user.findMany({
      where,
      orderBy: [{ archivedAt: { sort: "asc", nulls: "first" } }, { name: "asc" }],
      skip: paged.skip,
      take: paged.take,
      include: { _count: { select: { agentRuns: true, memberships: true } } },
    }),
    ctx.db.user.count({ where }),
    ctx.db.user.findMany({
      where: { tenantId: ctx.tenant.id, ...visibleTo(ctx.actor), ownerStudioId: { not: null } },
      orderBy: [{ archivedAt: { sort: "asc", nulls: "first" } }, { name: "asc" }],
      include: { ...withOwnerStudio(ctx.actor), _count: { select: { agentRuns: true } } },
    }),
    ctx.db.studio.findMany({
      where: {
        tenantId: ctx.tenant.id,
        members: { some: { userId: ctx.actor.id, role: "admin", ...boundMemberships(ctx.actor) } },
      },
      orderBy: { name: "asc" },
      select: { handle: true, name: true },
    }),
    ctx.db.agentApiKey
      .findMany({ where: { tenantId: ctx.tenant.id, ownerId: ctx.actor.id }, select: { id: true } })
      .then((mine) => modelCatalogue(ctx.db, ctx.tenant, new Set(mine.map((k) => k.id)))),
  ]);
  const studios = studioAgents.map((agent) => ({ ...agent, manages: mayManage(ctx.actor, agent) }));
  return {
    paged,
    agents,
    total,
    studioAgents: studios,
    adminOf,
    catalogue,
    tenantAdmin: ctx.actor.tenantAdmin,
  };
}

type SubagentsData = Awaited<ReturnType<typeof loadSubagents>>;

/** "model `gpt-5`", or "model default" when it uses the workspace's. */
function modelWord(agent: { agentConfig: unknown }): string {
  const model = agentConfig({ agentConfig: agent.agentConfig as object }).model;
  return `model ${model ? `\`${mdEscape(model)}\`` : "default"}`;
}

const archivedMark = (agent: { archivedAt: Date | null }) => (agent.archivedAt ? " · **archived**" : "");

function ownAgentLine(agent: SubagentsData["agents"][number]): string {
  const counts = `${plural(agent._count.memberships, "studio")} · ${plural(agent._count.agentRuns, "run")}`;
  return `- ${link(agent.name, `/subagents/${agent.handle}`)} (\`@${agent.handle}\`)${archivedMark(agent)} · ${counts} · ${modelWord(agent)}`;
}

/**
 * A studio's agent: linked to its page for its managers; for its other members to its profile
 * (what it does, how to ask it), never to a page of its managers' that would answer 403, and to
 * its run form when members may run it.
 */
function studioAgentLine(agent: SubagentsData["studioAgents"][number]): string {
  const studio = agent.ownerStudio;
  const runForm =
    !agent.manages && agentConfig(agent).members_may_run
      ? ` · ${link("its run form", `/subagents/${agent.handle}/run`)}`
      : "";
  const name = `${link(agent.name, agent.manages ? `/subagents/${agent.handle}` : `/u/${agent.handle}`)}${runForm}`;
  const managed = agent.manages ? "you manage it with the studio's other admins" : "its admins manage it";
  const studioLink = studio ? link(studio.name, `/studios/${studio.handle}`) : "";
  return `- ${name} (\`@${agent.handle}\`) of ${studioLink}${archivedMark(agent)} · ${plural(agent._count.agentRuns, "run")} · ${modelWord(agent)} · ${managed}`;
}

function subagentsView(data: SubagentsData): PageView {
  const lines = data.agents.map(ownAgentLine).join("\n");
  const studioLines = data.studioAgents.map(studioAgentLine).join("\n");
  const adminNote = {
    md: `As a workspace admin you can keep actions for people: ${link("workspace agent settings", "/settings/agents")}.`,
  };
  return {
    title: "Subagents",
    breadcrumb: [home, { label: "Subagents" }],
    blocks: [
      {
        md: "Subagents are AI users. They act through the same pages and actions as you: when @mentioned, when someone replies to them, or when they are given a task. An agent is yours, or a studio's: all of a studio's admins manage its agents, which act only in that studio and stay when their creator leaves.",
      },
      { md: `## Your agents\n\n${lines || "_You have no subagents yet._"}` },
      { md: pager("/subagents", data.paged, data.total) },
      { md: `## Your studios' agents\n\n${studioLines || "_None of your studios owns an agent yet._"}` },
      ...(data.tenantAdmin ? [adminNote] : []),
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
            model: modelChoices(data.catalogue, [], "Workspace default"),
            studio: [
              { value: "", label: "You" },
              ...data.adminOf.map((studio) => ({
                value: studio.handle,
                label: `${studioName(studio)}: its admins`,
              })),
            ],
          },
        },
      },
    ],
  };
}

export const subagentPage = definePage({
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
    "start_experiment",
  ],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  render: async (ctx, scope) => subagentView(await loadSubagent(ctx, scope)),
});

/** Everything an agent's page shows: its studios, recent runs, keys, spending, what wakes it. */
async function loadSubagent(ctx: PageCtx, scope: { agent: AgentScope }) {
  const agent = scope.agent;
  const [studios, runs, keys, spent, watching, webhooks, schedules, mine, catalogue, version, tryChange] =
    await Promise.all([
      ctx.db.studioMember.findMany({
        where: { userId: agent.id },
        include: { studio: true },
        orderBy: { createdAt: "asc" },
      }),
      ctx.db.subagentTaskRun.findMany({
        where: { agentId: agent.id },
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        take: 5,
      }),
      ctx.db.agentApiKey.findMany({
        where: { tenantId: ctx.tenant.id, ...keysOf(agent), revokedAt: null },
        orderBy: { createdAt: "asc" },
      }),
      spentThisMonth(ctx.db, agent.id),
      ctx.db.agentSubscription.groupBy({ by: ["enabled"], where: { agentId: agent.id }, _count: true }),
      ctx.db.agentWebhook.findMany({
        where: { tenantId: ctx.tenant.id, agentId: agent.id },
        select: { enabled: true },
      }),
      listSchedules(ctx.db, ctx.tenant.id, agent.id),
      // The studios it could join: the actor's own (a studio's agent joins none).
      agent.ownerStudio
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
        .findMany({ where: { tenantId: ctx.tenant.id, ...keysOf(agent) }, select: { id: true } })
        .then((own) => modelCatalogue(ctx.db, ctx.tenant, new Set(own.map((k) => k.id)))),
      latestVersion(ctx.db, agent.id),
      testBeforeSaving(ctx, agent),
    ]);
  const config = agentConfig(agent);
  const disclosures = await givingAway(ctx, agent, mine);
  const watchedCount = (enabled: boolean) => watching.find((group) => group.enabled === enabled)?._count ?? 0;
  return {
    agent,
    config,
    studios,
    runs,
    keys,
    key: config.api_key_id ? keys.find((k) => k.id === config.api_key_id) : undefined,
    spent,
    subscriptions: { enabled: watchedCount(true), paused: watchedCount(false) },
    webhooks,
    schedules,
    mine,
    disclosures,
    catalogue,
    version,
    tryChange,
    actorHandle: ctx.actor.handle,
    current: updateSubagent.current?.(scope) ?? {},
  };
}

type SubagentData = Awaited<ReturnType<typeof loadSubagent>>;

/** "the studio's" or "your": whose keys and account an agent's calls go through. */
const whose = (agent: AgentScope, own = "your") => (agent.ownerStudio ? "the studio's" : own);

/** Who pays for the agent's calls, for its configuration table. */
function keyLabel({ agent, config, key }: SubagentData): string {
  if (!config.api_key_id) return "the workspace's shared endpoint";
  if (!key) return "**a revoked or deleted key: its runs fail until you pick another**";
  const refused = key.authFailedAt ? " — **refused by the provider**" : "";
  return `${whose(agent)} key “${mdEscape(key.label)}” (${code(`…${key.keyHint}`)})${refused}`;
}

/** Its handle, owner, age, and whether it is archived or paused. */
function statusLine(agent: AgentScope): string {
  const owner = agent.ownerStudio
    ? ` · owned by the studio ${link(agent.ownerStudio.name, `/studios/${agent.ownerStudio.handle}`)}: its admins manage it`
    : "";
  const archived = agent.archivedAt
    ? ` · **archived** ${when(agent.archivedAt)}: it is not triggered and cannot run`
    : "";
  const reason = agent.pausedReason ? ` (${mdEscape(agent.pausedReason)})` : "";
  const paused = agent.pausedAt
    ? ` · **paused** ${when(agent.pausedAt)}${reason}: triggers are recorded as skipped`
    : "";
  return `\`@${agent.handle}\`${owner} · created ${when(agent.createdAt)}${archived}${paused}`;
}

function linksLine(base: string): string {
  const links = [
    link("Run a task", `${base}/run`),
    link("All runs", `${base}/runs`),
    link("Capabilities, approvals and rules", `${base}/settings`),
    link("Memory", `${base}/memory`),
    link("Versions", `${base}/versions`),
    link("Test cases", `${base}/cases`),
    link("Experiments", `${base}/experiments`),
    link("Schedules", `${base}/schedules`),
    link("Actions to review", `${base}/pending`),
    link("Usage and cost", `${base}/usage`),
  ];
  return links.join(" · ");
}

function configurationTable(data: SubagentData): string {
  const { config } = data;
  return [
    "## Configuration",
    "",
    `| setting | value |`,
    `|---|---|`,
    `| model | ${config.model ? `\`${mdEscape(config.model)}\`` : "workspace default"} |`,
    `| fallback models | ${config.fallback_models.map(code).join(", ") || "none"} |`,
    `| max steps per run | ${config.max_steps} |`,
    `| timeout per run | ${config.timeout_seconds} s |`,
    `| model calls paid by | ${keyLabel(data)} |`,
    `| monthly cost limit | ${usd(toMicros(config.cost_limit_usd))} (${usd(data.spent)} spent this month) |`,
    `| settings | ${data.version ? link(`version ${data.version}`, `/subagents/${data.agent.handle}/versions/${data.version}`) : "no version yet"} (${link("all versions", `/subagents/${data.agent.handle}/versions`)}) |`,
  ].join("\n");
}

function whoPays({ agent, keys, actorHandle }: SubagentData): string {
  if (keys.length)
    return `One of ${whose(agent, "your own")} provider keys (the calls go straight to that provider), or the workspace's shared endpoint.`;
  const keysPage = agent.ownerStudio
    ? `/studios/${agent.ownerStudio.handle}/settings/api-keys`
    : `/u/${actorHandle}/settings/api-keys`;
  const has = agent.ownerStudio ? "The studio has" : "You have";
  return `${has} no keys of its own: it uses the workspace's shared endpoint. ${link("Add a key", keysPage)} to pay with ${whose(agent, "your own")} provider account.`;
}

function webhooksLine(webhooks: SubagentData["webhooks"]): string {
  if (!webhooks.length)
    return "None: other systems can start its runs with signed deliveries once you create one.";
  const enabled = webhooks.filter((hook) => hook.enabled).length;
  return `${plural(webhooks.length, "webhook")} (${enabled} enabled): other systems start its runs with signed deliveries.`;
}

function wakesBlock({ agent, subscriptions, schedules, webhooks }: SubagentData, base: string): string {
  const paused = subscriptions.paused ? ` (${subscriptions.paused} paused)` : "";
  const subscribed = link(plural(subscriptions.enabled, "subscription"), `${base}/subscriptions`);
  const scheduleLines = schedules.length
    ? schedules.map((schedule) => scheduleLine(agent.handle, schedule)).join("\n")
    : "_None yet._";
  return [
    "## What wakes it",
    "",
    "Mentions and replies in its studios, the run form, and:",
    "",
    `### Subscriptions\n\n${subscribed}${paused}: have it watch a studio, note, decision or commitment from that page.`,
    "",
    `### Schedules\n\n${scheduleLines}\n\n${link("Manage schedules", `${base}/schedules`)}`,
    "",
    `### Webhooks\n\n${webhooksLine(webhooks)} ${link("Manage its webhooks", `${base}/webhooks`)}.`,
  ].join("\n");
}

function subagentView(data: SubagentData): PageView {
  const { agent, config, keys, key, runs } = data;
  const base = `/subagents/${agent.handle}`;
  const capabilities = config.capabilities.map(capabilityLabel).join(", ").toLowerCase() || "nothing";
  const identity = config.identity_prompt
    ? quote(config.identity_prompt)
    : "_None: it acts as a general helpful assistant._";
  const recent = runs.length ? runs.map((run) => runLine(agent.handle, run)).join("\n") : "_No runs yet._";
  return {
    title: agent.name,
    breadcrumb: [home, subagentsCrumb, { label: agent.name }],
    blocks: [
      { md: statusLine(agent) },
      { md: linksLine(base) },
      {
        md: `Besides reading, it may: ${capabilities}. A new agent starts able to read and comment; grant more under ${link("Capabilities", `${base}/settings`)}.`,
      },
      { md: configurationTable(data) },
      // The model is picked from the workspace's catalogue, grouped by where it comes from, priced.
      {
        form: {
          action: "update_subagent",
          fixed: {},
          label: "Save configuration",
          style: "block",
          values: data.current,
          choices: { model: modelChoices(data.catalogue, [config.model ?? ""], "Workspace default") },
        },
      },
      ...data.tryChange,
      { md: `## Who pays for its model calls\n\n${whoPays(data)}` },
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
              ...keys.map((own) => ({
                value: own.id,
                label: `${own.label} (…${own.keyHint})${own.authFailedAt ? " — refused by the provider" : ""}`,
              })),
            ],
          },
        },
      },
      { md: `### Identity prompt\n\n${identity}` },
      ...studioBlocks(agent, config, data.studios, data.mine, data.disclosures),
      { md: wakesBlock(data, base) },
      { md: `## Recent runs\n\n${recent}` },
    ],
  };
}

/** For each studio the actor could give the agent to, what its admins would read that they cannot now. */
async function givingAway(
  ctx: PageCtx,
  agent: { id: string; handle: string; ownerStudio: unknown },
  mine: { id: string; name: string; members: { role: string }[] }[],
): Promise<string[]> {
  if (agent.ownerStudio) return [];
  const targets = mine.filter((s) => s.members[0]?.role === "admin");
  const said = await Promise.all(targets.map((s) => transferDisclosure(ctx.db, ctx.tenant.id, agent, s.id)));
  return targets.flatMap((s, i) => (said[i] ? [`To ${mdEscape(s.name)}: ${mdEscape(said[i]!)}`] : []));
}

/**
 * The agent's studios with a button to take it out of each, and the forms to add it to one of
 * the actor's studios or give it to one they administer (a studio's own agent stays put).
 */
function studioBlocks(
  agent: { ownerStudio: unknown },
  config: ReturnType<typeof agentConfig>,
  studios: { studioId: string; studio: { name: string; handle: string } }[],
  mine: { id: string; handle: string; name: string; members: { role: string }[] }[],
  disclosures: string[],
): Block[] {
  const choices = (list: typeof mine) => ({
    studio: list.map((studio) => ({ value: studio.handle, label: studioName(studio) })),
  });
  const joinable = mine.filter((s) => !studios.some((m) => m.studioId === s.id));
  const adminOf = mine.filter((s) => s.members[0]?.role === "admin");
  const blocks: Block[] = [
    {
      md: `## Studios\n\n${agent.ownerStudio ? `It acts only in its own studio, as a member. ${config.members_may_run ? "Every member of the studio may give it tasks." : "Only the studio's admins give it tasks."}` : studios.length ? "" : "_Not in any studio yet: add it to one so it can be mentioned there._"}`,
    },
  ];
  for (const membership of studios) {
    blocks.push({
      md: `- ${link(membership.studio.name, `/studios/${membership.studio.handle}`)} (\`${membership.studio.handle}\`)`,
    });
    if (!agent.ownerStudio)
      blocks.push({
        form: {
          action: "remove_from_studio",
          fixed: { studio: membership.studio.handle },
          label: `Take out of ${studioName(membership.studio)}`,
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
  if (agent.ownerStudio)
    blocks.push({
      form: {
        action: "set_member_runs",
        fixed: {},
        label: "Save",
        style: "block",
        values: { members_may_run: config.members_may_run },
      },
    });
  return blocks;
}
