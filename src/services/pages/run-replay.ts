// A replay on the run page (agents/triggers/replay.ts): the steps it copied, folded, then the
// original and the replay side by side from the branching step (stacked on a narrow
// screen); on the original, which replays it has. Both runs are the same agent's, in the
// same tenant, so whoever may see one run page may see the other.
import type { SubagentTaskRun } from "../../generated/prisma/client.ts";
import { escapeHtml } from "../registry/html.ts";
import { link, mdEscape } from "../registry/markdown.ts";
import type { Block, Ctx } from "../registry/types.ts";
import { runPath, type StepRow, stepHtml, stepMarkdown, stepPath } from "./run-steps.ts";

type Run = Pick<
  SubagentTaskRun,
  "id" | "tenantId" | "agentId" | "replayOfRunId" | "replayFromStep" | "policyPinned"
>;

const under = (pinned: boolean) =>
  pinned ? "under the original run's rules" : "under the agent's rules when re-run";

/** Links to the replays of `r` and to the run `r` replays, for the run page's facts. */
export async function replayFacts(ctx: Ctx, handle: string, run: Run): Promise<string[]> {
  const replays = await ctx.db.subagentTaskRun.findMany({
    where: { tenantId: ctx.tenant.id, agentId: run.agentId, replayOfRunId: run.id },
    orderBy: { createdAt: "asc" },
    select: { id: true, replayFromStep: true, model: true, policyPinned: true },
  });
  const facts = replays.map(
    (replay) =>
      `re-run from step ${replay.replayFromStep} as ${link(`run ${replay.id}`, runPath(handle, replay.id))}${replay.model ? ` with \`${mdEscape(replay.model)}\`` : ""}, ${under(replay.policyPinned)}`,
  );
  if (run.replayOfRunId)
    facts.unshift(
      `replays ${link(`run ${run.replayOfRunId}`, runPath(handle, run.replayOfRunId))} from step ${run.replayFromStep}, ${under(run.policyPinned)}`,
    );
  return facts;
}

/** For a replay: its steps, the copied ones first, then the two runs side by side. Null for any other run. */
export async function replaySteps(
  ctx: Ctx,
  handle: string,
  run: Run,
  steps: StepRow[],
): Promise<Block[] | null> {
  const from = run.replayFromStep;
  if (!run.replayOfRunId || from === null) return null;
  const original = await ctx.db.subagentTaskRunStep.findMany({
    where: {
      runId: run.replayOfRunId,
      number: { gte: from },
      run: { tenantId: ctx.tenant.id, agentId: run.agentId },
    },
    orderBy: { number: "asc" },
  });
  const copied = steps.filter((s) => s.number < from);
  const live = steps.filter((s) => s.number >= from);
  const mine = (step: StepRow) => stepPath(handle, run.id, step.number);
  const theirs = (step: StepRow) => stepPath(handle, run.replayOfRunId!, step.number);
  const copiedHead = `Steps 1–${from - 1}, replayed from the original (${copied.length})`;
  const left = `The original, ${run.replayOfRunId}, from step ${from}`;
  const right = `This run from step ${from}`;
  return [
    {
      md: [`## ${copiedHead}`, ...copied.map((s) => stepMarkdown(s, mine(s)))].join("\n\n"),
      html: `<h2>${escapeHtml(copiedHead)}</h2>${copied.map((s) => stepHtml(s, mine(s), false)).join("")}`,
    },
    {
      md: [
        `## Side by side from step ${from}`,
        `### ${left}`,
        ...original.map((s) => stepMarkdown(s, theirs(s))),
        `### ${right}`,
        ...(live.length ? live.map((s) => stepMarkdown(s, mine(s))) : ["_No steps yet._"]),
      ].join("\n\n"),
      // The right column is the run's live list (#run-steps): steps that arrive live land there.
      html: `<h2 id="steps">${escapeHtml(`Side by side from step ${from}`)}</h2><div class="side-by-side"><section><h3>${escapeHtml(left)}</h3>${original
        .map((s) => stepHtml(s, theirs(s), true).replace(' id="step-', ' id="original-step-'))
        .join(
          "",
        )}</section><section><h3>${escapeHtml(right)}</h3><div id="run-steps">${live.map((s) => stepHtml(s, mine(s), true)).join("")}</div></section></div>`,
    },
  ];
}
