// The acting pipeline for subagents, after the action's own checks:
//   capabilities — may this agent use this action at all (and could its owner)?
//   policy rules — ordered, first match decides: allow, require approval, or deny;
//                  no match: the agent's `requires_approval` list, else allow.
// The guard runs when pages list actions and again when one executes; the policy runs
// at execution, when the params are known.
import type { Db } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import { ForbiddenError } from "../../../lib/errors.ts";
import { newId } from "../../../lib/ids.ts";
import { paramText, patternFinds } from "../../../lib/rule-pattern.ts";
import { emit } from "../../events.ts";
import type { Guard, Policy, RunOptions } from "../../registry/registry.ts";
import type {
  ActionCtx,
  ActionDef,
  ActionOutcome,
  AgentRow,
  Ctx,
  Scope,
  Standing,
} from "../../registry/types.ts";
import { ownerCeilingSql } from "../core/ownership.ts";
import {
  type AgentConfig,
  configUnder,
  type Rule,
  sharedAgentConfig,
  tenantSettings,
} from "../core/settings.ts";
import { capabilityDenial } from "./capabilities.ts";
import { disclosure, disclosureText } from "./labels.ts";

export type Verdict = { kind: "allow"; rule?: string } | { kind: "deny" | "approve"; rule: string };

/** Whether a rule applies: its action, its studio if it names one, and each of its param patterns found in the value (as text). */
export function ruleMatches(
  rule: Rule,
  action: string,
  params: Record<string, unknown>,
  studio?: string | null,
): boolean {
  if (rule.action !== "*" && rule.action !== action) return false;
  if (rule.studio && rule.studio !== studio) return false;
  return Object.entries(rule.params).every(([name, pattern]) => {
    try {
      return patternFinds(pattern, paramText(params[name]));
    } catch {
      // A pattern saved before rules were matched by RE2 (lookaround, a backreference) cannot
      // run: a rule that holds the agent back still does, one that lets it through does not.
      return rule.decision !== "allow";
    }
  });
}

export function decide(
  cfg: Pick<AgentConfig, "rules" | "requires_approval">,
  action: string,
  params: Record<string, unknown>,
  studio?: string | null,
): Verdict {
  const rule = cfg.rules.find((r) => ruleMatches(r, action, params, studio));
  if (rule)
    return rule.decision === "allow"
      ? { kind: "allow", rule: rule.name }
      : { kind: rule.decision === "deny" ? "deny" : "approve", rule: rule.name };
  if (cfg.requires_approval.includes(action)) return { kind: "approve", rule: "requires_approval" };
  return { kind: "allow" };
}

// One lookup per request for the agent row and its owner's memberships, or none when
// the caller already has them (a run's navigator holds its agent; loading a studio
// reads the owner's membership with the agent's).
const agents = new WeakMap<Ctx, Promise<AgentRow>>();

/**
 * The configuration a run's actions are judged by, parsed once per stored object (a page
 * lists several actions, each guarded): the agent's, or for a replay under the rules its
 * original ran under (triggers/replay.ts), that policy over the agent's.
 */
export function judgedConfig(ctx: Ctx, raw: AgentRow["agentConfig"]): AgentConfig {
  const pin = ctx.run?.pinnedPolicy;
  return pin && typeof pin === "object" ? pinnedConfig(pin, raw) : sharedAgentConfig(raw);
}
const configOf = (ctx: Ctx, agent: AgentRow) => judgedConfig(ctx, agent.agentConfig);

// A pinned run's policy over the agent's stored configuration, parsed again only when that changes.
const pinned = new WeakMap<object, { raw: AgentRow["agentConfig"]; cfg: AgentConfig }>();
function pinnedConfig(pin: object, raw: AgentRow["agentConfig"]): AgentConfig {
  const last = pinned.get(pin);
  if (last?.raw === raw) return last.cfg;
  const cfg = configUnder(raw, pin);
  pinned.set(pin, { raw, cfg });
  return cfg;
}

/** The agent row this request acts as: the caller's (a run's step, as fresh as it needs), or read once per context. */
function agentOf(ctx: Ctx, db: Db = ctx.db): Promise<AgentRow> {
  const primed = ctx.primed?.agent;
  if (primed?.id === ctx.actor.id) return Promise.resolve(primed);
  let agentRow = agents.get(ctx);
  if (!agentRow) {
    agentRow = db.user.findUniqueOrThrow({
      where: { id: ctx.actor.id },
      select: { id: true, parentId: true, ownerStudioId: true, agentConfig: true },
    });
    agents.set(ctx, agentRow);
  }
  return agentRow;
}

const memberships = new WeakMap<Ctx, Map<string, Promise<{ role: string } | null>>>();
function membershipsOf(ctx: Ctx) {
  let byStudio = memberships.get(ctx);
  if (!byStudio) {
    byStudio = new Map();
    memberships.set(ctx, byStudio);
  }
  return byStudio;
}

/** What the agent's owner makes it at most in a studio (null: nothing), read with the studio. */
export function primeOwnerMembership(ctx: Ctx, studioId: string, ceiling: { role: string } | null) {
  membershipsOf(ctx).set(studioId, Promise.resolve(ceiling));
}

function ownerCeiling(ctx: Ctx, studioId: string) {
  const byStudio = membershipsOf(ctx);
  let ceiling = byStudio.get(studioId);
  if (!ceiling) {
    ceiling = ctx.db.$queryRaw<{ role: string | null }[]>`
        SELECT ${ownerCeilingSql(Prisma.sql`${ctx.actor.id}`, Prisma.sql`${studioId}`)} AS role`.then(
      ([row]) => (row?.role ? { role: row.role } : null),
    );
    byStudio.set(studioId, ceiling);
  }
  return ceiling;
}

export const agentGuard: Guard = async (ctx, action, scope) => {
  if (ctx.actor.kind !== "subagent") return null;
  const agent = await agentOf(ctx);
  const denial = capabilityDenial(
    action.name,
    configOf(ctx, agent).capabilities,
    tenantSettings(ctx.tenant).human_only,
  );
  if (denial) return denial;
  if (!scope.studio) return null;
  // Never more than its owner could do: a person owner must be in the studio, a studio's agent
  // acts only in its own studio and as a member there; the agent acts with the lesser role.
  const owner = await ownerCeiling(ctx, scope.studio.id);
  if (!owner)
    return agent.ownerStudioId
      ? "it belongs to another studio and acts only there"
      : "its owner is not a member of this studio";
  if (owner.role === "admin" || scope.studio.role === "member") return null;
  const reason = action.available?.(ctx, { ...scope, studio: { ...scope.studio, role: "member" } });
  if (!reason) return null;
  return agent.ownerStudioId
    ? `it acts as a member here, and ${reason}`
    : `its owner could not do this either: ${reason}`;
};

export const agentPolicy: Policy = async (actx, action, params, scope, path, opts) => {
  if (actx.actor.kind !== "subagent") return null;
  // In the action's transaction, never beside it: a transaction that waits for a second
  // pooled connection can starve the pool in a burst until every transaction expires.
  const agent = await agentOf(actx, actx.tx);
  const cfg = configOf(actx, agent);
  // A tool call is judged as the tool it calls, with the tool's arguments (actions/tool-calls.ts).
  const standing = await action.standsFor?.(actx, params, scope);
  if (standing?.refused) throw new ForbiddenError(standing.refused);
  const judged = standing?.name ?? action.name;
  const verdict = decide(cfg, judged, standing?.params ?? params, scope.studio?.handle);
  if (verdict.kind === "deny")
    throw new ForbiddenError(
      `\`${judged}\` is denied by the rule “${verdict.rule}”; try something else or finish.`,
    );
  // Whatever its own rules allow, an agent never shows content to people who cannot read it.
  const disclosed = await disclosureOf(actx, action, params, scope, standing);
  if (disclosed) return hold(actx, agent, cfg, { action, params, path, opts, rule: "disclosure", disclosed });
  // Someone else's credentials in a run they did not wake: theirs to allow (tool-grants.ts).
  if (standing?.review)
    return hold(actx, agent, cfg, {
      action,
      params,
      path,
      opts,
      rule: "connection_owner",
      disclosed: standing.review,
    });
  if (verdict.kind === "allow") return null;
  return hold(actx, agent, cfg, { action, params, path, opts, rule: verdict.rule });
};

/** The words of the approval request when this write would disclose the run's content; null when it stays inside its label. */
async function disclosureOf(
  actx: ActionCtx,
  action: ActionDef,
  params: Record<string, unknown>,
  scope: Scope,
  standing?: Standing,
): Promise<string | null> {
  const label = actx.flow?.label() ?? [];
  if (!action.writes || !action.audience || !label.length) return null;
  const write = standing?.audience ?? action.audience.to(actx, scope, params);
  const disclosed = await disclosure(actx.tx, actx.tenant.id, actx.actor.id, write, label);
  const what = standing?.what ?? action.audience.what;
  return disclosed && disclosureText(actx.tx, actx.tenant.id, what, write, disclosed, standing?.where);
}

interface Held {
  action: ActionDef;
  params: Record<string, unknown>;
  path: string;
  opts: RunOptions;
  /** The rule that asked for review: a rule's name, `requires_approval` or `disclosure`. */
  rule: string;
  disclosed?: string;
}

/** Queues the action for its managers' review instead of running it. */
async function hold(actx: ActionCtx, agent: AgentRow, cfg: AgentConfig, held: Held): Promise<ActionOutcome> {
  const id = newId();
  const run = actx.run
    ? await actx.tx.subagentTaskRun.findUnique({ where: { id: actx.run.id }, select: { task: true } })
    : null;
  const waits = Boolean(actx.run) && cfg.approval_mode === "wait";
  await actx.tx.agentPendingAction.create({
    data: {
      id,
      tenantId: actx.tenant.id,
      runId: actx.run?.id ?? null,
      agentId: agent.id,
      actionName: held.action.name,
      params: held.params as object,
      pagePath: held.path,
      contextSummary: run ? run.task.slice(0, 600) : "Called with the agent's API token, outside a run.",
      reason: (held.opts.reason ?? "").slice(0, 2000),
      matchedRule: held.rule,
      disclosure: held.disclosed ?? null,
      waits,
      expiresAt: new Date(Date.now() + cfg.approval_expiry_hours * 3600_000),
    },
  });
  await emit(actx, { type: "approval.requested", subjectType: "pending_action", subjectId: id });
  const reviewer = agent.ownerStudioId ? "an admin of your studio" : "your owner";
  // The disclosure is a sentence of its own: what follows it starts one.
  const decides = held.disclosed
    ? `${held.disclosed} ${reviewer.charAt(0).toUpperCase()}${reviewer.slice(1)} decides whether it may`
    : `${reviewer} reviews it`;
  return {
    status: 202,
    location: held.path,
    notice: `Queued for approval as #${id}: ${decides}${waits ? "; this run waits for the outcome" : ""}.`,
    pending: { id, waits, rule: held.rule },
  };
}
