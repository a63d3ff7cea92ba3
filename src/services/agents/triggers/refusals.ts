// When a person @mentions an agent that will not answer (paused, at its cost limit, rate
// limited, or at the end of an agent-to-agent chain), the trigger is recorded as a skipped
// run, and the person who mentioned it and the agent's managers hear so here: once, not once
// per mention — while an earlier notice of the same agent is unread, no new one is added.
import type { PrismaClient } from "../../../db/prisma.ts";
import type { Event, User } from "../../../generated/prisma/client.ts";
import { emitEvent } from "../../events.ts";
import { insertNotifications } from "../../notifications.ts";
import { managersOf } from "../core/ownership.ts";

/** The event a notice hangs on; the events worker has nothing more to do with it. */
export const UNANSWERED = "run.unanswered";

/** The notices' excerpts start with this: the notifications page words them by it. */
export const REFUSAL = "did not answer";

function why(reason: string | null, pausedKind: string | null): string {
  if (reason === "paused" && pausedKind === "cost_limit")
    return "it is paused at its monthly cost limit. Its owner can raise the limit on its usage page.";
  if (reason === "paused") return "it is paused. Its owner can resume it on its page.";
  if (reason === "rate_limited") return "it was asked too often in the last minute. Try again in a moment.";
  if (reason === "chain_depth") return "too many agents were already answering each other in a row.";
  return "it could not start.";
}

export async function noticeUnanswered(
  db: PrismaClient,
  e: Event,
  agent: Pick<User, "id" | "handle" | "tenantId" | "parentId" | "ownerStudioId" | "pausedKind">,
  mentionPath: string,
): Promise<number> {
  const skipped = await db.subagentTaskRun.findFirst({
    where: { agentId: agent.id, triggerEventId: e.id, status: "skipped" },
    select: { id: true, stopReason: true },
  });
  if (!skipped) return 0;
  const managers = await managersOf(db, agent);
  const runPath = `/subagents/${agent.handle}/runs/${skipped.id}`;
  // Whoever manages the agent opens the skipped run (it says why); the one who mentioned it, their note.
  const to = new Map<string, string>(managers.map((m) => [m, runPath]));
  if (!to.has(e.actorId)) to.set(e.actorId, mentionPath);
  const unread = await db.notification.findMany({
    where: {
      tenantId: agent.tenantId,
      actorId: agent.id,
      userId: { in: [...to.keys()] },
      kind: "agent",
      dismissedAt: null,
      excerpt: { startsWith: REFUSAL },
    },
    select: { userId: true },
  });
  for (const n of unread) to.delete(n.userId);
  if (!to.size) return 0;
  // Its own event: the mention's may already have notified the same person (a comment on their note).
  return db.$transaction(async (tx) => {
    const eventId = await emitEvent(tx, {
      tenantId: agent.tenantId,
      actorId: agent.id,
      type: UNANSWERED,
      subjectType: "run",
      subjectId: skipped.id,
      payload: { mention_event: e.id },
    });
    return insertNotifications(
      tx,
      [...to].map(([userId, path]) => ({
        tenantId: agent.tenantId,
        userId,
        actorId: agent.id,
        eventId,
        kind: "agent" as const,
        path,
        excerpt: `${REFUSAL} ${userId === e.actorId ? "your mention" : "a mention"}: ${why(skipped.stopReason, agent.pausedKind)}`,
      })),
    );
  });
}
