// When a person leaves a studio (removed, or leaving), their agents leave it with them: an
// agent never reads past its owner (ownership.ts ownerBoundSql bounds every read already;
// this makes the rows say so). Its membership there is deleted, so inviting the person back
// does not silently bring the agent back; its subscriptions there are turned off, saying
// why, so its owner sees what stopped and may turn them on again once it is back. The owner
// hears it in a notification outside the studio (they can no longer read the studio's).
import type { Db } from "../../../db/prisma.ts";
import { emitEvent } from "../../events.ts";
import { insertNotifications } from "../../notifications.ts";

export interface AgentsLeft {
  handles: string[];
  subscriptions: number;
}

/**
 * In the removal's transaction: the agents `personId` owns leave the studio, their
 * subscriptions there stop, and the person is told (`actorId` removed them, or is them).
 */
export async function agentsLeaveWithOwner(
  tx: Db,
  who: { tenantId: string; actorId: string; personId: string },
  studio: { id: string; name: string; handle: string },
): Promise<AgentsLeft> {
  const owned = { tenantId: who.tenantId, kind: "subagent" as const, parentId: who.personId };
  const agents = await tx.user.findMany({
    where: { ...owned, memberships: { some: { studioId: studio.id } } },
    select: { id: true, handle: true },
    orderBy: { handle: "asc" },
  });
  // Every agent of theirs, member or not: a subscription outlives nothing its owner cannot read.
  const stopped = await tx.$executeRaw`
    UPDATE agent_subscriptions sub SET enabled = false,
      disabled_reason = '@' || ag.handle || ${` left ${studio.name} with its owner, so it cannot see what it watched there.`}
    FROM users ag
    WHERE ag.id = sub.agent_id AND ag.tenant_id = ${who.tenantId} AND ag.kind = 'subagent'
      AND ag.parent_id = ${who.personId} AND sub.studio_id = ${studio.id} AND sub.enabled`;
  const first = agents[0];
  if (!first) return { handles: [], subscriptions: stopped };
  await tx.studioMember.deleteMany({
    where: { studioId: studio.id, userId: { in: agents.map((a) => a.id) } },
  });
  const handles = agents.map((a) => `@${a.handle}`);
  // No studio on the event: its owner, now outside the studio, must still see the notice.
  const eventId = await emitEvent(tx, {
    tenantId: who.tenantId,
    actorId: who.actorId,
    type: "agents.left_studio",
    subjectType: "user",
    subjectId: who.personId,
    payload: { studio: studio.handle, agents: agents.map((a) => a.id), subscriptions: stopped },
  });
  const others = handles.slice(1);
  const watched = stopped
    ? `; ${stopped === 1 ? "1 subscription" : `${stopped} subscriptions`} there stopped`
    : "";
  await insertNotifications(tx, [
    {
      tenantId: who.tenantId,
      userId: who.personId,
      // Told as the agent's own news, as its spend is: "@bobbot left Vault with you…".
      actorId: first.id,
      eventId,
      kind: "agent",
      path: agents.length === 1 ? `/subagents/${first.handle}` : "/subagents",
      excerpt: `left ${studio.name} with you${others.length ? ` (and so did ${listed(others)})` : ""}${watched}. Adding you back to ${studio.name} does not bring ${agents.length === 1 ? "it" : "them"} back.`,
    },
  ]);
  return { handles, subscriptions: stopped };
}

function listed(items: string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(", ")} and ${items.at(-1)}` : (items[0] ?? "");
}
