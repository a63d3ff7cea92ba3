// The notifications page: each notification one sentence a person reads at a glance (who,
// what, on which note, linked), with a Dismiss button; agents read the same page in markdown.
import { plural } from "../../lib/plural.ts";
import { studiosSeenByViewers } from "../access.ts";
import { REFUSAL } from "../agents/triggers/refusals.ts";
import { unreadOf } from "../notifications.ts";
import { markdownToHtml } from "../registry/html.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Ctx, definePage } from "../registry/types.ts";
import { excerpt, home, pager, paging, when, who } from "./format.ts";
import { verb } from "./people.ts";

const SUBJECT = /^\/studios\/[^/]+\/(notes|decisions|commitments)\/([a-z0-9]+)$/;
const KIND: Record<string, string> = { notes: "note", decisions: "decision", commitments: "commitment" };

/**
 * What each notification is about, named for a person: the note "Retro day", not its path.
 * Only from studios the reader is still in; anything else is "a note".
 */
async function titlesOf(ctx: Ctx, paths: string[]): Promise<Map<string, string>> {
  const ids: Record<string, string[]> = { notes: [], decisions: [], commitments: [] };
  for (const path of paths) {
    const match = SUBJECT.exec(path);
    if (match) ids[match[1]!]!.push(match[2]!);
  }
  const where = (list: string[]) => ({
    id: { in: list },
    tenantId: ctx.tenant.id,
    studio: { members: { some: { userId: ctx.actor.id } } },
  });
  const [notes, decisions, commitments] = await Promise.all([
    ids.notes!.length
      ? ctx.db.note.findMany({ where: where(ids.notes!), select: { id: true, title: true } })
      : [],
    ids.decisions!.length
      ? ctx.db.decision.findMany({ where: where(ids.decisions!), select: { id: true, question: true } })
      : [],
    ids.commitments!.length
      ? ctx.db.commitment.findMany({ where: where(ids.commitments!), select: { id: true, title: true } })
      : [],
  ]);
  return new Map<string, string>([
    ...notes.filter((n) => n.title).map((n): [string, string] => [n.id, n.title]),
    ...decisions.map((d): [string, string] => [d.id, d.question]),
    ...commitments.map((c): [string, string] => [c.id, c.title]),
  ]);
}

/** "the note “Retro day”", or "a note" when its title is unknown here. */
function thingAt(path: string, titles: Map<string, string>): string {
  const match = SUBJECT.exec(path);
  if (!match) return "a page";
  const title = titles.get(match[2]!);
  return title ? `the ${KIND[match[1]!]} “${excerpt(title, 80)}”` : `a ${KIND[match[1]!]}`;
}

/**
 * One notification as a sentence with a link to act on it. Agents read its id (they dismiss by
 * it); people see the sentence without it.
 */
function notificationBlock(
  titles: Map<string, string>,
  notification: {
    id: string;
    kind: string;
    path: string;
    excerpt: string;
    createdAt: Date;
    actor: { name: string; handle: string };
  },
) {
  const name = who(notification.actor);
  // Notifications written before the sentences were: "asks: …", "wants to …".
  const text = excerpt(notification.excerpt.replace(/^asks: /, ""), 280);
  let line: string;
  if (notification.kind !== "agent")
    line = `${name} ${verb(notification.kind)} ${link(mdEscape(thingAt(notification.path, titles)), notification.path)}\n\n${quote(text)}`;
  else if (text.startsWith(REFUSAL))
    line = `${name} ${mdEscape(text)} · ${link("See why", notification.path)}`;
  else if (notification.path.includes("/runs/"))
    line = `${name} asks you: “${mdEscape(text)}” · ${link("Answer", notification.path)}`;
  else if (notification.path.includes("/pending/"))
    line = `${name} ${mdEscape(text)} · ${link("Review", notification.path)}`;
  else if (notification.path.endsWith("/usage"))
    line = `${name} ${mdEscape(text)} · ${link("See its usage", notification.path)}`;
  else line = `${name} ${mdEscape(text)} · ${link("Open", notification.path)}`;
  const [first, ...rest] = line.split("\n\n");
  const stamp = ` · ${when(notification.createdAt)}`;
  const markdown = [`- ${first}${stamp} · notification \`${notification.id}\``, ...rest].join("\n\n");
  return { md: markdown, html: markdownToHtml([`- ${first}${stamp}`, ...rest].join("\n\n")) };
}

export const notificationsPage = definePage({
  pattern: "/notifications",
  actions: ["dismiss", "dismiss_all"],
  resolve: async () => ({}),
  async render(ctx, _scope, query) {
    const paged = paging(query);
    // A run acting within someone's view lists only what happened where they can read.
    const seen = await studiosSeenByViewers(ctx);
    const where = {
      ...unreadOf(ctx.actor.id, ctx.tenant.id),
      ...(seen && { event: { OR: [{ studioId: null }, { studioId: { in: seen } }] } }),
    };
    const [items, total] = await Promise.all([
      ctx.db.notification.findMany({
        where,
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        skip: paged.skip,
        take: paged.take,
        include: { actor: true, event: { select: { studioId: true } } },
      }),
      ctx.db.notification.count({ where }),
    ]);
    const titles = await titlesOf(
      ctx,
      items.map((n) => n.path),
    );
    return {
      title: "Notifications",
      breadcrumb: [home, { label: "Notifications" }],
      blocks: items.length
        ? [
            { md: `${plural(total, "unread notification")}.` },
            ...items.flatMap((notification) => [
              notificationBlock(titles, notification),
              { form: { action: "dismiss", fixed: { id: notification.id }, label: "Dismiss" } },
            ]),
            { md: pager("/notifications", paged, total) },
          ]
        : [{ md: "_You are all caught up._" }],
      // Each notification quotes where it happened.
      sources: items.flatMap((n) => (n.event.studioId ? [{ studio: n.event.studioId }] : [])),
    };
  },
});
