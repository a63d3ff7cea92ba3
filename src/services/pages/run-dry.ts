// What a dry run's page says of it (docs/testing-agents.md): that nothing it wrote was done,
// and, in place of the resources a live run created, each write it chose with what the
// policy would have made of it (registry/rehearsal.ts records that on the step).
import { code, mdEscape } from "../registry/markdown.ts";
import type { Block, DryDecision, Rehearsed } from "../registry/types.ts";

type StepRow = { number: number; detail: unknown };

const DECISION_WORDS: Record<DryDecision, string> = {
  allowed: "would have run",
  held: "would have waited for approval",
  disclosure: "would have waited for approval: a disclosure",
  refused: "would have been refused",
};

/** A step's would-be outcome in words: "would have waited for approval (rule “x”)". */
export function wouldHave(rehearsed: Rehearsed): string {
  const rule = rehearsed.rule && rehearsed.decision === "held" ? ` (${mdEscape(rehearsed.rule)})` : "";
  return `**${DECISION_WORDS[rehearsed.decision]}**${rule}`;
}

/** The step's record of a dry run's action, when it is one. */
export function rehearsedOf(step: Pick<StepRow, "detail">): Rehearsed | null {
  const dry = (step.detail as { dry?: Rehearsed } | null)?.dry;
  return dry && typeof dry === "object" && typeof dry.decision === "string" ? dry : null;
}

export const DRY_NOTE =
  "**A dry run.** It read pages as it would have; every write it chose was judged by its rules and recorded below, and none was done.";

/** The banner and the list of what it would have done, in place of the resources it made. */
export function dryBlocks(steps: StepRow[]): Block[] {
  const lines = steps.flatMap((step) => {
    const rehearsed = rehearsedOf(step);
    if (!rehearsed) return [];
    const action = (step.detail as { action?: unknown }).action;
    return [`- step ${step.number}: ${code(String(action))} ${wouldHave(rehearsed)}`];
  });
  return [
    { md: DRY_NOTE },
    {
      md: `## What it would have done (${lines.length})\n\n${lines.join("\n") || "_Nothing: it wrote nothing._"}`,
    },
  ];
}
