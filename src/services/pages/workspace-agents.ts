// /settings/agents: the workspace's switches and limits for agents. Every member may read it
// (what holds their agents back is no secret from them, and they see why their runs were
// skipped); only workspace admins get its forms, and its actions refuse anyone else whatever
// the surface (actions/workspace-agents.ts).
import { DEFAULT_CAPABILITIES, SETTING_CHANGED, tenantSettings } from "../agents/core/settings.ts";
import { capabilityLabel, GRANTABLE } from "../agents/policy/capabilities.ts";
import { modelCatalogue } from "../money/catalogue.ts";
import { code, mdEscape } from "../registry/markdown.ts";
import { type Block, definePage, type Scope } from "../registry/types.ts";
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
};

const shown = (v: unknown) =>
  v === null || v === undefined
    ? "_default_"
    : Array.isArray(v)
      ? v.length
        ? v.map((a) => capabilityLabel(String(a))).join(", ")
        : "_none_"
      : code(String(v));

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
  async render(ctx) {
    // Read fresh, not the request's copy: the page that answers a change must show it.
    const tenant = await ctx.db.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id } });
    const s = tenantSettings(tenant);
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
    const admin = ctx.actor.tenantAdmin;
    const defaults = s.default_capabilities ?? [...DEFAULT_CAPABILITIES];
    const listed = keys.map((k) => k.modelsListedAt).filter((d): d is Date => Boolean(d));
    const oldest = listed.length ? new Date(Math.min(...listed.map((d) => d.getTime()))) : null;
    const form = (b: Block) => (admin ? [b] : []);
    const blocks: Block[] = [
      {
        md: [
          admin ? "" : "_Only workspace admins change these; you see them as they are._\n",
          "## On or off",
          "",
          s.agents_enabled
            ? "**On.** Triggers start runs as usual."
            : "> **Off.** No run starts: every trigger is recorded as a skipped run saying so, and running runs stop at their next step.",
        ].join("\n"),
      },
      ...form({
        form: {
          action: "set_agents_enabled",
          fixed: { agents: s.agents_enabled ? "off" : "on" },
          label: s.agents_enabled ? "Switch all agents off" : "Switch agents on",
        },
      }),
      {
        md: [
          "## Limits",
          "",
          "| setting | value |",
          "|---|---|",
          `| default model | ${s.default_model ? code(s.default_model) : "the server's default"} |`,
          `| triggers per agent per minute | ${s.trigger_rate_per_minute} (over it a trigger waits its turn) |`,
          `| triggers per workspace per minute | ${s.workspace_trigger_rate_per_minute ?? "no limit"} |`,
          `| chain depth | ${s.chain_depth_limit} agents answering each other in a row |`,
        ].join("\n"),
      },
      ...form({
        form: {
          action: "set_agent_limits",
          fixed: {},
          label: "Save limits",
          style: "block",
          values: {
            default_model: s.default_model ?? "",
            trigger_rate_per_minute: s.trigger_rate_per_minute,
            workspace_trigger_rate_per_minute: s.workspace_trigger_rate_per_minute ?? 0,
            chain_depth_limit: s.chain_depth_limit,
          },
          choices: {
            default_model: modelChoices(catalogue, [s.default_model ?? ""], "The server's default"),
          },
        },
      }),
      {
        md: `## What a new agent may do\n\nBesides reading: ${defaults.map(capabilityLabel).join(", ").toLowerCase() || "nothing"}. Its owner grants more on its page; agents that exist keep what they have.`,
      },
      ...form({
        form: {
          action: "set_default_capabilities",
          fixed: {},
          label: "Save what new agents may do",
          style: "block",
          values: Object.fromEntries(GRANTABLE.map((g) => [g, defaults.includes(g)])),
        },
      }),
      {
        md: [
          "## Human-only actions",
          "",
          "Actions marked here are kept for people: no agent in the workspace may be granted them, whatever its owner ticks, and its capabilities page shows them greyed out. Agents that had one keep their other capabilities.",
          "",
          s.human_only.length
            ? s.human_only.map((a) => `- ${capabilityLabel(a)} (\`${a}\`)`).join("\n")
            : "_None: owners may grant their agents any content action._",
        ].join("\n"),
      },
      ...form({
        form: {
          action: "set_human_only",
          fixed: {},
          label: "Save human-only actions",
          style: "block",
          values: Object.fromEntries(GRANTABLE.map((g) => [g, s.human_only.includes(g)])),
        },
      }),
      {
        md: `## Model catalogue\n\nThe models an agent may be set to use: the price list, and what each provider key in the workspace listed ${oldest ? `(asked ${when(oldest)} at the earliest)` : "when tested"}. Prices are USD per million tokens.\n\n${catalogueMarkdown(catalogue)}`,
      },
      ...form({ form: { action: "refresh_models", fixed: {}, label: "Refresh the model catalogue" } }),
      {
        md: `## Recent changes\n\n${
          changes
            .map((e) => {
              const p = (e.payload ?? {}) as { setting?: string; from?: unknown; to?: unknown };
              const what = SETTING_LABELS[p.setting ?? ""] ?? mdEscape(p.setting ?? "");
              return `- ${when(e.createdAt)} · @${e.actor.handle} · ${what}: ${shown(p.from)} → ${shown(p.to)}`;
            })
            .join("\n") || "_No changes yet._"
        }`,
      },
    ];
    return {
      title: "Agents in this workspace",
      breadcrumb: [home, { label: "Subagents", path: "/subagents" }, { label: "Workspace settings" }],
      blocks,
    };
  },
});
