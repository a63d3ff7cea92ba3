// A dry run's action (docs/testing-agents.md): judged exactly as it would be, then never run.
// The policy runs in a transaction as it would (it queues what it would queue, records the
// refusal it would record), and that transaction is rolled back: nothing it wrote stays, and
// the action's own `execute` is never called, so no content table, event or outside service
// ever sees it. What it would have done is the outcome, and the run's step records that (with
// the params the model chose) in a transaction of its own.
import type { Db } from "../../db/prisma.ts";
import { ForbiddenError } from "../../lib/errors.ts";
import type { ActionDef, ActionOutcome, Ctx, DryDecision, Rehearsed } from "./types.ts";

/** The policy's answer for one action, inside the transaction it would have run in. */
export type Judge = (tx: Db) => Promise<ActionOutcome | null>;

class RolledBack extends Error {}

async function judged(ctx: Ctx, judge: Judge): Promise<Rehearsed> {
  let rehearsed: Rehearsed | undefined;
  try {
    await ctx.db.$transaction(async (tx) => {
      try {
        const held = await judge(tx);
        const rule = held?.pending?.rule;
        rehearsed = !held
          ? { decision: "allowed" }
          : { decision: rule === "disclosure" ? "disclosure" : "held", ...(rule && { rule }) };
      } catch (err) {
        if (!(err instanceof ForbiddenError)) throw err;
        rehearsed = { decision: "refused", reason: err.message };
      }
      throw new RolledBack();
    });
  } catch (err) {
    if (!(err instanceof RolledBack)) throw err;
  }
  return rehearsed!;
}

const WOULD: Record<DryDecision, string> = {
  allowed: "It would have run",
  held: "It would have been queued for its managers' approval",
  disclosure:
    "It would have been queued for approval: it would show what this run read to people who cannot read it",
  refused: "It would have been refused",
};

/** What asked for the review, in words: a rule by its name, or the policy's own reasons. */
const ruleWords = (rule: string) =>
  rule === "requires_approval"
    ? "its approval list"
    : rule === "connection_owner"
      ? "the connection's owner decides"
      : `rule “${rule}”`;

/** The words the run reads back: nothing was done, and what would have happened. */
function notice(action: ActionDef, rehearsed: Rehearsed): string {
  const { decision, rule, reason } = rehearsed;
  const why =
    decision === "refused" ? `: ${reason}` : decision === "held" && rule ? ` (${ruleWords(rule)}).` : ".";
  return `Dry run: \`${action.name}\` was not done. ${WOULD[decision]}${why}`;
}

/** A dry run's action: its policy's decision, and its step recorded by `record`; nothing executed. */
export async function rehearse(
  ctx: Ctx,
  path: string,
  action: ActionDef,
  judge: Judge,
  record?: (tx: Db, outcome: ActionOutcome) => Promise<void>,
): Promise<ActionOutcome> {
  const rehearsed = await judged(ctx, judge);
  const outcome: ActionOutcome = {
    status: 200,
    location: path,
    notice: notice(action, rehearsed),
    ...(rehearsed.decision === "refused" && { warning: true }),
    rehearsed,
  };
  if (record) await ctx.db.$transaction((tx) => record(tx, outcome));
  return outcome;
}
