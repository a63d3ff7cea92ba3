// Tells an agent's managers when it needs them: a question, an action to review, its spend.
// Its managers are its owner, or each admin of the studio that owns it (ownership.ts).
// One notification per (event, manager): a re-delivered event never notifies twice.
import type { PrismaClient } from "../../../db/prisma.ts";
import type { Event } from "../../../generated/prisma/client.ts";
import { usd } from "../../money/pricing.ts";
import { insertNotifications } from "../../notifications.ts";
import { type ReachKind, reachKindOf, reachPrefs } from "../../reach/preferences.ts";
import { humanize } from "../../registry/params.ts";
import { managersOf, type Owned } from "./ownership.ts";
import { endingWords } from "./run-endings.ts";

interface AgentRef extends Owned {
  id: string;
  tenantId: string;
}

/** The managers who want to hear of `kind` at all (its channel is not "off"). */
async function listening(db: PrismaClient, agent: AgentRef, kind: ReachKind | null): Promise<string[]> {
  const managers = await managersOf(db, agent);
  if (!kind || !managers.length) return managers;
  const people = await db.user.findMany({
    where: { id: { in: managers } },
    select: { id: true, reachPrefs: true },
  });
  return people.filter((p) => reachPrefs(p.reachPrefs)[kind] !== "off").map((p) => p.id);
}

async function notifyOwner(db: PrismaClient, event: Event, agent: AgentRef, path: string, excerpt: string) {
  const managers = await listening(db, agent, reachKindOf(event.type));
  if (!managers.length) return 0;
  return insertNotifications(
    db,
    managers.map((userId) => ({
      tenantId: agent.tenantId,
      userId,
      actorId: agent.id,
      eventId: event.id,
      kind: "agent" as const,
      path,
      excerpt: excerpt.slice(0, 500),
    })),
  );
}

/** A run that asks its owner a question, or one that failed or timed out. */
export async function notifyOwnerOfRun(db: PrismaClient, event: Event): Promise<number> {
  const run = await db.subagentTaskRun.findUnique({
    where: { id: event.subjectId },
    include: { agent: true },
  });
  // A run waiting on an approval: the approval's own notification says so, once.
  if (!run || run.stopReason === "awaiting_approval") return 0;
  const excerpt = event.type === "run.waiting" ? (run.question ?? "") : endingWords(run);
  return notifyOwner(db, event, run.agent, `/subagents/${run.agent.handle}/runs/${run.id}`, excerpt);
}

/** A pending action's review page: its request's notifications link there (and are settled by it). */
export const pendingPath = (handle: string, id: string) => `/subagents/${handle}/pending/${id}`;

export async function notifyOwnerOfApproval(db: PrismaClient, event: Event): Promise<number> {
  const pending = await db.agentPendingAction.findUnique({
    where: { id: event.subjectId },
    include: { agent: true },
  });
  if (!pending) return 0;
  return notifyOwner(
    db,
    event,
    pending.agent,
    pendingPath(pending.agent.handle, pending.id),
    `wants your approval to ${humanize(pending.actionName).toLowerCase()}${pending.reason ? `: ${pending.reason}` : ""}`,
  );
}

/** What a spend event carries (money/ledger.ts). */
export interface SpendPayload {
  threshold_micros?: number;
  spent_micros?: number;
  limit_micros?: number;
  month?: string;
}

/** A spend event in words, after "@scout ": the in-app notice and the mail say the same. */
export function spendWords(event: Pick<Event, "type" | "payload">): string {
  const spendPayload = event.payload as SpendPayload;
  const spent = usd(spendPayload.spent_micros ?? 0);
  const limit = usd(spendPayload.limit_micros ?? 0);
  return event.type === "agent.paused"
    ? `was paused: it reached its monthly cost limit (${spent} spent of ${limit} in ${spendPayload.month}). Raise the limit or resume it.`
    : event.type === "agent.resumed"
      ? `runs again: a new month (${spendPayload.month}) began, and its cost limit counts from zero.`
      : `has spent ${spent} in ${spendPayload.month}, past your ${usd(spendPayload.threshold_micros ?? 0)} alert (limit ${limit}).`;
}

/** A spend alert crossed, the agent paused at its limit, or resumed by a new month. */
export async function notifyOwnerOfSpend(db: PrismaClient, event: Event): Promise<number> {
  const agent = await db.user.findUnique({ where: { id: event.subjectId } });
  if (!agent) return 0;
  return notifyOwner(db, event, agent, `/subagents/${agent.handle}/usage`, spendWords(event));
}
