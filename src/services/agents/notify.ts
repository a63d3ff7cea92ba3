// Tells an agent's owner when a run needs them (it asked a question).
import type { PrismaClient } from "../../db/prisma.ts";
import type { Event } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";

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
