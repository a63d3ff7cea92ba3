// Restoring one of an agent's versions (agents/core/versions.ts): its settings come back through
// saveConfig, as any change does, so the restore is itself a new version, in one transaction
// with its audit event. What the setters would refuse now, a restore refuses too.
import { z } from "zod";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { MAX_RULES_SIZE } from "../../lib/rule-pattern.ts";
import { type Rule, tenantSettings, VERSIONED_KEYS } from "../agents/core/settings.ts";
import { isToolName } from "../agents/core/tool-names.ts";
import { latestVersion, loadVersion, settingsOf } from "../agents/core/versions.ts";
import { HUMAN_ONLY_WHY } from "../agents/policy/capabilities.ts";
import { offeredTools } from "../agents/policy/tool-grants.ts";
import { emit } from "../events.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { type ActionCtx, defineAction } from "../registry/types.ts";
import { parsePatterns, rulesSize, saveConfig } from "./agent-settings.ts";
import { managersOnly } from "./managers-only.ts";
import { catalogueProblems } from "./subagents.ts";

/** People who manage the agent: loadAgent lets only them reach its versions, this says so to anyone else. */
const onlyManagers = managersOnly("restore its versions");

/**
 * Why a version's settings cannot come back now, in words (empty: they can): the checks its
 * setters make — the model catalogue (update_subagent), what the workspace keeps for people
 * (set_capabilities), rules that can run (add_rule), tools its owner can still grant
 * (set_tool_level) — on what the version holds.
 */
async function refusals(
  ctx: ActionCtx,
  agent: Parameters<typeof offeredTools>[1],
  settings: Record<string, unknown>,
): Promise<string[]> {
  const model = typeof settings.model === "string" ? settings.model : "";
  const fallbacks = (settings.fallback_models as string[] | undefined) ?? [];
  const reasons = (await catalogueProblems(ctx, model, fallbacks)).map(
    (issue) => `${issue.label ?? issue.field}: ${issue.message}`,
  );
  const humanOnly = tenantSettings(ctx.tenant).human_only;
  const kept = ((settings.capabilities as string[] | undefined) ?? []).filter((a) => humanOnly.includes(a));
  if (kept.length) reasons.push(`${kept.map((a) => `\`${a}\``).join(", ")}: ${HUMAN_ONLY_WHY}`);
  const tools = [
    ...((settings.capabilities as string[] | undefined) ?? []),
    ...((settings.requires_approval as string[] | undefined) ?? []),
  ].filter(isToolName);
  if (tools.length) {
    const offered = new Set((await offeredTools(ctx.tx, agent)).map((tool) => tool.name));
    const gone = [...new Set(tools.filter((tool) => !offered.has(tool)))];
    if (gone.length)
      reasons.push(
        `${gone.map((t) => `\`${t}\``).join(", ")}: no longer among the tools its owner can grant`,
      );
  }
  const rules = (settings.rules as Rule[] | undefined) ?? [];
  for (const rule of rules) {
    const lines = Object.entries(rule.params ?? {}).map(([param, pattern]) => `${param}=${pattern}`);
    try {
      parsePatterns(ctx, rule.action, lines.join("\n"));
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      reasons.push(`rule “${rule.name}”: ${err.issues.map((issue) => issue.message).join("; ")}`);
    }
  }
  const size = rulesSize(rules);
  if (size > MAX_RULES_SIZE)
    reasons.push(`its rules' patterns together are ${size} steps to match, at most ${MAX_RULES_SIZE}`);
  return reasons;
}

export const restoreAgentVersion = defineAction({
  name: "restore_agent_version",
  needs: ["agent"],
  description: "Bring back the settings of one of its versions: the restore is a new version",
  params: z.object({
    version: z
      .number()
      .int("a whole number")
      .min(1, "at least 1")
      .meta({ label: "Version", description: "the number of the version to bring back", pickedBeside: true }),
  }),
  writes: true,
  // It can hand the agent back capabilities and loosen its rules, as set_capabilities does.
  confirmRecent: true,
  audience: toAgentManagers("setting"),
  available: onlyManagers,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const found = await loadVersion(ctx.tx, agent.id, params.version);
    const latest = await latestVersion(ctx.tx, agent.id);
    if (!found)
      throw new ValidationError([
        {
          field: "version",
          label: "Version",
          message: `@${agent.handle} has no version ${params.version}${latest ? ` (its versions are 1 to ${latest})` : ""}`,
        },
      ]);
    const settings = settingsOf(found.version);
    const reasons = await refusals(ctx, agent, settings);
    if (reasons.length)
      throw new ConflictError(
        `Version ${params.version} cannot be restored, nothing was changed: ${reasons.join("; ")}.`,
      );
    await saveConfig(
      ctx,
      agent,
      (config) => {
        for (const key of VERSIONED_KEYS)
          if (settings[key] === undefined) delete config[key];
          else config[key] = settings[key];
      },
      { restoredFrom: params.version },
    );
    const made = await latestVersion(ctx.tx, agent.id);
    if (made === latest)
      return {
        status: 200,
        location: `/subagents/${agent.handle}/versions`,
        notice: `It already has the settings of version ${params.version}: nothing changed`,
      };
    await emit(ctx, {
      type: "subagent.version_restored",
      subjectType: "user",
      subjectId: agent.id,
      payload: { restored: params.version, version: made },
    });
    return {
      status: 200,
      location: `/subagents/${agent.handle}/versions/${made}`,
      notice: `Restored version ${params.version} as version ${made}`,
    };
  },
});
