// A rule tried before it is saved: what the agent's rules, with it in place, would have
// decided for every action the agent asked for in the last 30 days (its recorded steps).

import type { Db } from "../../../db/prisma.ts";
import { plural } from "../../../lib/plural.ts";
import { studioHandleOf } from "../../page-titles.ts";
import type { AgentConfig, Rule } from "../core/settings.ts";
import { decide, ruleMatches, type Verdict } from "./policy.ts";

export const BACKTEST_DAYS = 30;
/** The most recorded actions one backtest reads: a busy agent's month, newest first. */
const MAX_ACTIONS = 5000;
const EXAMPLES = 3;

type Outcome = "allowed" | "held" | "refused";

export interface Example {
  runId: string;
  step: number;
  action: string;
  at: Date;
  params: Record<string, unknown>;
}

export interface Backtest {
  days: number;
  total: number;
  /** How many the tried rule itself matches. */
  matched: number;
  /** How many the rules would decide differently than the rules in force. */
  changed: number;
  outcomes: Record<Outcome, { count: number; examples: Example[] }>;
}

const outcomeOf = (value: Verdict): Outcome =>
  value.kind === "allow" ? "allowed" : value.kind === "deny" ? "refused" : "held";

/** What `rule`, at `position` (1 = first; default last), would have done to the agent's recent actions. */
export async function backtest(
  db: Db,
  agentId: string,
  cfg: Pick<AgentConfig, "rules" | "requires_approval">,
  rule: Rule,
  position?: number,
): Promise<Backtest> {
  const since = new Date(Date.now() - BACKTEST_DAYS * 86_400_000);
  const steps = await db.$queryRaw<
    { run_id: string; number: number; detail: unknown; path: string | null; created_at: Date }[]
  >`
    SELECT s.run_id, s.number, s.detail, s.path, s.created_at FROM subagent_task_run_steps s
    JOIN subagent_task_runs r ON r.id = s.run_id
    WHERE r.agent_id = ${agentId} AND s.type = 'execute' AND s.created_at >= ${since}
      AND s.detail ? 'action'
    ORDER BY s.created_at DESC LIMIT ${MAX_ACTIONS}`;
  const rules = [...cfg.rules];
  rules.splice(Math.min((position ?? rules.length + 1) - 1, rules.length), 0, rule);
  const tried = { ...cfg, rules };
  const result: Backtest = {
    days: BACKTEST_DAYS,
    total: steps.length,
    matched: 0,
    changed: 0,
    outcomes: { allowed: empty(), held: empty(), refused: empty() },
  };
  for (const step of steps) {
    const detail = step.detail as { action: string; params?: Record<string, unknown> };
    const params = detail.params ?? {};
    const studio = studioHandleOf(step.path ?? "");
    const now = outcomeOf(decide(tried, detail.action, params, studio));
    if (ruleMatches(rule, detail.action, params, studio)) result.matched += 1;
    if (now !== outcomeOf(decide(cfg, detail.action, params, studio))) result.changed += 1;
    const outcome = result.outcomes[now];
    outcome.count += 1;
    if (outcome.examples.length < EXAMPLES)
      outcome.examples.push({
        runId: step.run_id,
        step: step.number,
        action: detail.action,
        at: step.created_at,
        params,
      });
  }
  return result;
}

const empty = () => ({ count: 0, examples: [] as Example[] });

/** The headline, in words: "Of 42 actions in the last 30 days, this rule matches 5; 3 would be decided differently." */
export function backtestSummary(backtest: Backtest): string {
  if (!backtest.total)
    return `The agent asked for no actions in the last ${backtest.days} days: nothing to try the rule on.`;
  return `Of ${plural(backtest.total, "action")} in the last ${backtest.days} days, this rule matches ${backtest.matched}; with it, ${backtest.changed} would be decided differently than today. Allowed ${backtest.outcomes.allowed.count}, held for approval ${backtest.outcomes.held.count}, refused ${backtest.outcomes.refused.count}.`;
}
