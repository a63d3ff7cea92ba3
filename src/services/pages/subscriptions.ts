// Subscriptions on the pages: an agent's list of what it watches (its owner's page), and,
// on every studio, note, decision and commitment page, who watches it and a form to have
// one of your agents watch it too.
import type { AgentSubscription } from "../../generated/prisma/client.ts";
import { watchedBy } from "../actions/subscriptions.ts";
import { SUBSCRIPTION_EVENTS } from "../agents/automations/subscriptions.ts";
import { loadAgent, managedBy } from "../agents/core/ownership.ts";
import { agentConfig } from "../agents/core/settings.ts";
import { link, mdEscape } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage, type Scope } from "../registry/types.ts";
import { agentCrumbs, when } from "./format.ts";
import { runLine } from "./runs.ts";

/** Where each subscription's subject lives, and what to call it. */
export async function describeSubjects(ctx: Ctx, subs: AgentSubscription[]) {
  const ids = (type: string) => subs.filter((s) => s.subjectType === type).map((s) => s.subjectId);
  const [studios, notes, decisions, commitments] = await Promise.all([
    ctx.db.studio.findMany({ where: { id: { in: subs.map((s) => s.studioId) } } }),
    ctx.db.note.findMany({ where: { id: { in: ids("note") } }, select: { id: true, title: true } }),
    ctx.db.decision.findMany({
      where: { id: { in: ids("decision") } },
      select: { id: true, question: true },
    }),
    ctx.db.commitment.findMany({
      where: { id: { in: ids("commitment") } },
      select: { id: true, title: true },
    }),
  ]);
  const handle = new Map(studios.map((s) => [s.id, s.handle]));
  const titles = new Map<string, string>([
    ...notes.map((n) => [n.id, n.title || "Untitled note"] as const),
    ...decisions.map((d) => [d.id, d.question] as const),
    ...commitments.map((c) => [c.id, c.title] as const),
  ]);
  return (subscription: AgentSubscription) => {
    const base = `/studios/${handle.get(subscription.studioId) ?? "?"}`;
    if (subscription.subjectType === "studio")
      return { label: `studio #${handle.get(subscription.studioId)}`, path: base };
    return {
      label: `${subscription.subjectType} “${titles.get(subscription.subjectId) ?? subscription.subjectId}”`,
      path: `${base}/${subscription.subjectType}s/${subscription.subjectId}`,
    };
  };
}

export const subscriptionsPage = definePage({
  pattern: "/subagents/:handle/subscriptions",
  actions: ["pause_subscription", "resume_subscription", "remove_subscription"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope) {
    const agent = scope.agent;
    const [subs, runs] = await Promise.all([
      ctx.db.agentSubscription.findMany({ where: { agentId: agent.id }, orderBy: { createdAt: "asc" } }),
      ctx.db.subagentTaskRun.findMany({
        where: { agentId: agent.id, triggerKind: "subscription" },
        orderBy: { createdAt: "desc" },
        take: 10,
      }),
    ]);
    const subject = await describeSubjects(ctx, subs);
    const blocks: Block[] = [
      {
        md: `What ${mdEscape(agent.name)} watches. An event there (by anyone but ${mdEscape(agent.name)}) starts one of its runs; events within ${agentConfig(agent).subscription_window_seconds} s of the first become one run that lists them all. Subscribe it from any studio, note, decision or commitment page.`,
      },
    ];
    if (!subs.length) blocks.push({ md: "_It watches nothing yet._" });
    for (const subscription of subs) {
      const where = subject(subscription);
      blocks.push({
        md: [
          `### ${where.label} {#${subscription.id}}`,
          "",
          `${link(where.path, where.path)} · wakes on ${subscription.events.join(", ")} · since ${when(subscription.createdAt)} · **${subscription.enabled ? "on" : "paused"}**`,
          subscription.disabledReason ? `\nTurned off: ${mdEscape(subscription.disabledReason)}` : "",
        ].join("\n"),
      });
      blocks.push({
        form: {
          action: subscription.enabled ? "pause_subscription" : "resume_subscription",
          fixed: { id: subscription.id },
          label: subscription.enabled ? "Pause" : "Resume",
        },
      });
      blocks.push({
        form: { action: "remove_subscription", fixed: { id: subscription.id }, label: "Remove" },
      });
    }
    blocks.push({
      md: `## Runs its subscriptions started\n\n${runs.length ? runs.map((r) => runLine(agent.handle, r)).join("\n") : "_None yet._"}`,
    });
    return {
      title: `What ${agent.name} watches`,
      breadcrumb: [...agentCrumbs(agent), { label: "Subscriptions" }],
      blocks,
    };
  },
});

/**
 * On a studio or content page: the agents watching it, and for a person, a form to have one
 * of their agents (members of the studio) watch it, or stop.
 */
export async function watchBlocks(ctx: Ctx, scope: Scope): Promise<Block[]> {
  // An agent sees `subscribe` among the page's actions and what it watches on /whoami; its
  // every step reads a page, so this costs it nothing.
  if (ctx.actor.kind !== "person") return [];
  const target = watchedBy(scope);
  const [watchers, mine] = await Promise.all([
    ctx.db.agentSubscription.findMany({
      where: { tenantId: ctx.tenant.id, subjectType: target.type, subjectId: target.id, enabled: true },
      include: { agent: { select: { handle: true } } },
      orderBy: { createdAt: "asc" },
    }),
    ctx.actor.kind === "person"
      ? ctx.db.user.findMany({
          where: {
            tenantId: ctx.tenant.id,
            ...managedBy(ctx.actor.id),
            archivedAt: null,
            memberships: { some: { studioId: target.studioId } },
          },
          select: { handle: true, name: true },
          orderBy: { handle: "asc" },
        })
      : [],
  ]);
  const blocks: Block[] = [];
  if (watchers.length)
    blocks.push({
      md: `Watched by ${watchers.map((w) => `${link(`@${w.agent.handle}`, `/u/${w.agent.handle}`)} (${w.events.length === SUBSCRIPTION_EVENTS.length ? "everything" : w.events.join(", ")})`).join(", ")}.`,
    });
  const managed = new Set(mine.map((m) => m.handle));
  for (const watcher of watchers.filter((x) => managed.has(x.agent.handle)))
    blocks.push({
      form: {
        action: "unsubscribe",
        fixed: { agent: watcher.agent.handle },
        label: `Stop @${watcher.agent.handle} watching`,
      },
    });
  if (mine.length)
    blocks.push({
      form: {
        action: "subscribe",
        fixed: {},
        label: "Have one of your agents watch this",
        style: "folded",
        fields: ["agent", ...SUBSCRIPTION_EVENTS],
        values: { agent: mine[0]!.handle },
        choices: { agent: mine.map((m) => ({ value: m.handle, label: `@${m.handle} (${m.name})` })) },
      },
    });
  return blocks;
}
