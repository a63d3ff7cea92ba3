// Per-agent configuration (users.agent_config) and per-tenant agent settings
// (tenants.settings), each read through one zod schema with defaults, so a row written
// by an older version still reads cleanly.
import { z } from "zod";
import type { Prisma, Tenant, User } from "../../../generated/prisma/client.ts";
import { tenantPricesSchema } from "../../money/pricing.ts";

// Long runs are bounded by their prompt budget, time and cost limits, not by forgetting (prompt.ts).
export const MAX_STEPS_LIMIT = 200;
export const DEFAULT_COST_LIMIT_USD = 100;
export const MAX_COST_LIMIT_USD = 100_000;
export const DEFAULT_ALERT_THRESHOLDS_USD = [1, 5, 10, 50] as const;

/**
 * What a new agent may do besides reading: comment and confirm reads. Everything else that
 * writes is granted by its owner (agents made before this default were given every
 * content action by a migration, so they kept what they could do).
 */
export const DEFAULT_CAPABILITIES = ["add_comment", "confirm_read"] as const;

export const MAX_FALLBACK_MODELS = 3;

export const ruleSchema = z.object({
  name: z.string().min(1).max(80),
  /** An action name, or `*` for every action. */
  action: z.string().min(1).max(64),
  /** Param name → regex its value (as text) must match for the rule to apply. */
  params: z.record(z.string(), z.string()).default({}),
  decision: z.enum(["allow", "require_approval", "deny"]),
  /** A studio's handle: the rule applies only to actions there. */
  studio: z.string().max(64).optional(),
  /** Made by "Approve and always allow this": which approval, by whom, when. */
  origin: z.object({ pending: z.string(), by: z.string(), at: z.string() }).optional(),
});
export type Rule = z.infer<typeof ruleSchema>;

/** The longest description an agent's managers may give it. */
export const DESCRIPTION_MAX = 300;

export const agentConfigSchema = z
  .object({
    identity_prompt: z.string().max(10_000).default(""),
    /** What it does, in a sentence its managers write for the people who may ask it (the directory, its profile). */
    description: z.string().max(DESCRIPTION_MAX).default(""),
    model: z.string().max(200).optional(),
    /** Tried in order when the model's endpoint fails for good (runtime/fallback.ts). */
    fallback_models: z.array(z.string().max(200)).max(MAX_FALLBACK_MODELS).default([]),
    max_steps: z.number().int().min(1).max(MAX_STEPS_LIMIT).default(30),
    timeout_seconds: z.number().int().min(10).max(3600).default(300),
    /** Granted grantable actions. */
    capabilities: z.array(z.string()).default([...DEFAULT_CAPABILITIES]),
    requires_approval: z.array(z.string()).default([]),
    /** Ordered: the first rule that matches decides. */
    rules: z.array(ruleSchema).default([]),
    /** `wait`: a run pauses until its queued action is reviewed; `continue`: it carries on. */
    approval_mode: z.enum(["continue", "wait"]).default("continue"),
    /** A burst of events on one subscription within this many seconds is one run (0: each at once). */
    subscription_window_seconds: z.number().int().min(0).max(3600).default(30),
    approval_expiry_hours: z
      .number()
      .int()
      .min(1)
      .max(24 * 30)
      .default(24),
    /** A studio's agent: may the studio's members (not only its admins) give it tasks from its run form? */
    members_may_run: z.boolean().default(false),
    /** The owner's BYOK key it calls its provider with; absent: the shared endpoint. */
    api_key_id: z.string().optional(),
    /** Month-to-date spend (UTC calendar month) at which runs stop and the agent pauses. */
    cost_limit_usd: z.number().min(0).max(MAX_COST_LIMIT_USD).default(DEFAULT_COST_LIMIT_USD),
    /** Each notifies the owner once per month when spend reaches it. */
    // No upper bound here: one bad stored amount must not make the whole config unreadable
    // (set_cost_limit refuses amounts over the limit maximum; the ledger skips them).
    alert_thresholds_usd: z
      .array(z.number().positive())
      .max(10)
      .default([...DEFAULT_ALERT_THRESHOLDS_USD]),
  })
  .loose();

export type AgentConfig = z.infer<typeof agentConfigSchema>;

/**
 * Who may run an agent and whose key it calls with belong to its ownership, not to how it
 * behaves: a version never holds them, so a restore cannot hand a transferred agent its old
 * owner's key back (a transfer drops it on purpose). Everything else the schema holds is
 * versioned (core/versions.ts).
 */
const UNVERSIONED: readonly string[] = ["api_key_id", "members_may_run"];

/** The settings a version holds, in the schema's order: its keys, less those of its ownership. */
export const VERSIONED_KEYS = Object.keys(agentConfigSchema.shape).filter(
  (key) => !UNVERSIONED.includes(key),
);

/** An agent's versioned settings, read through the one schema (defaults filled in). */
export function versionedSettings(raw: Prisma.JsonValue | undefined): Record<string, unknown> {
  const config = agentConfig({ agentConfig: raw ?? {} }) as Record<string, unknown>;
  return Object.fromEntries(VERSIONED_KEYS.map((key) => [key, config[key]]));
}

/** The event each change of a workspace's agent settings is recorded as (its audit trail). */
export const SETTING_CHANGED = "workspace.agent_setting_changed";

export const tenantSettingsSchema = z
  .object({
    default_model: z.string().max(200).optional(),
    trigger_rate_per_minute: z.number().int().min(1).max(1000).default(3),
    /** Rated triggers of all the workspace's agents together, a minute; absent: no workspace limit. */
    workspace_trigger_rate_per_minute: z.number().int().min(1).max(100_000).optional(),
    chain_depth_limit: z.number().int().min(1).max(20).default(3),
    agents_enabled: z.boolean().default(true),
    /** Grantable actions the workspace's admins keep for people: no agent may be granted them. */
    human_only: z.array(z.string()).default([]),
    /** What a new agent may do besides reading; absent: DEFAULT_CAPABILITIES. */
    default_capabilities: z.array(z.string()).optional(),
    /** Model → USD per 1M tokens, over the repo's price list (money/pricing.ts). */
    pricing: tenantPricesSchema.default({}),
  })
  .loose();

export type TenantSettings = z.infer<typeof tenantSettingsSchema>;

/** The parts of an agent's configuration that decide its actions' fate (policy/policy.ts). */
export const POLICY_KEYS = ["capabilities", "requires_approval", "rules"] as const;

/**
 * A stored configuration with its policy replaced by a run's snapshot of it (runs.ts
 * `policySnapshot`): a key the snapshot holds as null was unset then, so its default applies.
 * A snapshot may hold more of the versioned settings — an experiment's run holds a whole
 * candidate version (its prompt, model, limits: core/experiments.ts) — and those it holds
 * replace the stored ones too; those it lacks stay as stored.
 */
export function withPolicy(config: Prisma.JsonValue, policy: unknown): Prisma.JsonObject {
  const merged: Prisma.JsonObject =
    config && typeof config === "object" && !Array.isArray(config) ? { ...config } : {};
  const snap = (policy && typeof policy === "object" ? policy : {}) as Prisma.JsonObject;
  for (const key of POLICY_KEYS) {
    if (snap[key] === null || snap[key] === undefined) delete merged[key];
    else merged[key] = snap[key];
  }
  for (const key of VERSIONED_KEYS)
    if (!(POLICY_KEYS as readonly string[]).includes(key) && snap[key] !== undefined && snap[key] !== null)
      merged[key] = snap[key];
  return merged;
}

/**
 * The agent as a run pinned to settings reads it (a replay under its original's rules, an
 * experiment's side under its version): its pin over its stored configuration. As stored when
 * the run is not pinned. The worker's run (navigator-setup.ts) and its step pages read it so.
 */
export function asPinnedBy<A extends Pick<User, "agentConfig">>(
  agent: A,
  run: { policy: Prisma.JsonValue | null; policyPinned: boolean },
): A {
  if (!run.policyPinned || !run.policy) return agent;
  return { ...agent, agentConfig: withPolicy(agent.agentConfig, run.policy) };
}

/** agentConfig of a stored configuration under a run's policy snapshot (withPolicy). */
export const configUnder = (config: Prisma.JsonValue, policy: unknown): AgentConfig =>
  agentConfig({ agentConfig: withPolicy(config, policy) });

export function agentConfig(user: Pick<User, "agentConfig">): AgentConfig {
  const parsed = agentConfigSchema.safeParse(user.agentConfig ?? {});
  return parsed.success ? parsed.data : agentConfigSchema.parse({});
}

// A run asks for its agent's configuration several times a step (the prompt, the guard, the
// trace, the budget): zod's parse of it was about 3 % of the worker's CPU. Parsed once per
// stored object here; the result is shared, so its callers only read it.
const parsedConfigs = new WeakMap<object, AgentConfig>();

/** agentConfig of a stored configuration, parsed once per object (read-only: it is shared). */
export function sharedAgentConfig(raw: User["agentConfig"]): AgentConfig {
  if (!raw || typeof raw !== "object") return agentConfig({ agentConfig: raw });
  let cfg = parsedConfigs.get(raw);
  if (!cfg) {
    cfg = agentConfig({ agentConfig: raw });
    parsedConfigs.set(raw, cfg);
  }
  return cfg;
}

// Configurations as the ledger returns them with every recorded call, by their JSON text: the
// same text gives the same object, so the caches keyed by it (sharedAgentConfig, a trace's,
// the guard's) hold across a run's steps. Bounded: a worker sees few agents at a time.
const byText = new Map<string, User["agentConfig"]>();
const MAX_TEXTS = 1000;

/** A configuration read as JSON text (`agent_config::text`), as one object per distinct text. */
export function storedAgentConfig(text: string | null): User["agentConfig"] {
  if (text === null) return {};
  let raw = byText.get(text);
  if (raw === undefined) {
    raw = JSON.parse(text) as User["agentConfig"];
    if (byText.size >= MAX_TEXTS) byText.delete(byText.keys().next().value!);
    byText.set(text, raw);
  }
  return raw;
}

// A run's guard asks for every action of every page: the tenant row it holds is parsed once.
const parsedSettings = new WeakMap<object, TenantSettings>();

export function tenantSettings(tenant: Pick<Tenant, "settings">): TenantSettings {
  const cached = parsedSettings.get(tenant);
  if (cached) return cached;
  const parsed = tenantSettingsSchema.safeParse(tenant.settings ?? {});
  const settings = parsed.success ? parsed.data : tenantSettingsSchema.parse({});
  parsedSettings.set(tenant, settings);
  return settings;
}

/** Agent's model, else the tenant default, else the server default; null when none is set anywhere. */
export function resolveModel(
  cfg: AgentConfig,
  settings: TenantSettings,
  serverDefault: string | undefined,
): string | null {
  return cfg.model || settings.default_model || serverDefault || null;
}

/** What a new agent of this workspace starts able to do: the admins' choice, less what they keep for people. */
export function newAgentCapabilities(settings: TenantSettings): string[] {
  const chosen = settings.default_capabilities ?? [...DEFAULT_CAPABILITIES];
  return chosen.filter((a) => !settings.human_only.includes(a));
}
