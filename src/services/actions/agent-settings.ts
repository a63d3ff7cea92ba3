// The owner's controls over what an agent may do: one form for what it may use, which of
// those wait for approval and how reviews work; ordered policy rules beside it.
import { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { requireScope } from "../access.ts";
import { type AgentConfig, agentConfig, type Rule } from "../agents/core/settings.ts";
import {
  ALWAYS_ALLOWED,
  GRANTABLE,
  GRANTABLE_GROUPS,
  type Grantable,
} from "../agents/policy/capabilities.ts";
import { compilePattern } from "../agents/policy/policy.ts";
import { type ActionCtx, type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { text } from "../validation.ts";

const peopleOnly = (ctx: Ctx) => (ctx.actor.kind === "person" ? null : "only people configure agents");

/** How far an agent may go with one grantable action: one choice, so granting and reviewing cannot disagree. */
export const LEVELS = ["off", "on", "approval"] as const;
export type Level = (typeof LEVELS)[number];
const LEVEL_LABELS: Record<Level, string> = {
  off: "Not allowed",
  on: "Allowed",
  approval: "Allowed, after your approval",
};

/** An action's level as stored: granted (absent: every action) and on the approval list. */
export function levelOf(cfg: AgentConfig, action: string): Level {
  if (cfg.capabilities && !cfg.capabilities.includes(action)) return "off";
  return cfg.requires_approval.includes(action) ? "approval" : "on";
}

/**
 * Everything the owner decides about what the agent may do, as one form with one Save: a
 * level per grantable action, grouped, labelled in words (its name the hint), then how
 * reviews work. Separate forms each saved only their own part and dropped the other
 * sections' unsaved choices (issue 30).
 */
const permissionsSchema = () =>
  z.object({
    ...(Object.fromEntries(
      GRANTABLE_GROUPS.flatMap((g) =>
        g.actions.map(([a, label]) => [
          a,
          z.enum(LEVELS).meta({ label, description: a, group: g.group, optionLabels: LEVEL_LABELS }),
        ]),
      ),
    ) as Record<Grantable, z.ZodEnum<{ off: "off"; on: "on"; approval: "approval" }>>),
    approval_mode: z
      .enum(["continue", "wait"])
      .meta({
        label: "While an action waits for review",
        group: "Reviews",
        optionLabels: { continue: "the run carries on", wait: "the run waits for your decision" },
      })
      .describe("continue: the run goes on; wait: it pauses until you decide"),
    approval_expiry_hours: z
      .number()
      .int("a whole number")
      .min(1, "at least 1")
      .max(720, "at most 720")
      .meta({ label: "Unreviewed actions expire after (hours)", group: "Reviews" })
      .describe("1 to 720"),
  });

/** The form's starting values: what the agent may do now. */
export function permissionsOf(cfg: AgentConfig): Record<string, unknown> {
  return {
    ...Object.fromEntries(GRANTABLE.map((a) => [a, levelOf(cfg, a)])),
    approval_mode: cfg.approval_mode,
    approval_expiry_hours: cfg.approval_expiry_hours,
  };
}

export async function saveConfig(
  ctx: ActionCtx,
  scope: Scope,
  change: (cfg: Record<string, unknown>) => void,
) {
  const agent = requireScope(scope.agent, "agent");
  // Re-read under a row lock: two settings forms saved at once must not lose each other's change.
  await ctx.tx.$queryRaw`SELECT id FROM users WHERE id = ${agent.id} FOR UPDATE`;
  const fresh = await ctx.tx.user.findUniqueOrThrow({ where: { id: agent.id } });
  const cfg = { ...agentConfig(fresh) } as Record<string, unknown>;
  change(cfg);
  await ctx.tx.user.update({ where: { id: agent.id }, data: { agentConfig: cfg as Prisma.InputJsonValue } });
  return `/subagents/${agent.handle}/settings`;
}

export const setCapabilities = defineAction({
  name: "set_capabilities",
  description: "Choose what it may do, what waits for your approval, and how reviews work",
  params: permissionsSchema(),
  writes: true,
  available: peopleOnly,
  current: (scope) => permissionsOf(agentConfig(requireScope(scope.agent, "agent"))),
  async execute(ctx, p, scope) {
    const granted = GRANTABLE.filter((a) => p[a] !== "off");
    const reviewed = GRANTABLE.filter((a) => p[a] === "approval");
    const location = await saveConfig(ctx, scope, (cfg) => {
      cfg.capabilities = granted;
      cfg.requires_approval = reviewed;
      cfg.approval_mode = p.approval_mode;
      cfg.approval_expiry_hours = p.approval_expiry_hours;
    });
    return {
      status: 200,
      location,
      notice: `Saved: it may use ${granted.length} of ${GRANTABLE.length} content actions, ${reviewed.length} of them after your approval`,
    };
  },
});

const RULE_ACTIONS = ["*", ...GRANTABLE, ...ALWAYS_ALLOWED] as [string, ...string[]];

/** `param=regex` lines → a map, each regex compiled now so a bad one is a 400 when saved, not a failure later. */
function parsePatterns(textValue: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [i, raw] of (textValue ?? "").split(/\r\n|\r|\n/).entries()) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf("=");
    const name = eq > 0 ? line.slice(0, eq).trim() : "";
    const pattern = eq > 0 ? line.slice(eq + 1).trim() : "";
    if (!/^[a-z_]{1,64}$/.test(name) || !pattern)
      throw new ValidationError([
        { field: "param_patterns", message: `line ${i + 1}: write param=regex, e.g. text=(?i)budget` },
      ]);
    if (pattern.length > 200)
      throw new ValidationError([
        { field: "param_patterns", message: `line ${i + 1}: regex longer than 200` },
      ]);
    try {
      compilePattern(pattern);
    } catch (err) {
      throw new ValidationError([
        { field: "param_patterns", message: `line ${i + 1}: ${(err as Error).message}` },
      ]);
    }
    out[name] = pattern;
  }
  return out;
}

export const addRule = defineAction({
  name: "add_rule",
  description: "Add a policy rule (the first rule that matches decides)",
  params: z.object({
    name: text(80),
    action: z.enum(RULE_ACTIONS).describe("which action, or * for all"),
    decision: z.enum(["allow", "require_approval", "deny"]),
    param_patterns: z
      .string()
      .max(2000)
      .meta({
        multiline: true,
        description: "optional, one per line: param=regex (the rule applies only when all match)",
      })
      .optional(),
    position: z
      .number()
      .int("a whole number")
      .min(1, "at least 1")
      .optional()
      .describe("1 = first; default: last"),
  }),
  writes: true,
  available: peopleOnly,
  async execute(ctx, p, scope) {
    const rule: Rule = {
      name: p.name,
      action: p.action,
      decision: p.decision,
      params: parsePatterns(p.param_patterns),
    };
    const location = await saveConfig(ctx, scope, (cfg) => {
      const rules = [...((cfg.rules as Rule[]) ?? [])];
      if (rules.some((r) => r.name === rule.name))
        throw new ConflictError(`A rule named “${rule.name}” already exists`);
      rules.splice(Math.min((p.position ?? rules.length + 1) - 1, rules.length), 0, rule);
      cfg.rules = rules;
    });
    return { status: 200, location, notice: `Rule “${rule.name}” added` };
  },
});

export const removeRule = defineAction({
  name: "remove_rule",
  destructive: "The rule no longer decides what the agent may do.",
  description: "Remove a policy rule",
  params: z.object({ name: text(80).meta({ label: "Rule", pickedBeside: true }) }),
  writes: true,
  available: peopleOnly,
  async execute(ctx, p, scope) {
    const location = await saveConfig(ctx, scope, (cfg) => {
      const rules = (cfg.rules as Rule[]) ?? [];
      if (!rules.some((r) => r.name === p.name)) throw new NotFoundError(`No rule named “${p.name}”`);
      cfg.rules = rules.filter((r) => r.name !== p.name);
    });
    return { status: 200, location, notice: `Rule “${p.name}” removed` };
  },
});
