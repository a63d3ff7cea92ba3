// A skipped run (its agent was paused or archived, or too many of its triggers were already
// waiting) retried by one of its managers: the same trigger, task and initiator, queued
// through the same guards as any trigger, as a new run keyed `retry:<skipped run>`, so it is
// retried once however often the button is pressed. The skipped run stays, saying why it
// did not run then and linking to its retry.
import type { Db } from "../../../db/prisma.ts";
import type { SubagentTaskRun, Tenant, User } from "../../../generated/prisma/client.ts";
import { ConflictError } from "../../../lib/errors.ts";
import { parseLabel } from "../../registry/audiences.ts";
import type { QueuedRun } from "../core/runs.ts";
import { tenantSettings } from "../core/settings.ts";
import { queueTriggered } from "./dispatcher.ts";

export const retryKey = (skipped: Pick<SubagentTaskRun, "id">) => `retry:${skipped.id}`;

export async function retrySkipped(
  tx: Db,
  tenant: Pick<Tenant, "settings">,
  agent: Pick<User, "id" | "handle" | "pausedAt" | "pausedReason" | "archivedAt">,
  skipped: SubagentTaskRun,
): Promise<QueuedRun> {
  // Said here, as a 409, rather than recorded as one more skipped run.
  if (agent.archivedAt) throw new ConflictError(`@${agent.handle} is archived: unarchive it, then retry.`);
  if (agent.pausedAt) throw new ConflictError(`@${agent.handle} is paused: resume it, then retry.`);
  const settings = tenantSettings(tenant);
  if (!settings.agents_enabled) throw new ConflictError("Agents are switched off in this workspace.");
  const done = await tx.subagentTaskRun.findUnique({
    where: { agentId_triggerEventId: { agentId: agent.id, triggerEventId: retryKey(skipped) } },
    select: { id: true },
  });
  if (done) throw new ConflictError(`Already retried as run ${done.id}.`);
  const queued = await queueTriggered(tx, agent, settings, {
    tenantId: skipped.tenantId,
    agentId: agent.id,
    initiatedById: skipped.initiatedById,
    triggerEventId: retryKey(skipped),
    triggerKind: skipped.triggerKind,
    triggerRef: skipped.triggerRef ?? undefined,
    threadId: skipped.threadId ?? undefined,
    // A manager decided to run it: a chain of agents answering each other starts again.
    chainDepth: 0,
    task: skipped.task,
    // The same words, woken by the same person: it carries what the skipped run would have.
    label: parseLabel(skipped.label),
    viewerIds: skipped.viewerIds,
    model: skipped.model,
    maxSteps: skipped.maxSteps,
    timeoutSeconds: skipped.timeoutSeconds,
    dry: skipped.dry,
  });
  // Refused again (too many waiting still): the action's transaction rolls that record back.
  if (!queued)
    throw new ConflictError(
      "Too many of its triggers are still waiting for its rate: retry once some have run.",
    );
  return queued;
}
