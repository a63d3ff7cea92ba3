// Fires due schedules. Every worker's sweeper calls this; each schedule is claimed with
// FOR UPDATE SKIP LOCKED and, in the same transaction, its run is queued (through the
// guards every trigger shares) and its next fire time moved past now. So each slot yields
// one run however many workers sweep at once, a rolled-back transaction (a dropped
// connection) leaves the schedule due for the next sweep, and after downtime a schedule
// fires once for the latest missed slot, not once per slot. The run's trigger key
// (`schedule:<id>:<slot>`) is unique per agent: a second guarantee of one run per slot.
import { type Db, hotQuery, type PrismaClient } from "../../../db/prisma.ts";
import { Prisma } from "../../../generated/prisma/client.ts";
import { isTransient } from "../../../lib/transient.ts";
import { agentConfig, resolveModel, tenantSettings } from "../core/settings.ts";
import { queueTriggered } from "../triggers/dispatcher.ts";
import { noticeRefused } from "../triggers/refusals.ts";
import { nextSlot, scheduledTask } from "./schedules.ts";

/** Schedules fired per sweep at most: the rest wait for the next sweep, a few seconds later. */
const BATCH = 100;

export interface FireResult {
  fired: number;
  /** Schedules that failed for a lasting reason; skipped for the rest of this sweep. */
  failed: number;
}

export async function fireDueSchedules(db: PrismaClient, batch = BATCH): Promise<FireResult> {
  const failed: string[] = [];
  let fired = 0;
  // Most sweeps find nothing due: one read on the pool (the partial index), not a transaction;
  // on pg's own query path, where a connection dropped under it is an error, not a crash.
  const [due] = await hotQuery<{ any: boolean }>(
    db,
    Prisma.sql`SELECT EXISTS (SELECT 1 FROM agent_schedules WHERE enabled AND next_fire_at <= now()) AS any`,
  );
  if (!due?.any) return { fired, failed: 0 };
  while (fired + failed.length < batch) {
    let current: string | null = null;
    try {
      current = await db.$transaction(async (tx) => {
        const [row] = await tx.$queryRaw<{ id: string }[]>`
          SELECT id FROM agent_schedules
          WHERE enabled AND next_fire_at <= now() AND id <> ALL(${failed}::text[])
          ORDER BY next_fire_at LIMIT 1 FOR UPDATE SKIP LOCKED`;
        if (!row) return null;
        current = row.id;
        await fireOne(tx, row.id);
        return row.id;
      });
    } catch (err) {
      // A passing fault delays the schedule to the next sweep (nothing was written); any
      // other would fail the same way again, so this sweep moves on to the others.
      if (isTransient(err) || !current) throw err;
      failed.push(current);
      continue;
    }
    if (!current) break;
    fired++;
  }
  return { fired, failed: failed.length };
}

/** Queues the run for the schedule's due slot (the claim holds its row lock) and advances it. */
async function fireOne(tx: Db, id: string): Promise<void> {
  const s = await tx.agentSchedule.findUniqueOrThrow({
    where: { id },
    include: { agent: true, tenant: true },
  });
  const slot = s.nextFireAt!;
  const now = new Date();
  // Strictly after now, not after the slot: missed slots are skipped, so catch-up is one run.
  const next = nextSlot(s.cron, s.timeZone, now > slot ? now : slot);
  const settings = tenantSettings(s.tenant);
  // An archived agent is not woken: its schedules only advance. With agents switched off the
  // slot's run is recorded as skipped (queueTriggered), so its managers see what did not run.
  if (s.agent.archivedAt) {
    await tx.agentSchedule.update({ where: { id }, data: { nextFireAt: next } });
    return;
  }
  const cfg = agentConfig(s.agent);
  const triggerEventId = `schedule:${s.id}:${slot.toISOString()}`;
  await queueTriggered(
    tx,
    s.agent,
    settings,
    {
      tenantId: s.tenantId,
      agentId: s.agentId,
      initiatedById: s.createdById,
      triggerEventId,
      triggerKind: "schedule",
      triggerRef: s.id,
      chainDepth: 0,
      task: scheduledTask(s.task, slot, s.timeZone),
      model: resolveModel(cfg, settings, undefined),
      maxSteps: cfg.max_steps,
      timeoutSeconds: cfg.timeout_seconds,
    },
    // The schedule's own minimum interval is its limit; a burst of events must not starve it.
    { rateLimited: false },
  );
  // Queued or recorded as skipped (a paused agent): either way it is this slot's run.
  const run = await tx.subagentTaskRun.findUnique({
    where: { agentId_triggerEventId: { agentId: s.agentId, triggerEventId } },
    select: { id: true, status: true },
  });
  // Skipped: its managers (and the schedule's creator) hear why, with the run to retry.
  if (run?.status === "skipped")
    await noticeRefused(tx, s.agent, { triggerEventId, personId: s.createdById, kind: "schedule" });
  await tx.agentSchedule.update({
    where: { id },
    data: { nextFireAt: next, lastFiredAt: slot, lastRunId: run?.id ?? null },
  });
}
