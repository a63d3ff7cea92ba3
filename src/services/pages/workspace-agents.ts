// /settings/agents: the workspace's switches and limits for agents. Every member may read it
// (what holds their agents back is no secret from them, and they see why their runs were
// skipped); only workspace admins get its forms, and its actions refuse anyone else whatever
// the surface (actions/workspace-agents.ts).
import { DEFAULT_CAPABILITIES, SETTING_CHANGED, tenantSettings } from "../agents/core/settings.ts";
import { capabilityLabel, GRANTABLE } from "../agents/policy/capabilities.ts";
import { modelCatalogue } from "../money/catalogue.ts";
import { code, mdEscape } from "../registry/markdown.ts";
import { type Block, definePage, type PageCtx, type PageView, type Scope } from "../registry/types.ts";
import { home, when } from "./format.ts";
import { catalogueMarkdown, modelChoices } from "./model-choices.ts";

const SETTING_LABELS: Record<string, string> = {
  agents_enabled: "Agents on",
  default_model: "Default model",
  trigger_rate_per_minute: "Triggers per agent per minute",
  workspace_trigger_rate_per_minute: "Triggers per workspace per minute",
  chain_depth_limit: "Chain depth",
  default_capabilities: "What new agents may do",
  human_only: "Human-only actions",
  model_catalogue: "Model catalogue refreshed",
  tool_hosts: "Hosts tools may be connected from",
};

export const workspaceAgentsPage = definePage({
  pattern: "/settings/agents",
  actions: [
    "set_agents_enabled",
    "set_agent_limits",
    "set_default_capabilities",
    "set_human_only",
    "refresh_models",
  ],
  resolve: async (): Promise<Scope> => ({}),
  render: async (ctx) => workspaceAgentsView(await loadWorkspaceAgents(ctx)),
});

/** The workspace's agent settings, its model catalogue and its recent setting changes. */
async function loadWorkspaceAgents(ctx: PageCtx) {
  // Read fresh, not the request's copy: the page that answers a change must show it.
  const tenant = await ctx.db.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id } });
  const [catalogue, keys, changes] = await Promise.all([
    modelCatalogue(ctx.db, tenant),
    ctx.db.agentApiKey.findMany({
      where: { tenantId: tenant.id, revokedAt: null },
      select: { modelsListedAt: true },
    }),
    ctx.db.event.findMany({
      where: { tenantId: tenant.id, type: SETTING_CHANGED },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: 20,
      include: { actor: { select: { handle: true } } },
    }),
  ]);
  const listed = keys.map((key) => key.modelsListedAt).filter((date): date is Date => Boolean(date));
  return {
    settings: tenantSettings(tenant),
    catalogue,
    /** When the least recently asked provider key listed its models, if any has. */
    oldestListing: listed.length ? new Date(Math.min(...listed.map((date) => date.getTime()))) : null,
    changes,
    admin: ctx.actor.tenantAdmin,
  };
}

type WorkspaceAgentsData = Awaited<ReturnType<typeof loadWorkspaceAgents>>;
type Settings = WorkspaceAgentsData["settings"];

/** A setting's value in the changes list: a capability list by its labels, anything else as code. */
function shownValue(value: unknown): string {
  if (value === null || value === undefined) return "_default_";
  if (!Array.isArray(value)) return code(String(value));
  return value.length ? value.map((name) => capabilityLabel(String(name))).join(", ") : "_none_";
}

function onOffBlock(settings: Settings, admin: boolean): string {
  return [
    admin ? "" : "_Only workspace admins change these; you see them as they are._\n",
    "## On or off",
    "",
    settings.agents_enabled
      ? "**On.** Triggers start runs as usual."
      : "> **Off.** No run starts: every trigger is recorded as a skipped run saying so, and running runs stop at their next step.",
  ].join("\n");
}

function limitsTable(settings: Settings): string {
  return [
    "## Limits",
    "",
    "| setting | value |",
    "|---|---|",
    `| default model | ${settings.default_model ? code(settings.default_model) : "the server's default"} |`,
    `| triggers per agent per minute | ${settings.trigger_rate_per_minute} (over it a trigger waits its turn) |`,
    `| triggers per workspace per minute | ${settings.workspace_trigger_rate_per_minute ?? "no limit"} |`,
    `| chain depth | ${settings.chain_depth_limit} agents answering each other in a row |`,
  ].join("\n");
}

function humanOnlyBlock(settings: Settings): string {
  const listed = settings.human_only.length
    ? settings.human_only.map((name) => `- ${capabilityLabel(name)} (\`${name}\`)`).join("\n")
    : "_None: owners may grant their agents any content action._";
  return [
    "## Human-only actions",
    "",
    "Actions marked here are kept for people: no agent in the workspace may be granted them, whatever its owner ticks, and its capabilities page shows them greyed out. Agents that had one keep their other capabilities.",
    "",
    listed,
  ].join("\n");
}

function catalogueBlock({ catalogue, oldestListing }: WorkspaceAgentsData): string {
  const asked = oldestListing ? `(asked ${when(oldestListing)} at the earliest)` : "when tested";
  return `## Model catalogue\n\nThe models an agent may be set to use: the price list, and what each provider key in the workspace listed ${asked}. Prices are USD per million tokens.\n\n${catalogueMarkdown(catalogue)}`;
}

function changeLine(change: WorkspaceAgentsData["changes"][number]): string {
  const payload = (change.payload ?? {}) as { setting?: string; from?: unknown; to?: unknown };
  const what = SETTING_LABELS[payload.setting ?? ""] ?? mdEscape(payload.setting ?? "");
  return `- ${when(change.createdAt)} · @${change.actor.handle} · ${what}: ${shownValue(payload.from)} → ${shownValue(payload.to)}`;
}

/** The admins' forms, one per section, in the order the sections show. */
function settingsForms(settings: Settings, data: WorkspaceAgentsData) {
  const defaults = settings.default_capabilities ?? [...DEFAULT_CAPABILITIES];
  return {
    enabled: {
      form: {
        action: "set_agents_enabled",
        fixed: { agents: settings.agents_enabled ? "off" : "on" },
        label: settings.agents_enabled ? "Switch all agents off" : "Switch agents on",
      },
    },
    limits: {
      form: {
        action: "set_agent_limits",
        fixed: {},
        label: "Save limits",
        style: "block",
        values: {
          default_model: settings.default_model ?? "",
          trigger_rate_per_minute: settings.trigger_rate_per_minute,
          workspace_trigger_rate_per_minute: settings.workspace_trigger_rate_per_minute ?? 0,
          chain_depth_limit: settings.chain_depth_limit,
        },
        choices: {
          default_model: modelChoices(data.catalogue, [settings.default_model ?? ""], "The server's default"),
        },
      },
    },
    capabilities: {
      form: {
        action: "set_default_capabilities",
        fixed: {},
        label: "Save what new agents may do",
        style: "block",
        values: Object.fromEntries(GRANTABLE.map((name) => [name, defaults.includes(name)])),
      },
    },
    humanOnly: {
      form: {
        action: "set_human_only",
        fixed: {},
        label: "Save human-only actions",
        style: "block",
        values: Object.fromEntries(GRANTABLE.map((name) => [name, settings.human_only.includes(name)])),
      },
    },
    refresh: { form: { action: "refresh_models", fixed: {}, label: "Refresh the model catalogue" } },
  } satisfies Record<string, Block>;
}

function workspaceAgentsView(data: WorkspaceAgentsData): PageView {
  const { settings, admin } = data;
  const forms = settingsForms(settings, data);
  // Members read the settings; only admins get the forms that change them.
  const form = (block: Block) => (admin ? [block] : []);
  const defaults = settings.default_capabilities ?? [...DEFAULT_CAPABILITIES];
  const allowed = defaults.map(capabilityLabel).join(", ").toLowerCase() || "nothing";
  const changes = data.changes.map(changeLine).join("\n") || "_No changes yet._";
  return {
    title: "Agents in this workspace",
    breadcrumb: [home, { label: "Subagents", path: "/subagents" }, { label: "Workspace settings" }],
    blocks: [
      { md: onOffBlock(settings, admin) },
      ...form(forms.enabled),
      { md: limitsTable(settings) },
      ...form(forms.limits),
      {
        md: `## What a new agent may do\n\nBesides reading: ${allowed}. Its owner grants more on its page; agents that exist keep what they have.`,
      },
      ...form(forms.capabilities),
      { md: humanOnlyBlock(settings) },
      ...form(forms.humanOnly),
      { md: catalogueBlock(data) },
      ...form(forms.refresh),
      { md: `## Recent changes\n\n${changes}` },
    ],
  };
}
