// The owner's controls over what an agent may do: one form for what it may use, which of
// those wait for approval and how reviews work; ordered policy rules beside it.
import { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { compilePattern, MAX_RULES_SIZE, patternSize } from "../../lib/rule-pattern.ts";
import { type AgentConfig, agentConfig, type Rule, tenantSettings } from "../agents/core/settings.ts";
import { isToolName } from "../agents/core/tool-names.ts";
import { recordVersion } from "../agents/core/versions.ts";
import {
  ALWAYS_ALLOWED,
  GRANTABLE,
  GRANTABLE_GROUPS,
  type Grantable,
  HUMAN_ONLY_WHY,
} from "../agents/policy/capabilities.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction, type PageCtx } from "../registry/types.ts";
import { text } from "../validation.ts";

export const peopleOnly = (ctx: Ctx) => (ctx.actor.kind === "person" ? null : "only people configure agents");

/** How far an agent may go with one grantable action: one choice, so granting and reviewing cannot disagree. */
export const LEVELS = ["off", "on", "approval"] as const;
export type Level = (typeof LEVELS)[number];
const LEVEL_LABELS: Record<Level, string> = {
  off: "Not allowed",
  on: "Allowed",
  approval: "Allowed, after your approval",
};

/** An action's level as stored: granted (absent: every action) and on the approval list. */
export function levelOf(config: AgentConfig, action: string): Level {
  if (config.capabilities && !config.capabilities.includes(action)) return "off";
  return config.requires_approval.includes(action) ? "approval" : "on";
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
      GRANTABLE_GROUPS.flatMap((grouped) =>
        grouped.actions.map(([action, label]) => [
          action,
          z
            .enum(LEVELS)
            .meta({ label, description: action, group: grouped.group, optionLabels: LEVEL_LABELS }),
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
export function permissionsOf(config: AgentConfig): Record<string, unknown> {
  return {
    ...Object.fromEntries(GRANTABLE.map((a) => [a, levelOf(config, a)])),
    approval_mode: config.approval_mode,
    approval_expiry_hours: config.approval_expiry_hours,
  };
}

/**
 * The one place an agent's settings are saved: every action that changes them calls this, and
 * it records the version the change made (agents/core/versions.ts) in the same transaction.
 */
export async function saveConfig(
  ctx: ActionCtx,
  agent: { id: string; handle: string },
  change: (config: Record<string, unknown>) => void,
  options: { restoredFrom?: number } = {},
) {
  // Re-read under a row lock: two settings forms saved at once must not lose each other's
  // change, and the version numbers they take are one after the other.
  await ctx.tx.$queryRaw`SELECT id FROM users WHERE id = ${agent.id} FOR UPDATE`;
  const fresh = await ctx.tx.user.findUniqueOrThrow({ where: { id: agent.id } });
  const config = { ...agentConfig(fresh) } as Record<string, unknown>;
  change(config);
  await ctx.tx.user.update({
    where: { id: agent.id },
    data: { agentConfig: config as Prisma.InputJsonValue },
  });
  await recordVersion(ctx.tx, {
    tenantId: ctx.tenant.id,
    agentId: agent.id,
    authorId: ctx.actor.id,
    before: fresh.agentConfig,
    after: config as Prisma.JsonValue,
    restoredFrom: options.restoredFrom,
  });
  return `/subagents/${agent.handle}/settings`;
}

export const setCapabilities = defineAction({
  name: "set_capabilities",
  needs: ["agent"],
  description: "Choose what it may do, what waits for your approval, and how reviews work",
  params: permissionsSchema(),
  writes: true,
  confirmRecent: true,
  audience: toAgentManagers("setting"),
  available: peopleOnly,
  current: (scope) => permissionsOf(agentConfig(scope.agent)),
  async execute(ctx, params, scope) {
    const granted = GRANTABLE.filter((a) => params[a] !== "off");
    const reviewed = GRANTABLE.filter((a) => params[a] === "approval");
    // The workspace keeps these for people: no owner may grant them (settings/agents).
    const humanOnly = tenantSettings(ctx.tenant).human_only;
    const refused = granted.filter((a) => humanOnly.includes(a));
    if (refused.length)
      throw new ValidationError(refused.map((field) => ({ field, message: HUMAN_ONLY_WHY })));
    const location = await saveConfig(ctx, scope.agent, (config) => {
      // Connected tools are granted one by one beside this form (tool-grants.ts): kept as they are.
      const tools = (list: unknown) => (Array.isArray(list) ? list.filter((n) => isToolName(String(n))) : []);
      config.capabilities = [...granted, ...tools(config.capabilities)];
      config.requires_approval = [...reviewed, ...tools(config.requires_approval)];
      config.approval_mode = params.approval_mode;
      config.approval_expiry_hours = params.approval_expiry_hours;
    });
    return {
      status: 200,
      location,
      notice: `Saved: it may use ${granted.length} of ${GRANTABLE.length} content actions, ${reviewed.length} of them after your approval`,
    };
  },
});

// `call_tool` is judged as the tool it calls: a rule names the tool (`<connection>__<tool>`).
const RULE_ACTIONS = ["*", ...GRANTABLE, ...ALWAYS_ALLOWED.filter((a) => a !== "call_tool")] as [
  string,
  ...string[],
];

/** A rule's action: one of the workspace's, `*`, or a connected tool's name (the form lists the first). */
const ruleAction = z.union([
  z.enum(RULE_ACTIONS),
  z.string().refine(isToolName, "an action's name, * or a connected tool's (<connection>__<tool>)"),
]);

/** The params a rule on `action` can look at: the action's own, or for `*`, those of any action a rule can name. */
function ruleParams(ctx: Pick<PageCtx, "actionDefs">, action: string): string[] {
  const names = action === "*" ? RULE_ACTIONS.slice(1) : [action];
  const params = names.flatMap((n) => Object.keys(ctx.actionDefs.get(n)?.params.shape ?? {}));
  return [...new Set(params)].sort();
}

/**
 * `param=pattern` lines → a map. Each pattern is compiled now (RE2: lib/rule-pattern.ts) and
 * each param checked against the action's, so a rule that cannot run or never looks at what
 * it names is a 400 when saved (or tried), not a surprise later.
 */
export function parsePatterns(
  ctx: Pick<PageCtx, "actionDefs">,
  action: string,
  textValue: string | undefined,
  field = "param_patterns",
): Record<string, string> {
  const out: Record<string, string> = {};
  const bad = (line: number, message: string) =>
    new ValidationError([{ field, message: `line ${line}: ${message}` }]);
  // A tool's arguments are its server's to say, and may change under review: any name a JSON
  // Schema property could have is taken.
  const tool = isToolName(action);
  const valid = tool ? [] : ruleParams(ctx, action);
  for (const [index, raw] of (textValue ?? "").split(/\r\n|\r|\n/).entries()) {
    const line = raw.trim();
    const lineNumber = index + 1;
    if (!line) continue;
    const equals = line.indexOf("=");
    const name = equals > 0 ? line.slice(0, equals).trim() : "";
    const pattern = equals > 0 ? line.slice(equals + 1).trim() : "";
    if (!(tool ? /^[A-Za-z0-9_-]{1,64}$/ : /^[a-z_]{1,64}$/).test(name) || !pattern)
      throw bad(lineNumber, "write param=regex, e.g. text=(?i)budget");
    if (!tool && !valid.includes(name)) {
      const listed = valid.length ? valid.join(", ") : "none";
      throw bad(
        lineNumber,
        action === "*"
          ? `no action a rule can name has a param “${name}”; their params: ${listed}`
          : `\`${action}\` has no param “${name}”; its params: ${listed}`,
      );
    }
    if (pattern.length > 200) throw bad(lineNumber, "regex longer than 200");
    try {
      compilePattern(pattern);
    } catch (err) {
      throw bad(lineNumber, (err as Error).message);
    }
    out[name] = pattern;
  }
  return out;
}

/** What a rule is, for adding one and for trying one first. */
const ruleFields = {
  action: ruleAction.describe("which action (or connected tool, <connection>__<tool>), or * for all"),
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
};

/**
 * Shows what a rule would have done to the agent's actions of the last 30 days, before it is
 * added: the settings page, with the rule in its address, computes it (agents/policy/backtest.ts).
 */
export const tryRule = defineAction({
  name: "try_rule",
  needs: ["agent"],
  description: "Try a rule on the agent's actions of the last 30 days, without saving it",
  params: z.object(ruleFields),
  writes: false,
  available: peopleOnly,
  async execute(ctx, params, scope) {
    parsePatterns(ctx, params.action, params.param_patterns);
    const { agent } = scope;
    const tried = new URLSearchParams({
      try_action: params.action,
      try_decision: params.decision,
      ...(params.param_patterns && { try_patterns: params.param_patterns }),
      ...(params.position && { try_position: String(params.position) }),
    });
    return {
      status: 200,
      // A browser lands on the result, under the form that tried it (pages/agent-settings.ts).
      location: `/subagents/${agent.handle}/settings?${tried}#tried`,
      notice: "What this rule would have done is below; nothing was saved",
    };
  },
});

/** What an agent's rules cost to match, in RE2 instructions (a pattern saved before RE2 that cannot run: none). */
export function rulesSize(rules: Rule[]): number {
  let size = 0;
  for (const rule of rules)
    for (const pattern of Object.values(rule.params))
      try {
        size += patternSize(pattern);
      } catch {}
  return size;
}

export const addRule = defineAction({
  name: "add_rule",
  needs: ["agent"],
  description: "Add a policy rule (the first rule that matches decides)",
  params: z.object({ name: text(80), ...ruleFields }),
  writes: true,
  confirmRecent: true,
  audience: toAgentManagers("rule"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const rule: Rule = {
      name: params.name,
      action: params.action,
      decision: params.decision,
      params: parsePatterns(ctx, params.action, params.param_patterns),
    };
    const location = await saveConfig(ctx, scope.agent, (config) => {
      const rules = [...((config.rules as Rule[]) ?? [])];
      if (rules.some((r) => r.name === rule.name))
        throw new ConflictError(`A rule named “${rule.name}” already exists`);
      // Every action an agent takes is matched against its rules: their total cost is bounded too.
      const size = rulesSize([...rules, rule]);
      if (size > MAX_RULES_SIZE)
        throw new ValidationError([
          {
            field: "param_patterns",
            message: `the agent's patterns together would be ${size} steps to match, at most ${MAX_RULES_SIZE}: remove a rule or simplify`,
          },
        ]);
      rules.splice(Math.min((params.position ?? rules.length + 1) - 1, rules.length), 0, rule);
      config.rules = rules;
    });
    return { status: 200, location, notice: `Rule “${rule.name}” added` };
  },
});

export const removeRule = defineAction({
  name: "remove_rule",
  needs: ["agent"],
  destructive: "The rule no longer decides what the agent may do.",
  description: "Remove a policy rule",
  params: z.object({ name: text(80).meta({ label: "Rule", pickedBeside: true }) }),
  writes: true,
  confirmRecent: true,
  audience: toAgentManagers("rule"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const location = await saveConfig(ctx, scope.agent, (config) => {
      const rules = (config.rules as Rule[]) ?? [];
      if (!rules.some((r) => r.name === params.name))
        throw new NotFoundError(`No rule named “${params.name}”`);
      config.rules = rules.filter((r) => r.name !== params.name);
    });
    return { status: 200, location, notice: `Rule “${params.name}” removed` };
  },
});
