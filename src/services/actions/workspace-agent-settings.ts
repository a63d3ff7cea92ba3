// The workspace's switches and limits for agents (/settings/agents), set by its admins: the
// kill switch, the default model, trigger rates, the chain depth, what a new agent may do,
// and a refresh of the model catalogue. Each change is recorded as an event naming who
// changed what from what to what (the page lists them): the workspace's audit trail of its
// agent settings.
import { z } from "zod";
import { ForbiddenError } from "../../lib/errors.ts";
import { SETTING_CHANGED, tenantSettings } from "../agents/core/settings.ts";
import { GRANTABLE } from "../agents/policy/capabilities.ts";
import { emit } from "../events.ts";
import { catalogueIssues, refreshListings } from "../money/catalogue.ts";
import { toWorkspace } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { type Change, perAction, put, saveAudited, workspaceAdminsOnly } from "./workspace-agents.ts";

const saved = (changes: Change[], what: string) => (changes.length ? `Saved: ${what}` : "Nothing changed");

export const setAgentsEnabled = defineAction({
  name: "set_agents_enabled",
  description: "Switch every agent in this workspace on or off",
  params: z.object({
    agents: z.enum(["on", "off"]).meta({
      label: "Agents",
      description:
        "off: no run starts, running runs stop at their next step, triggers are recorded as skipped",
    }),
  }),
  writes: true,
  audience: toWorkspace("workspace setting"),
  available: workspaceAdminsOnly,
  async execute(ctx, params) {
    const now = tenantSettings(ctx.tenant).agents_enabled;
    const changes = await saveAudited(ctx, (s) => [put(s, "agents_enabled", params.agents === "on", now)]);
    return {
      status: 200,
      location: "/settings/agents",
      notice: changes.length
        ? params.agents === "on"
          ? "Agents are on again: new triggers start runs"
          : "Agents are off: no run starts, and running runs stop at their next step"
        : `Agents were already ${params.agents}`,
      warning: params.agents === "off",
    };
  },
});

const rate = (max: number) =>
  z.number().int("a whole number").min(1, "at least 1").max(max, `at most ${max}`);

export const setAgentLimits = defineAction({
  name: "set_agent_limits",
  description: "Set the default model, trigger rates and chain depth for the workspace's agents",
  params: z.object({
    default_model: z
      .string()
      .trim()
      .max(200)
      .meta({
        label: "Default model",
        description: "for agents with no model of their own; empty: the server's",
        clears: true,
      })
      .optional(),
    trigger_rate_per_minute: rate(1000)
      .meta({ label: "Triggers per agent per minute", description: "over it a trigger waits its turn" })
      .optional(),
    workspace_trigger_rate_per_minute: z
      .number()
      .int("a whole number")
      .min(0, "at least 0")
      .max(100_000, "at most 100000")
      .meta({
        label: "Triggers per workspace per minute",
        description: "all agents together; over it a trigger is skipped; 0: no workspace limit",
      })
      .optional(),
    chain_depth_limit: z
      .number()
      .int("a whole number")
      .min(1, "at least 1")
      .max(20, "at most 20")
      .meta({ label: "Chain depth", description: "how many agents may answer each other in a row" })
      .optional(),
  }),
  writes: true,
  audience: toWorkspace("workspace setting"),
  available: workspaceAdminsOnly,
  // With the schema's checks, in one round (ActionDef.check).
  check: (ctx, sent) =>
    catalogueIssues(
      ctx.db,
      ctx.tenant,
      { name: "default_model", label: "Default model" },
      typeof sent.default_model === "string" && sent.default_model.trim() ? [sent.default_model.trim()] : [],
    ),
  async execute(ctx, params) {
    const was = tenantSettings(ctx.tenant);
    const changes = await saveAudited(ctx, (settings) => {
      const out: Change[] = [];
      if (params.default_model !== undefined)
        out.push(put(settings, "default_model", params.default_model || undefined, was.default_model));
      if (params.trigger_rate_per_minute !== undefined)
        out.push(
          put(
            settings,
            "trigger_rate_per_minute",
            params.trigger_rate_per_minute,
            was.trigger_rate_per_minute,
          ),
        );
      if (params.workspace_trigger_rate_per_minute !== undefined)
        out.push(
          put(
            settings,
            "workspace_trigger_rate_per_minute",
            params.workspace_trigger_rate_per_minute || undefined,
            was.workspace_trigger_rate_per_minute,
          ),
        );
      if (params.chain_depth_limit !== undefined)
        out.push(put(settings, "chain_depth_limit", params.chain_depth_limit, was.chain_depth_limit));
      return out;
    });
    return {
      status: 200,
      location: "/settings/agents",
      notice: saved(changes, changes.map((c) => c.setting.replaceAll("_", " ")).join(", ")),
    };
  },
});

export const setDefaultCapabilities = defineAction({
  name: "set_default_capabilities",
  description: "Choose what a new agent in this workspace may do besides reading",
  params: perAction(),
  writes: true,
  confirmRecent: true,
  audience: toWorkspace("workspace setting"),
  available: workspaceAdminsOnly,
  async execute(ctx, params) {
    const chosen = GRANTABLE.filter((a) => (params as Record<string, boolean>)[a]);
    const settings = tenantSettings(ctx.tenant);
    const was = settings.default_capabilities ?? null;
    const changes = await saveAudited(ctx, (s) => [put(s, "default_capabilities", chosen, was)]);
    const kept = chosen.filter((a) => settings.human_only.includes(a));
    return {
      status: 200,
      location: "/settings/agents",
      notice: `${saved(changes, `new agents start with ${chosen.length} of ${GRANTABLE.length} content actions`)}${kept.length ? ` (${kept.length} of them kept for people, so not granted)` : ""}`,
    };
  },
});

export const refreshModels = defineAction({
  name: "refresh_models",
  description: "Ask every provider key in the workspace for its models again",
  params: z.object({}),
  writes: true,
  audience: toWorkspace("model catalogue"),
  // Waits on the providers: outside a transaction, each key's listing saved on its own.
  callsOut: true,
  available: workspaceAdminsOnly,
  async execute(ctx) {
    const refused = workspaceAdminsOnly(ctx);
    if (refused) throw new ForbiddenError(refused);
    const listed = await refreshListings(ctx.tx, ctx.tenant.id);
    await emit(ctx, {
      type: SETTING_CHANGED,
      subjectType: "tenant",
      subjectId: ctx.tenant.id,
      payload: {
        setting: "model_catalogue",
        from: null,
        to: `${listed.models} models from ${listed.keys} keys`,
      },
    });
    const failed = listed.failed.map((f) => `“${f.label}”: ${f.why}`).join("; ");
    return {
      status: 200,
      location: "/settings/agents",
      notice: `${listed.keys ? `Asked ${listed.keys} key(s): ${listed.models} model(s) listed` : "No provider keys in the workspace: the catalogue is the price list"}${failed ? `. Not refreshed: ${failed}` : ""}`,
      warning: listed.failed.length > 0,
    };
  },
});
