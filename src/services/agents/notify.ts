// Tells an agent's owner when it needs them: a question, an action to review, its spend.
import type { PrismaClient } from "../../db/prisma.ts";
import type { Event } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import { usd } from "../money/pricing.ts";

export async function notifyOwnerOfRun(db: PrismaClient, e: Event): Promise<number> {
  const run = await db.subagentTaskRun.findUnique({ where: { id: e.subjectId }, include: { agent: true } });
  if (!run?.agent.parentId) return 0;
  const res = await db.notification.createMany({
    data: [
      {
        id: newId(),
        tenantId: run.tenantId,
        userId: run.agent.parentId,
        actorId: run.agentId,
        eventId: e.id,
        kind: "agent",
        path: `/subagents/${run.agent.handle}/runs/${run.id}`,
        excerpt: `asks: ${run.question ?? ""}`.slice(0, 500),
      },
    ],
    skipDuplicates: true,
  });
  return res.count;
}

export async function notifyOwnerOfApproval(db: PrismaClient, e: Event): Promise<number> {
  const p = await db.agentPendingAction.findUnique({ where: { id: e.subjectId }, include: { agent: true } });
  if (!p?.agent.parentId) return 0;
  const res = await db.notification.createMany({
    data: [
      {
        id: newId(),
        tenantId: p.tenantId,
        userId: p.agent.parentId,
        actorId: p.agentId,
        eventId: e.id,
        kind: "agent",
        path: `/subagents/${p.agent.handle}/pending/${p.id}`,
        excerpt: `wants to ${p.actionName} on ${p.pagePath}${p.reason ? `: ${p.reason}` : ""}`.slice(0, 500),
      },
    ],
    skipDuplicates: true,
  });
  return res.count;
}

/** A spend threshold crossed, the agent paused at its limit, or resumed by a new month: its owner hears once (one event each). */
export async function notifyOwnerOfSpend(db: PrismaClient, e: Event): Promise<number> {
  const agent = await db.user.findUnique({ where: { id: e.subjectId } });
  if (!agent?.parentId) return 0;
  const p = e.payload as {
    threshold_micros?: number;
    spent_micros?: number;
    limit_micros?: number;
    month?: string;
  };
  const spent = usd(p.spent_micros ?? 0);
  const limit = usd(p.limit_micros ?? 0);
  const excerpt =
    e.type === "agent.paused"
      ? `was paused: it reached its monthly cost limit (${spent} spent of ${limit} in ${p.month}). Raise the limit or resume it.`
      : e.type === "agent.resumed"
        ? `runs again: a new month (${p.month}) began, and its cost limit counts from zero.`
        : `has spent ${spent} in ${p.month}, past your ${usd(p.threshold_micros ?? 0)} alert (limit ${limit}).`;
  const res = await db.notification.createMany({
    data: [
      {
        id: newId(),
        tenantId: agent.tenantId,
        userId: agent.parentId,
        actorId: agent.id,
        eventId: e.id,
        kind: "agent",
        path: `/subagents/${agent.handle}/usage`,
        excerpt,
      },
    ],
    skipDuplicates: true,
  });
  return res.count;
}
