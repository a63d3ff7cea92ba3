// When a person mentions, replies to or comments beside an agent that will not answer
// (archived, paused, at its cost limit, too many triggers already waiting for its rate, or at
// the end of an agent-to-agent chain), the trigger is recorded as a skipped run, and the
// person and the agent's managers hear so here, each linked to that run's page, which says
// why (the person may read the run their own words started while it is skipped; its
// managers may retry it there). Once, not once per trigger: while an earlier notice of the
// same agent is unread, no new one is added.
import { type Db, inTransaction, type PrismaClient } from "../../../db/prisma.ts";
import type { Event, User } from "../../../generated/prisma/client.ts";
import { emitEvent } from "../../events.ts";
import { insertNotifications } from "../../notifications.ts";
import { AGENTS_OFF } from "../core/kill-switch.ts";
import { managersOf } from "../core/ownership.ts";

/** The event a notice hangs on; the events worker has nothing more to do with it. */
export const UNANSWERED = "run.unanswered";

/** The notices' excerpts start with this: the notifications page words them by it. */
export const REFUSAL = "did not answer";

function why(reason: string | null, pausedKind: string | null): string {
  if (reason === AGENTS_OFF)
    return "agents are switched off in this workspace. A workspace admin can switch them on.";
  if (reason === "archived") return "it is archived. Its owner can unarchive it on its page, then retry.";
  if (reason === "paused" && pausedKind === "cost_limit")
    return "it is paused at its monthly cost limit. Its owner can raise the limit on its usage page, then retry.";
  if (reason === "paused") return "it is paused. Its owner can resume it on its page, then retry.";
  if (reason === "rate_limited")
    return "too many of its triggers were already waiting for its rate. Its owner can retry this one.";
  if (reason === "chain_depth") return "too many agents were already answering each other in a row.";
  return "it could not start.";
}

const WHAT: Record<string, string> = {
  mention: "mention",
  reply: "reply",
  thread: "comment",
  subscription: "batch of what it watches",
  schedule: "scheduled run",
  webhook: "webhook delivery",
};

type Refused = Pick<User, "id" | "handle" | "tenantId" | "parentId" | "ownerStudioId" | "pausedKind">;

/** A person's mention, reply or thread comment the agent skipped: they and its managers hear why. */
export function noticeUnanswered(db: PrismaClient, e: Event, agent: Refused, kind: string): Promise<number> {
  return noticeRefused(db, agent, { triggerEventId: e.id, personId: e.actorId, kind });
}

/**
 * The skipped run of this trigger, told to the agent's managers and to the person who caused it
 * (null: nobody addressed the agent, as for a subscription's batch), each linked to the run.
 * In the caller's transaction when it has one, so the notice commits with the refusal.
 */
export async function noticeRefused(
  db: PrismaClient | Db,
  agent: Refused,
  trigger: { triggerEventId: string; personId: string | null; kind: string },
): Promise<number> {
  const skipped = await db.subagentTaskRun.findFirst({
    where: { agentId: agent.id, triggerEventId: trigger.triggerEventId, status: "skipped" },
    select: { id: true, stopReason: true },
  });
  if (!skipped) return 0;
  const managers = await managersOf(db, agent);
  const runPath = `/subagents/${agent.handle}/runs/${skipped.id}`;
  const to = new Set<string>(trigger.personId ? [...managers, trigger.personId] : managers);
  const unread = await db.notification.findMany({
    where: {
      tenantId: agent.tenantId,
      actorId: agent.id,
      userId: { in: [...to.keys()] },
      kind: "agent",
      dismissedAt: null,
      excerpt: { startsWith: REFUSAL },
      // Refusals only (they open a run page): a thread's "did not answer" (unanswered.ts) is its
      // own kind, and quieting one by the other made which was told depend on which came first.
      path: { startsWith: `/subagents/${agent.handle}/runs/` },
    },
    select: { userId: true },
  });
  for (const n of unread) to.delete(n.userId);
  if (!to.size) return 0;
  const what = WHAT[trigger.kind] ?? "trigger";
  // Its own event: the trigger's may already have notified the same person (a comment on their note).
  return inTransaction(db, async (tx) => {
    const eventId = await emitEvent(tx, {
      tenantId: agent.tenantId,
      actorId: agent.id,
      type: UNANSWERED,
      subjectType: "run",
      subjectId: skipped.id,
      payload: { trigger: trigger.triggerEventId },
    });
    return insertNotifications(
      tx,
      [...to].map((userId) => ({
        tenantId: agent.tenantId,
        userId,
        actorId: agent.id,
        eventId,
        kind: "agent" as const,
        path: runPath,
        excerpt: `${REFUSAL} ${userId === trigger.personId ? "your" : "a"} ${what}: ${why(skipped.stopReason, agent.pausedKind)}`,
      })),
    );
  });
}
