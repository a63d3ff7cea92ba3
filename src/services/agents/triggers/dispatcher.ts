// Turns content events into agent runs: @mentions of subagents in the studio, replies
// to what a subagent wrote, and new comments in a thread a subagent took part in. A handle an
// agent wrote wakes nobody: it quotes, it does not call (services/notifications.ts mentionedBy);
// nor does an agent's comment wake its thread's other agents. An agent hands work to another
// by replying to what that agent wrote: a reply wakes, and the chain depth bounds it.
// Guards: the workspace's kill switch, no self-trigger, archived and paused agents (recorded as skipped runs, and the
// person told), agent-to-agent chain depth, and a per-agent trigger rate that holds under
// concurrency (an advisory lock per agent): over it a run waits its turn (rate.ts). Every
// other trigger (subscriptions, schedules, webhooks, a manager's retry) queues its runs
// through the same guards: `queueTriggered`.
import { advisoryLock, type Db, hotQuery, hotTransaction, type PrismaClient } from "../../../db/prisma.ts";
import { type Event, Prisma, type Tenant, type User } from "../../../generated/prisma/client.ts";
import { quoteAsData } from "../../../lib/text.ts";
import { parseMentions } from "../../mentions.ts";
import type { Subject } from "../../subjects.ts";
import { AGENTS_OFF, AGENTS_OFF_MESSAGE } from "../core/kill-switch.ts";
import { managedBySql, ownerBoundSql } from "../core/ownership.ts";
import { type NewRun, type QueuedRun, queueRun, recordSkipped } from "../core/runs.ts";
import { agentConfig, resolveModel, type TenantSettings, tenantSettings } from "../core/settings.ts";
import { RATED_TRIGGERS, rateSlot, workspaceRateFull } from "./rate.ts";
import { noticeUnanswered } from "./refusals.ts";

type Kind = "mention" | "reply" | "thread";

/** What they did, around where they did it ("a comment on “Plans”"), as one sentence. */
const DID: Record<Kind, (where: string) => string> = {
  mention: (where) => `mentioned you in ${where}`,
  reply: (where) => `replied to something you wrote, in ${where}`,
  thread: (where) => `wrote ${where}, in a thread you took part in,`,
};

export function triggerTask(kind: Kind, actor: Pick<User, "name" | "handle">, subject: Subject): string {
  const where =
    subject.kind === "comment" ? `a comment on “${subject.title}”` : `the ${subject.kind} “${subject.title}”`;
  return [
    `${actor.name} (@${actor.handle}) ${DID[kind](where)} at ${subject.path}.`,
    subject.kind === "comment" ? `The comment (id \`${subject.id}\`) says:` : "It says:",
    quoteAsData(subject.text, 1500),
    `Open ${subject.path}, read it in context, and respond if a response is useful${subject.kind === "comment" ? ` — usually with \`add_comment\` and \`reply_to: "${subject.id}"\`` : " — usually with `add_comment`"}. If nothing needs doing, finish.`,
  ].join("\n\n");
}

/** An agent an event wakes, with what queueing its run and telling of a refusal need. */
type Woken = Pick<
  User,
  | "id"
  | "tenantId"
  | "handle"
  | "name"
  | "agentConfig"
  | "pausedAt"
  | "pausedReason"
  | "pausedKind"
  | "parentId"
  | "ownerStudioId"
  | "archivedAt"
> & {
  why: Kind;
  /** Whether the event's actor manages it: if not, its run acts within the actor's view. */
  managed: boolean;
};

interface Wake {
  settings: Tenant["settings"];
  actor: Pick<User, "name" | "handle" | "kind">;
  depth: number | null;
  agents: (Omit<Woken, "pausedAt" | "archivedAt"> & { pausedAt: string | null; archivedAt: string | null })[];
}

/**
 * What an event's triggers need, in one statement: the tenant's settings, the actor, the
 * depth of the run that wrote it, and the agents it wakes — mentioned, replied to, or in
 * its thread (the first reason found stays) — that are members of its studio and not
 * archived (an archived agent that is mentioned is kept: the person hears why it is silent).
 * Each read is a round trip, and Prisma's own cost, before the run can start.
 */
async function wakeRead(db: PrismaClient, e: Event, s: Subject): Promise<Wake> {
  const handles = parseMentions(s.text);
  const authors = [s.parentAuthorId, s.subjectAuthorId].filter((x): x is string => Boolean(x));
  const [row] = await hotQuery<{ wake: Wake }>(
    db,
    Prisma.sql`
    WITH candidate AS (
      SELECT u.id, 1 AS rank, 'mention' AS why FROM users u
      WHERE u.tenant_id = ${e.tenantId} AND u.kind = 'subagent' AND u.handle = ANY(${handles}::text[])
        -- A handle in an agent's text is a quote, not a call: it wakes nobody (notifications.ts mentionedBy).
        AND NOT EXISTS (SELECT 1 FROM users writer WHERE writer.id = ${e.actorId} AND writer.kind = 'subagent')
      UNION ALL
      SELECT u.id, 2, 'reply' FROM users u
      WHERE u.tenant_id = ${e.tenantId} AND u.kind = 'subagent' AND u.id = ANY(${authors}::text[])
      UNION ALL
      SELECT DISTINCT c.author_id, 3, 'thread' FROM comments c JOIN users u ON u.id = c.author_id
      WHERE c.tenant_id = ${e.tenantId} AND u.kind = 'subagent'
        AND c.subject_type = ${s.thread?.type ?? null}::"SubjectType" AND c.subject_id = ${s.thread?.id ?? null}
        -- Nor does an agent's comment wake the other agents of its thread for being there: two
        -- agents in one thread would answer each other to the chain limit. A reply to one does.
        AND NOT EXISTS (SELECT 1 FROM users writer WHERE writer.id = ${e.actorId} AND writer.kind = 'subagent')
    ), woken AS (
      SELECT DISTINCT ON (id) id, why FROM candidate WHERE id <> ${e.actorId} ORDER BY id, rank
    )
    SELECT json_build_object(
      'settings', (SELECT settings FROM tenants WHERE id = ${e.tenantId}),
      'actor', (SELECT json_build_object('name', name, 'handle', handle, 'kind', kind) FROM users WHERE id = ${e.actorId}),
      'depth', (SELECT chain_depth FROM subagent_task_runs WHERE id = ${e.runId}),
      'agents', (SELECT coalesce(json_agg(json_build_object('id', u.id, 'tenantId', u.tenant_id, 'handle', u.handle,
          'name', u.name, 'agentConfig', u.agent_config, 'pausedAt', u.paused_at AT TIME ZONE 'UTC', 'pausedReason', u.paused_reason,
          'pausedKind', u.paused_kind, 'parentId', u.parent_id, 'ownerStudioId', u.owner_studio_id, 'why', w.why,
          'managed', ${managedBySql("u", e.actorId)}, 'archivedAt', u.archived_at AT TIME ZONE 'UTC')
          ORDER BY u.id), '[]')
        FROM woken w JOIN users u ON u.id = w.id
        WHERE (u.archived_at IS NULL OR w.why = 'mention')
          AND EXISTS (SELECT 1 FROM studio_members m WHERE m.user_id = u.id AND m.studio_id = ${s.studioId})
          -- It never reads past its owner: a mention where its owner is not wakes nothing.
          AND ${ownerBoundSql(Prisma.sql`u.id`, Prisma.sql`${s.studioId}`)})
    ) AS wake`,
  );
  return row!.wake;
}

/** Queues the runs the event wakes, each in a transaction of its own: committed when this returns. */
export async function dispatchTriggers(db: PrismaClient, e: Event, s: Subject): Promise<QueuedRun[]> {
  const wake = await wakeRead(db, e, s);
  const settings = tenantSettings(wake);
  if (!wake.agents.length) return [];
  const depth = wake.depth === null ? 0 : wake.depth + 1;
  const actor = wake.actor;
  const created: QueuedRun[] = [];
  for (const row of wake.agents) {
    const agent: Woken = {
      ...row,
      pausedAt: row.pausedAt ? new Date(row.pausedAt) : null,
      archivedAt: row.archivedAt ? new Date(row.archivedAt) : null,
    };
    const kind = agent.why;
    const cfg = agentConfig(agent);
    const queued = await queueTriggered(db, agent, settings, {
      tenantId: e.tenantId,
      agentId: agent.id,
      initiatedById: e.actorId,
      triggerEventId: e.id,
      triggerKind: kind,
      threadId: s.thread?.id ?? (s.kind === "comment" ? undefined : s.id),
      chainDepth: depth,
      task: triggerTask(kind, actor, s),
      // The task quotes words written in the studio; whoever wrote them reads through the run.
      label: [{ studio: s.studioId }],
      viewerIds: agent.managed ? [] : [e.actorId],
      model: resolveModel(cfg, settings, undefined),
      maxSteps: cfg.max_steps,
      timeoutSeconds: cfg.timeout_seconds,
      // Its trace links to the request that wrote the comment (traces).
      traceparent: e.traceparent,
    });
    if (queued) created.push(queued);
    // A person whose mention, reply or comment it will not answer is told why (refusals.ts).
    else if (actor.kind === "person") await noticeUnanswered(db, e, agent, kind);
  }
  return created;
}

/**
 * Queues a run through the guards every trigger shares: an archived or paused agent, the
 * agent-to-agent chain depth, and (for the triggers it applies to, rate.ts) the agent's trigger
 * rate, over which the run waits its turn. A refused trigger is recorded as a skipped run, so
 * its managers see why and may retry it. Returns the run, or null when skipped or when this
 * (agent, trigger) already has a run.
 */
export async function queueTriggered(
  db: PrismaClient | Db,
  agent: Pick<User, "id" | "pausedAt" | "pausedReason"> & { archivedAt?: Date | null },
  settings: TenantSettings,
  run: NewRun,
  opts: { rateLimited?: boolean } = {},
): Promise<QueuedRun | null> {
  // In the caller's transaction when it has one (a trigger that claims its work in it), else in
  // one of its own on the pg pool: every statement here is a hot one (hotTransaction).
  return hotTransaction(db, async (tx) => {
    // Serializes this agent's trigger decisions, so the rate limit holds however many events arrive at once.
    await advisoryLock(tx, `trigger:${agent.id}`);
    // The workspace's kill switch first: whatever else holds, nothing starts while it is off.
    if (!settings.agents_enabled) {
      await recordSkipped(tx, run, AGENTS_OFF, AGENTS_OFF_MESSAGE);
      return null;
    }
    if (agent.archivedAt) {
      await recordSkipped(tx, run, "archived", "The agent is archived.");
      return null;
    }
    if (agent.pausedAt) {
      await recordSkipped(
        tx,
        run,
        "paused",
        `The agent is paused${agent.pausedReason ? `: ${agent.pausedReason}` : ""}.`,
      );
      return null;
    }
    if (run.chainDepth >= settings.chain_depth_limit) {
      await recordSkipped(
        tx,
        run,
        "chain_depth",
        `Agent-to-agent chain reached the depth limit (${settings.chain_depth_limit}).`,
      );
      return null;
    }
    if (opts.rateLimited === false || !RATED_TRIGGERS.includes(run.triggerKind)) return queueRun(tx, run);
    const busy = await workspaceRateFull(tx, run.tenantId, settings);
    if (busy) {
      await recordSkipped(tx, run, "rate_limited", busy);
      return null;
    }
    const rate = settings.trigger_rate_per_minute;
    const slot = await rateSlot(tx, agent.id, rate);
    if ("full" in slot) {
      await recordSkipped(
        tx,
        run,
        "rate_limited",
        `${slot.full} of its triggers were already waiting for its rate (${rate} a minute), the most that may wait; this one was not kept. Its managers can retry it.`,
      );
      return null;
    }
    return queueRun(tx, slot.at === "now" ? run : { ...run, notBefore: slot.at });
  });
}
