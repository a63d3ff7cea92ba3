// An event told as news for the people outside the app who must hear of it: which agent,
// what happened in words, where (a page, named per reader), and the page to look at. Only
// names, titles and links: never a param's value, the agent's own words or a run's error,
// which can quote what the run read (its label), while a mailbox or a chat channel is read
// by whoever is there.
import type { Db } from "../../db/prisma.ts";
import type { Event, User } from "../../generated/prisma/client.ts";
import { pendingPath, type SpendPayload, spendWords } from "../agents/core/notify.ts";
import { endingWords } from "../agents/core/run-endings.ts";
import { capabilityLabel } from "../agents/policy/capabilities.ts";
import { type ReachKind, reachKindOf } from "./preferences.ts";

export const HOOK_EVENTS = [
  "approval.requested",
  "approval.decided",
  "question.asked",
  "run.finished",
  "run.failed",
  "cost.alert",
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

export type AgentRef = Pick<User, "id" | "tenantId" | "handle" | "name" | "parentId" | "ownerStudioId">;

export interface News {
  event: Event;
  hook: HookEvent;
  /** The kind a person chooses how to hear of (null: webhooks only). */
  kind: ReachKind | null;
  agent: AgentRef;
  /** After "@scout ": "wants your approval to comment and reply". */
  what: string;
  /** The page it acts on or was woken in, named per reader (page-titles.ts). */
  place: string | null;
  /** Where to look, a path in the workspace. */
  link: string;
  /** Set for an approval request: its mail carries review links. */
  pendingId?: string;
  /** Facts for a webhook's JSON, all safe to send anywhere the event goes. */
  data: Record<string, unknown>;
}

const HOOK_OF: Record<string, HookEvent> = {
  "approval.requested": "approval.requested",
  "approval.approved": "approval.decided",
  "approval.rejected": "approval.decided",
  "run.waiting": "question.asked",
  "run.completed": "run.finished",
  "run.cancelled": "run.finished",
  "run.failed": "run.failed",
  "run.timed_out": "run.failed",
  "usage.threshold": "cost.alert",
  "agent.paused": "cost.alert",
};

/** Whether an event may be news outside the app (cheap: read nothing for the others). */
export const mayBeNews = (type: string) => type in HOOK_OF;

/** The webhook event an event type is, if any. */
export const hookOf = (type: string): HookEvent | undefined => HOOK_OF[type];

const agentSelect = {
  id: true,
  tenantId: true,
  handle: true,
  name: true,
  parentId: true,
  ownerStudioId: true,
};
const runPath = (handle: string, id: string) => `/subagents/${handle}/runs/${id}`;
const doing = (action: string) => capabilityLabel(action).toLowerCase();

async function approvalNews(db: Db, event: Event, hook: HookEvent): Promise<News | null> {
  const pending = await db.agentPendingAction.findUnique({
    where: { id: event.subjectId },
    include: { agent: { select: agentSelect }, reviewedBy: { select: { handle: true } } },
  });
  if (!pending) return null;
  const requested = hook === "approval.requested";
  const decision = event.type === "approval.approved" ? "approved" : "rejected";
  return {
    event,
    hook,
    kind: reachKindOf(event.type),
    agent: pending.agent,
    what: requested
      ? `wants your approval to ${doing(pending.actionName)}`
      : `asked to ${doing(pending.actionName)}: ${decision}${pending.reviewedBy ? ` by @${pending.reviewedBy.handle}` : ""}`,
    place: pending.pagePath,
    link: pendingPath(pending.agent.handle, pending.id),
    ...(requested && { pendingId: pending.id }),
    data: {
      pending_action: {
        id: pending.id,
        action: pending.actionName,
        expires_at: pending.expiresAt.toISOString(),
      },
      ...(!requested && { decision, reviewed_by: pending.reviewedBy?.handle ?? null }),
    },
  };
}

async function runNews(db: Db, event: Event, hook: HookEvent): Promise<News | null> {
  const run = await db.subagentTaskRun.findUnique({
    where: { id: event.subjectId },
    include: { agent: { select: agentSelect } },
  });
  // A run waiting on an approval: the approval's own news says so, once.
  if (!run || (event.type === "run.waiting" && run.stopReason === "awaiting_approval")) return null;
  const thread = run.threadId ? await threadPath(db, run.tenantId, run.threadId) : null;
  const what =
    hook === "question.asked"
      ? "has a question for you"
      : hook === "run.failed" || run.status === "cancelled"
        ? endingWords(run)
        : "finished its run";
  return {
    event,
    hook,
    kind: reachKindOf(event.type, run.stopReason),
    agent: run.agent,
    what,
    place: thread,
    link: runPath(run.agent.handle, run.id),
    data: {
      run: {
        id: run.id,
        status: run.status,
        trigger: run.triggerKind,
        stop_reason: run.stopReason,
        // A dry run did nothing it wrote (docs/testing-agents.md): a receiver may tell it apart.
        dry: run.dry,
      },
    },
  };
}

async function costNews(db: Db, event: Event, hook: HookEvent): Promise<News | null> {
  const agent = await db.user.findUnique({ where: { id: event.subjectId }, select: agentSelect });
  if (!agent) return null;
  const spendPayload = event.payload as SpendPayload;
  // The headline adds its own full stop.
  const what = spendWords(event).replace(/\.$/, "");
  return {
    event,
    hook,
    kind: reachKindOf(event.type),
    agent,
    what,
    place: null,
    link: `/subagents/${agent.handle}/usage`,
    data: {
      cost: {
        month: spendPayload.month ?? null,
        spent_usd: (spendPayload.spent_micros ?? 0) / 1e6,
        limit_usd: (spendPayload.limit_micros ?? 0) / 1e6,
        ...(spendPayload.threshold_micros !== undefined && {
          threshold_usd: spendPayload.threshold_micros / 1e6,
        }),
        paused: event.type === "agent.paused",
      },
    },
  };
}

/** The path of a note, decision or commitment by id (a run's thread), or null. */
async function threadPath(db: Db, tenantId: string, id: string): Promise<string | null> {
  const [row] = await db.$queryRaw<{ path: string }[]>`
    SELECT '/studios/' || s.handle || '/' || t.kind || '/' || t.id AS path FROM (
      SELECT id, studio_id, 'notes' AS kind FROM notes WHERE id = ${id} AND tenant_id = ${tenantId}
      UNION ALL SELECT id, studio_id, 'decisions' FROM decisions WHERE id = ${id} AND tenant_id = ${tenantId}
      UNION ALL SELECT id, studio_id, 'commitments' FROM commitments WHERE id = ${id} AND tenant_id = ${tenantId}
    ) t JOIN studios s ON s.id = t.studio_id`;
  return row?.path ?? null;
}

/** The event as news, or null when it is none (or what it was about is gone). */
export async function newsOf(db: Db, event: Event): Promise<News | null> {
  const hook = HOOK_OF[event.type];
  if (!hook) return null;
  if (event.type.startsWith("approval.")) return approvalNews(db, event, hook);
  if (event.type.startsWith("run.")) return runNews(db, event, hook);
  return costNews(db, event, hook);
}
