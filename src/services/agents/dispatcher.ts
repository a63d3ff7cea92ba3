// Turns content events into agent runs: @mentions of subagents in the studio, replies
// to what a subagent wrote, and new comments in a thread a subagent took part in.
// Guards: no self-trigger, archived agents ignored, agent-to-agent chain depth, and a
// per-agent rate limit that holds under concurrency (an advisory lock per agent). Every
// other trigger (subscriptions, schedules, webhooks) queues its runs through the same
// guards: `queueTriggered`.
import { type Db, inTransaction, type PrismaClient } from "../../db/prisma.ts";
import type { Event, User } from "../../generated/prisma/client.ts";
import { quoteAsData } from "../../lib/text.ts";
import { parseMentions } from "../mentions.ts";
import type { Subject } from "../subjects.ts";
import { noticeUnanswered } from "./refusals.ts";
import { type NewRun, queueRun, recordSkipped } from "./runs.ts";
import { agentConfig, resolveModel, type TenantSettings, tenantSettings } from "./settings.ts";

type Kind = "mention" | "reply" | "thread";

const VERB: Record<Kind, string> = {
  mention: "mentioned you",
  reply: "replied to something you wrote",
  thread: "commented in a thread you took part in",
};

export function triggerTask(kind: Kind, actor: Pick<User, "name" | "handle">, s: Subject): string {
  const where = s.kind === "comment" ? `a comment on “${s.title}”` : `the ${s.kind} “${s.title}”`;
  return [
    `${actor.name} (@${actor.handle}) ${VERB[kind]} in ${where} at ${s.path}.`,
    s.kind === "comment" ? `The comment (id \`${s.id}\`) says:` : "It says:",
    quoteAsData(s.text, 1500),
    `Open ${s.path}, read it in context, and respond if a response is useful${s.kind === "comment" ? ` — usually with \`add_comment\` and \`reply_to: "${s.id}"\`` : " — usually with `add_comment`"}. If nothing needs doing, finish.`,
  ].join("\n\n");
}

/** The agents an event may wake, and why: a mention, a reply to them, or their thread. Read at once: each read is a round trip before the run can start. */
async function candidates(db: PrismaClient, e: Event, s: Subject): Promise<Map<string, Kind>> {
  const handles = parseMentions(s.text);
  const authors = [s.parentAuthorId, s.subjectAuthorId].filter((x): x is string => Boolean(x));
  const [mentioned, replied, inThread] = await Promise.all([
    handles.length
      ? db.user.findMany({
          where: {
            tenantId: e.tenantId,
            kind: "subagent",
            handle: { in: handles },
            memberships: { some: { studioId: s.studioId } },
          },
          select: { id: true },
        })
      : [],
    authors.length
      ? db.user.findMany({ where: { id: { in: authors }, kind: "subagent" }, select: { id: true } })
      : [],
    s.thread
      ? db.comment.findMany({
          where: {
            tenantId: e.tenantId,
            subjectType: s.thread.type,
            subjectId: s.thread.id,
            author: { kind: "subagent" },
          },
          select: { authorId: true },
          distinct: ["authorId"],
        })
      : [],
  ]);
  // A mention says more than a reply, and a reply more than a thread: the first reason found stays.
  const found = new Map<string, Kind>();
  const add = (id: string, kind: Kind) => {
    if (!found.has(id)) found.set(id, kind);
  };
  for (const u of mentioned) add(u.id, "mention");
  for (const a of replied) add(a.id, "reply");
  for (const c of inThread) add(c.authorId, "thread");
  found.delete(e.actorId);
  return found;
}

export async function dispatchTriggers(db: PrismaClient, e: Event, s: Subject): Promise<string[]> {
  const [tenant, found] = await Promise.all([
    db.tenant.findUniqueOrThrow({ where: { id: e.tenantId } }),
    candidates(db, e, s),
  ]);
  const settings = tenantSettings(tenant);
  if (!settings.agents_enabled || !found.size) return [];
  const [agents, actor, parentRun] = await Promise.all([
    // Whatever the trigger, an agent acts only in studios it is a member of.
    db.user.findMany({
      where: {
        id: { in: [...found.keys()] },
        archivedAt: null,
        memberships: { some: { studioId: s.studioId } },
      },
    }),
    db.user.findUniqueOrThrow({ where: { id: e.actorId } }),
    e.runId ? db.subagentTaskRun.findUnique({ where: { id: e.runId }, select: { chainDepth: true } }) : null,
  ]);
  const depth = parentRun ? parentRun.chainDepth + 1 : 0;
  const created: string[] = [];
  for (const agent of agents) {
    const kind = found.get(agent.id)!;
    const cfg = agentConfig(agent);
    const id = await queueTriggered(db, agent, settings, {
      tenantId: e.tenantId,
      agentId: agent.id,
      initiatedById: e.actorId,
      triggerEventId: e.id,
      triggerKind: kind,
      threadId: s.thread?.id ?? (s.kind === "comment" ? undefined : s.id),
      chainDepth: depth,
      task: triggerTask(kind, actor, s),
      model: resolveModel(cfg, settings, undefined),
      maxSteps: cfg.max_steps,
      timeoutSeconds: cfg.timeout_seconds,
    });
    if (id) created.push(id);
    // A person who mentioned it is told when it will not answer (paused, rate limited…), once.
    else if (kind === "mention" && actor.kind === "person") await noticeUnanswered(db, e, agent, s.path);
  }
  return created;
}

/**
 * Queues a run that something other than a person's run form asked for, through the guards
 * every trigger shares: a paused agent, the agent-to-agent chain depth, and (unless the
 * trigger has a limit of its own) the agent's trigger rate. A refused trigger is recorded
 * as a skipped run, so the owner sees why. Returns the run's id, or null when skipped or
 * when this (agent, trigger) already has a run.
 */
export async function queueTriggered(
  db: PrismaClient | Db,
  agent: Pick<User, "id" | "pausedAt" | "pausedReason">,
  settings: TenantSettings,
  run: NewRun,
  opts: { rateLimited?: boolean } = {},
): Promise<string | null> {
  // In the caller's transaction when it has one (a trigger that claims its work in it), else in one of its own.
  return inTransaction(db, async (tx) => {
    // Serializes this agent's trigger decisions, so the rate limit holds however many events arrive at once.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`trigger:${agent.id}`}))`;
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
    if (opts.rateLimited !== false) {
      const recent = await tx.subagentTaskRun.count({
        where: {
          agentId: agent.id,
          triggerKind: { not: "manual" },
          status: { not: "skipped" },
          createdAt: { gt: new Date(Date.now() - 60_000) },
        },
      });
      if (recent >= settings.trigger_rate_per_minute) {
        await recordSkipped(
          tx,
          run,
          "rate_limited",
          `More than ${settings.trigger_rate_per_minute} triggers in a minute.`,
        );
        return null;
      }
    }
    return (await queueRun(tx, run))?.id ?? null;
  });
}
