// Two parts of a run's page: who paused it (pause_run), and the scratchpad entries it wrote,
// linked to the agent's memory page (managers only, as that page is).
import type { SubagentTaskRun } from "../../generated/prisma/client.ts";
import { link, mdEscape } from "../registry/markdown.ts";
import type { Block, Ctx } from "../registry/types.ts";
import { entriesOfRun } from "../scratchpad.ts";
import { excerpt, when } from "./format.ts";

/** "Paused by Alice", and what resuming keeps; nothing for a run that is not paused. */
export async function pausedBlocks(ctx: Ctx, run: SubagentTaskRun): Promise<Block[]> {
  if (run.status !== "paused") return [];
  const pausedBy = run.pausedById
    ? await ctx.db.user.findFirst({
        where: { id: run.pausedById, tenantId: ctx.tenant.id },
        select: { name: true },
      })
    : null;
  return [
    {
      md: `## Paused by ${mdEscape(pausedBy?.name ?? "its owner")}\n\nPaused${run.pauseRequestedAt ? ` ${when(run.pauseRequestedAt)}` : ""}, between two steps. **Resume** continues it where it stopped, with what it remembers and the steps, cost and time it has left: time spent paused does not count against its timeout.`,
    },
  ];
}

/** The scratchpad entries the run wrote, each linked to its place in the agent's memory. */
export async function memoryBlocks(ctx: Ctx, handle: string, run: SubagentTaskRun): Promise<Block[]> {
  const entries = await entriesOfRun(ctx.db, run.id);
  if (!entries.length) return [];
  const lines = entries.map(
    (entry) =>
      `- ${link(`${entry.stepNumber ? `Step ${entry.stepNumber}` : "Scratchpad"}, ${when(entry.createdAt)}`, `/subagents/${handle}/memory#entry-${entry.id}`)}: ${mdEscape(excerpt(entry.text || "(cleared)", 120))}`,
  );
  return [{ md: `## Scratchpad entries it wrote (${entries.length})\n\n${lines.join("\n")}` }];
}
