// From an event to the messages that tell of it outside the app: a mail to each manager of
// the agent who asked for one (or a line in their digest), and a delivery to each outgoing
// webhook that listens for it. Written in one transaction, one row per (event, person) and
// (event, endpoint), so a re-delivered event sends nothing twice; the caller queues the ids.
import { type Db, hotQuery, type PrismaClient } from "../../db/prisma.ts";
import { type Event, Prisma } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import { managersOf } from "../agents/core/ownership.ts";
import { pageTitles, type TitleReader } from "../page-titles.ts";
import { hookOf, type News, newsOf } from "./news.ts";
import { reachKindOf, reachPrefs } from "./preferences.ts";
import { hookBody, mailOf, type Told } from "./render.ts";
import { mintReviewLinks, reviewPath } from "./review-links.ts";

export interface ReachOptions {
  /** Whether mail is set up (SMTP_URL): without it nobody is mailed. */
  mail: boolean;
  /** The workspace's address from outside (lib/origin.ts). */
  origin: (subdomain: string) => string;
}

export interface Reached {
  emails: string[];
  deliveries: string[];
}

const NONE: Reached = { emails: [], deliveries: [] };
/** Where a person chooses what they hear of: every mail links there. */
export const settingsPathOf = (handle: string) => `/u/${handle}/settings/notifications`;

async function told(tx: Db, news: News, origin: string, reader: TitleReader): Promise<Told> {
  const titles = news.place ? await pageTitles(tx, news.agent.tenantId, reader, [news.place]) : null;
  return { news, origin, title: (news.place && titles?.get(news.place)) ?? null };
}

/** Inserted unless this (event, person) has its mail already; its id when new. */
async function insertMail(
  tx: Db,
  row: { tenantId: string; userId: string; eventId: string; kind: string; held: boolean } & ReturnType<
    typeof mailOf
  >,
): Promise<string | null> {
  const [added] = await tx.$queryRaw<{ id: string }[]>`
    INSERT INTO outbound_emails (id, tenant_id, user_id, event_id, kind, subject, text, html, status)
    VALUES (${newId()}, ${row.tenantId}, ${row.userId}, ${row.eventId}, ${row.kind}, ${row.subject}, ${row.text},
      ${row.html}, ${row.held ? "held" : "queued"}::"EmailStatus")
    ON CONFLICT (event_id, user_id) DO NOTHING RETURNING id`;
  return added?.id ?? null;
}

async function queueMails(tx: Db, news: News, managers: string[], origin: string): Promise<string[]> {
  const people = await tx.user.findMany({
    where: { id: { in: managers }, kind: "person", archivedAt: null, email: { not: null } },
    select: { id: true, handle: true, reachPrefs: true },
  });
  const ids: string[] = [];
  // An event handled again (a retried job) mails nobody twice, and mints no second links.
  const done = await tx.outboundEmail.findMany({
    where: { eventId: news.event.id, userId: { in: people.map((p) => p.id) } },
    select: { userId: true },
  });
  const sent = new Set(done.map((d) => d.userId));
  for (const person of people) {
    if (sent.has(person.id)) continue;
    const channel = news.kind ? reachPrefs(person.reachPrefs)[news.kind] : "off";
    if (channel !== "email" && channel !== "digest") continue;
    const notice = await told(tx, news, origin, { userId: person.id });
    // A digest's line links to the page; only a mail sent at once carries review links.
    const pending = channel === "email" && news.pendingId ? await pendingOf(tx, news.pendingId) : null;
    const tokens = pending
      ? await mintReviewLinks(tx, {
          tenantId: news.agent.tenantId,
          pendingId: pending.id,
          userId: person.id,
          ...pending,
        })
      : null;
    const links = tokens && {
      approve: `${origin}${reviewPath(tokens.approve)}`,
      reject: `${origin}${reviewPath(tokens.reject)}`,
    };
    const mail = mailOf(notice, links, `${origin}${settingsPathOf(person.handle)}`);
    const id = await insertMail(tx, {
      tenantId: news.agent.tenantId,
      userId: person.id,
      eventId: news.event.id,
      kind: news.kind!,
      held: channel === "digest",
      ...mail,
    });
    if (id && channel === "email") ids.push(id);
  }
  return ids;
}

const pendingOf = (tx: Db, id: string) =>
  tx.agentPendingAction.findUnique({ where: { id }, select: { id: true, params: true, expiresAt: true } });

async function queueDeliveries(
  tx: Db,
  news: News,
  managers: string[],
  origin: string,
  workspace: string,
): Promise<string[]> {
  const endpoints = await tx.outboundEndpoint.findMany({
    where: {
      tenantId: news.agent.tenantId,
      enabled: true,
      events: { has: news.hook },
      OR: [
        { studioId: null, ownerId: { in: managers } },
        ...(news.agent.ownerStudioId ? [{ studioId: news.agent.ownerStudioId }] : []),
      ],
    },
  });
  const ids: string[] = [];
  for (const endpoint of endpoints) {
    const id = newId();
    const notice = await told(
      tx,
      news,
      origin,
      endpoint.studioId ? { studioId: endpoint.studioId } : { userId: endpoint.ownerId },
    );
    const body = hookBody(notice, endpoint.format, id, workspace);
    const [added] = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO outbound_deliveries (id, tenant_id, endpoint_id, event_id, event_type, body)
      VALUES (${id}, ${endpoint.tenantId}, ${endpoint.id}, ${news.event.id}, ${news.hook}, ${body})
      ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id`;
    if (added) ids.push(added.id);
  }
  return ids;
}

/** Whether any enabled endpoint of the workspace listens for `hook`. */
async function listened(db: PrismaClient, tenantId: string, hook: string): Promise<boolean> {
  const rows = await hotQuery<{ one: number }>(
    db,
    Prisma.sql`SELECT 1 AS one FROM outbound_endpoints
      WHERE tenant_id = ${tenantId} AND enabled AND ${hook} = ANY(events) LIMIT 1`,
  );
  return rows.length > 0;
}

/** Writes the mails and deliveries an event makes; their ids, for the queue. */
export async function reachOut(db: PrismaClient, event: Event, reachOptions: ReachOptions): Promise<Reached> {
  const hook = hookOf(event.type);
  if (!hook) return NONE;
  // Most runs that end tell nobody (no mail for their kind, no endpoint listening): one
  // indexed read decides that, not the ORM reads of the news (they cost a run 1.5 ms of CPU).
  if (!(reachOptions.mail && reachKindOf(event.type)) && !(await listened(db, event.tenantId, hook)))
    return NONE;
  const news = await newsOf(db, event);
  if (!news) return NONE;
  const [tenant, managers] = await Promise.all([
    db.tenant.findUniqueOrThrow({ where: { id: event.tenantId }, select: { subdomain: true } }),
    managersOf(db, news.agent),
  ]);
  if (!managers.length && !news.agent.ownerStudioId) return NONE;
  const origin = reachOptions.origin(tenant.subdomain);
  return db.$transaction(async (tx) => ({
    emails: reachOptions.mail && news.kind ? await queueMails(tx, news, managers, origin) : [],
    deliveries: await queueDeliveries(tx, news, managers, origin, tenant.subdomain),
  }));
}

/** A `ping` to one endpoint, asked for on its page: signed and sent like any delivery. */
export async function queueTestDelivery(
  db: PrismaClient,
  event: Event,
  options: ReachOptions,
): Promise<Reached> {
  const endpoint = await db.outboundEndpoint.findFirst({
    where: { id: event.subjectId, tenantId: event.tenantId },
  });
  if (!endpoint) return NONE;
  const tenant = await db.tenant.findUniqueOrThrow({
    where: { id: event.tenantId },
    select: { subdomain: true },
  });
  const id = newId();
  const text = `A test event from Cadre for “${endpoint.name}”: this endpoint is set up.`;
  const body =
    endpoint.format === "slack"
      ? JSON.stringify({ text, blocks: [{ type: "section", text: { type: "mrkdwn", text } }] })
      : JSON.stringify({
          id,
          event: "ping",
          created_at: event.createdAt.toISOString(),
          workspace: tenant.subdomain,
          summary: text,
          url: `${options.origin(tenant.subdomain)}`,
        });
  const [added] = await db.$queryRaw<{ id: string }[]>`
    INSERT INTO outbound_deliveries (id, tenant_id, endpoint_id, event_id, event_type, body)
    VALUES (${id}, ${endpoint.tenantId}, ${endpoint.id}, ${event.id}, 'ping', ${body})
    ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id`;
  return { emails: [], deliveries: added ? [added.id] : [] };
}
