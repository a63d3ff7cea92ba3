// Subscriptions: an agent watching a studio or a page. An event there (by anyone but the
// agent itself) is recorded against each matching subscription; once the oldest recorded
// event is older than the agent's window, the whole burst becomes ONE run whose task lists
// every event — claimed, cleared and queued in one transaction, so no event is lost or run
// twice however many workers flush. The run goes through queueTriggered's guards.
import type { Db, PrismaClient } from "../../../db/prisma.ts";
import { inTransaction } from "../../../db/prisma.ts";
import { type AgentSubscription, type Event, Prisma, type User } from "../../../generated/prisma/client.ts";
import { ownerBoundSql, wokenByOthers } from "../core/ownership.ts";
import type { QueuedRun } from "../core/runs.ts";
import { agentConfig, resolveModel, tenantSettings } from "../core/settings.ts";
import { queueTriggered } from "../triggers/dispatcher.ts";
import { noticeRefused } from "../triggers/refusals.ts";
import { subscriptionTask } from "./subscription-task.ts";

export const SUBSCRIPTION_EVENTS = ["created", "updated", "commented", "voted", "joined", "read"] as const;
export type SubscriptionEvent = (typeof SUBSCRIPTION_EVENTS)[number];
export const SUBSCRIBABLE = ["studio", "note", "decision", "commitment"] as const;
export type Subscribable = (typeof SUBSCRIBABLE)[number];

/** The kind of each event a subscription can wake for. */
export const EVENT_KIND: Record<string, SubscriptionEvent> = {
  "note.created": "created",
  "decision.created": "created",
  "commitment.created": "created",
  "note.updated": "updated",
  "note.pinned": "updated",
  "note.unpinned": "updated",
  "studio.updated": "updated",
  "comment.created": "commented",
  "vote.cast": "voted",
  "option.added": "voted",
  "commitment.joined": "joined",
  "commitment.activated": "joined",
  "studio.joined": "joined",
  "note.read_confirmed": "read",
};

const PAGES = new Set(["note", "decision", "commitment"]);

/** What an event is about, as subscriptions name things: its studio, its page (a comment's thread). */
function targets(e: Pick<Event, "studioId" | "subjectType" | "subjectId" | "parentChain">) {
  const out: { subjectType: string; subjectId: string }[] = [];
  if (e.studioId) out.push({ subjectType: "studio", subjectId: e.studioId });
  if (PAGES.has(e.subjectType)) out.push({ subjectType: e.subjectType, subjectId: e.subjectId });
  for (const p of (e.parentChain ?? []) as { type: string; id: string }[])
    if (PAGES.has(p.type)) out.push({ subjectType: p.type, subjectId: p.id });
  return out;
}

/**
 * Wakes the agents that watch where `e` happened: records the event against each matching
 * enabled subscription, one per agent (the page's over the studio's), never for the agent's
 * own writes, nor for an agent this event already woke (a mention of a subscribed agent is
 * one run, not two). Subscriptions of agents with no window are flushed at once; the rest
 * by the sweeper. Returns how many subscriptions it recorded the event against.
 */
export async function wakeSubscribers(db: PrismaClient, e: Event): Promise<number> {
  const kind = EVENT_KIND[e.type];
  const where = targets(e);
  if (!kind || !where.length) return 0;
  const subs = await db.agentSubscription.findMany({
    where: {
      tenantId: e.tenantId,
      enabled: true,
      events: { has: kind },
      OR: where,
      agentId: { not: e.actorId },
      agent: { archivedAt: null },
      // An event from before the subscription (delivered late: the worker was down) is not news to it.
      createdAt: { lte: e.createdAt },
    },
    include: { agent: true },
  });
  if (!subs.length) return 0; // most events: one indexed read, nothing more
  const woken = await db.subagentTaskRun.findMany({
    where: { triggerEventId: e.id },
    select: { agentId: true },
  });
  const already = new Set(woken.map((r) => r.agentId));
  const perAgent = new Map<string, (typeof subs)[number]>();
  for (const s of subs)
    if (!already.has(s.agentId) && (!perAgent.has(s.agentId) || s.subjectType !== "studio"))
      perAgent.set(s.agentId, s);
  const chosen = [...perAgent.values()];
  if (!chosen.length) return 0;
  await db.agentSubscriptionEvent.createMany({
    data: chosen.map((s) => ({ subscriptionId: s.id, eventId: e.id, tenantId: e.tenantId })),
    skipDuplicates: true,
  });
  for (const s of chosen) if (windowMs(s.agent) === 0) await flushSubscription(db, s.id);
  return chosen.length;
}

const windowMs = (agent: Pick<User, "agentConfig">) => agentConfig(agent).subscription_window_seconds * 1000;

/** Flushes every subscription whose oldest recorded event has waited out its agent's window. */
export async function flushDueSubscriptions(db: PrismaClient): Promise<number> {
  const waiting = await db.$queryRaw<{ id: string; oldest: Date }[]>`
    SELECT subscription_id AS id, min(created_at) AS oldest FROM agent_subscription_events
    GROUP BY subscription_id ORDER BY oldest LIMIT 500`;
  if (!waiting.length) return 0;
  const subs = await db.agentSubscription.findMany({
    where: { id: { in: waiting.map((w) => w.id) } },
    include: { agent: { select: { agentConfig: true } } },
  });
  const oldest = new Map(waiting.map((w) => [w.id, w.oldest.getTime()]));
  let runs = 0;
  for (const s of subs)
    if (oldest.get(s.id)! + windowMs(s.agent) <= Date.now() && (await flushSubscription(db, s.id))) runs += 1;
  return runs;
}

/**
 * Turns one subscription's recorded events into a run: in one transaction that holds the
 * subscription (another worker flushing it skips it), clears what it took, and queues the
 * run, keyed by its first event so a retried flush cannot queue a second. Returns the run's id.
 */
export async function flushSubscription(db: PrismaClient | Db, id: string): Promise<QueuedRun | null> {
  return inTransaction(db, async (tx) => {
    const [locked] = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM agent_subscriptions WHERE id = ${id} FOR UPDATE SKIP LOCKED`;
    if (!locked) return null;
    const pending = await tx.agentSubscriptionEvent.findMany({
      where: { subscriptionId: id },
      orderBy: [{ createdAt: "asc" }, { eventId: "asc" }],
    });
    if (!pending.length) return null;
    await tx.agentSubscriptionEvent.deleteMany({
      where: { subscriptionId: id, eventId: { in: pending.map((p) => p.eventId) } },
    });
    const sub = await tx.agentSubscription.findUniqueOrThrow({ where: { id }, include: { agent: true } });
    if (!sub.enabled || sub.agent.archivedAt) return null;
    if (!(await stillVisible(tx, sub))) return null;
    return queueFor(
      tx,
      sub,
      pending.map((p) => p.eventId),
    );
  });
}

/** The agent must still see what it watches; if it no longer can, the subscription is turned off, saying why. */
async function stillVisible(tx: Db, sub: AgentSubscription & { agent: User }): Promise<boolean> {
  const [row] = await tx.$queryRaw<{ member: boolean; bounded: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM studio_members WHERE studio_id = ${sub.studioId} AND user_id = ${sub.agentId}) AS member,
      (${ownerBoundSql(Prisma.sql`${sub.agentId}`, Prisma.sql`${sub.studioId}`)}) AS bounded`;
  if (row?.member && row.bounded) return true;
  const studio = await tx.studio.findUnique({ where: { id: sub.studioId }, select: { handle: true } });
  const where = studio ? `#${studio.handle}` : "its studio";
  await tx.agentSubscription.update({
    where: { id: sub.id },
    data: {
      enabled: false,
      // It never reads past its owner: a member whose owner is not there sees nothing there either.
      disabledReason: row?.member
        ? `@${sub.agent.handle}'s owner is no longer a member of ${where}, so it cannot see what it watched.`
        : `@${sub.agent.handle} is no longer a member of ${where}, so it cannot see what it watched.`,
    },
  });
  return false;
}

async function queueFor(tx: Db, sub: AgentSubscription & { agent: User }, eventIds: string[]) {
  const events = await tx.event.findMany({ where: { id: { in: eventIds } }, orderBy: { createdAt: "asc" } });
  if (!events.length) return null;
  const tenant = await tx.tenant.findUniqueOrThrow({ where: { id: sub.tenantId } });
  // Agents switched off: queueTriggered records the batch as skipped, saying so.
  const settings = tenantSettings(tenant);
  // A burst that an agent's own run caused continues that chain: its depth counts.
  const parents = events.map((e) => e.runId).filter((r): r is string => Boolean(r));
  const depths = parents.length
    ? await tx.subagentTaskRun.findMany({ where: { id: { in: parents } }, select: { chainDepth: true } })
    : [];
  const cfg = agentConfig(sub.agent);
  const triggerEventId = `subscription:${sub.id}:${events[0]!.id}`;
  const queued = await queueTriggered(tx, sub.agent, settings, {
    tenantId: sub.tenantId,
    agentId: sub.agentId,
    initiatedById: events.at(-1)!.actorId,
    triggerEventId,
    triggerKind: "subscription",
    triggerRef: sub.id,
    // Watching one note, decision or commitment: its thread shows the agent working.
    ...(sub.subjectType !== "studio" && { threadId: sub.subjectId }),
    chainDepth: depths.length ? Math.max(...depths.map((d) => d.chainDepth)) + 1 : 0,
    task: await subscriptionTask(tx, sub, events),
    // The events happened in the watched studio; the run reads within the view of whoever caused them.
    label: [{ studio: sub.studioId }],
    viewerIds: await wokenByOthers(
      tx,
      sub.agentId,
      events.map((e) => e.actorId),
    ),
    model: resolveModel(cfg, settings, undefined),
    maxSteps: cfg.max_steps,
    timeoutSeconds: cfg.timeout_seconds,
  });
  // Refused (paused, too many waiting…): its managers hear why, with the run to retry.
  if (!queued) await noticeRefused(tx, sub.agent, { triggerEventId, personId: null, kind: "subscription" });
  return queued;
}
