// Where a replay's first live step starts (agents/triggers/replay.ts): the page, feedback,
// mode and prompt budget the original had at the branching step, as its records keep them.
// The copied steps give the same memory; with these the first prompt is the original's to
// the byte (its fingerprint says so), even when the page has changed since (the original's
// own comment now on it, say). Its actions are the live page's: the model acts on now.
import type { PrismaClient } from "../../../db/prisma.ts";
import type { SubagentTaskRunStep } from "../../../generated/prisma/client.ts";
import type { ClaimedRun } from "../core/run-start.ts";
import type { PromptFacts } from "../core/steps.ts";
import { pageBefore } from "../prompt/step-prompt.ts";

export interface ReplaySeed {
  page: { path: string; markdown: string };
  /** Whether a step row holds that page (else the first step's prompt facts keep it, as the original's did). */
  pageRecorded: boolean;
  feedback?: string;
  json: boolean;
  budget: number;
}

/** The seed of a replay that has not taken a live step yet; null for any other run. */
export async function replaySeed(
  prisma: PrismaClient,
  run: ClaimedRun,
  copied: SubagentTaskRunStep[],
): Promise<ReplaySeed | null> {
  const from = run.replayFromStep;
  if (!run.replayOfRunId || from === null || run.stepsCount !== from - 1) return null;
  const branch = await prisma.subagentTaskRunStep.findUnique({
    where: { runId_number: { runId: run.replayOfRunId, number: from } },
  });
  const facts = (branch?.detail as { prompt?: PromptFacts } | null)?.prompt;
  const page = facts && pageBefore(copied, facts);
  if (!facts || !page) return null;
  return {
    page,
    pageRecorded: !facts.page,
    ...(facts.feedback && { feedback: facts.feedback }),
    json: Boolean(facts.json),
    budget: facts.budget,
  };
}
