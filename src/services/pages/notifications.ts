// The notifications page: each notification one sentence a person reads at a glance (who,
// what, on which note, linked), with a Dismiss button; agents read the same page in markdown.
import { plural } from "../../lib/plural.ts";
import { studiosSeenByViewers } from "../access.ts";
import { REFUSAL } from "../agents/triggers/refusals.ts";
import { openPath, unreadOf } from "../notifications.ts";
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
export async function titlesOf(ctx: Ctx, paths: string[]): Promise<Map<string, string>> {
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

export type Listed = {
  id: string;
  kind: string;
  path: string;
  excerpt: string;
  createdAt: Date;
  actor: { name: string; handle: string };
};

/** The sentence, its link going to `href` (the page itself, or the route that opens and reads it). */
function sentence(titles: Map<string, string>, notification: Listed, href: string): string {
  const name = who(notification.actor);
  // Notifications written before the sentences were: "asks: …", "wants to …".
  const text = excerpt(notification.excerpt.replace(/^asks: /, ""), 280);
  const { path } = notification;
  if (notification.kind !== "agent")
    return `${name} ${verb(notification.kind)} ${link(mdEscape(thingAt(path, titles)), href)}\n\n${quote(text)}`;
  if (text.startsWith(REFUSAL))
    return `${name} ${mdEscape(text)} · ${link(path.includes("/runs/") ? "See why" : "Open the thread", href)}`;
  if (path.includes("/runs/")) return `${name} asks you: “${mdEscape(text)}” · ${link("Answer", href)}`;
  if (path.includes("/pending/")) return `${name} ${mdEscape(text)} · ${link("Review", href)}`;
  if (path.endsWith("/usage")) return `${name} ${mdEscape(text)} · ${link("See its usage", href)}`;
  return `${name} ${mdEscape(text)} · ${link("Open", href)}`;
}

/**
 * One notification as a sentence with a link to act on it. Agents read its id (they dismiss by
 * it) and the page's own path; people see the sentence without the id, its link going through
 * the route that marks it read as it opens the page (routes/notification-open.ts).
 */
export function notificationBlock(titles: Map<string, string>, notification: Listed) {
  const stamp = ` · ${when(notification.createdAt)}`;
  const [first, ...rest] = sentence(titles, notification, notification.path).split("\n\n");
  const markdown = [`- ${first}${stamp} · notification \`${notification.id}\``, ...rest].join("\n\n");
  const [opened, ...more] = sentence(titles, notification, openPath(notification.id)).split("\n\n");
  return { md: markdown, html: markdownToHtml([`- ${opened}${stamp}`, ...more].join("\n\n")) };
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
            {
              md: `${plural(total, "unread notification")}. Dismiss one by its id, or all at once.`,
              html: markdownToHtml(`${plural(total, "unread notification")}. Opening one marks it read.`),
            },
            { form: { action: "dismiss_all", fixed: {}, label: "Mark all read" } },
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
