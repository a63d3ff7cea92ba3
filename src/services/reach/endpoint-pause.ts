// A studio's outgoing endpoint answers to the admin who set it up. When that person leaves the
// studio (removed, or left) or stops being its admin, the endpoint is paused in the
// transaction that changed the membership, and the studio's remaining admins are told there
// too: a notification each, and a mail to those who hear of what waits for them by mail
// (their "approval" choice, since only an admin's confirmation starts it again).
import type { Db } from "../../db/prisma.ts";
import { queueAccountMail } from "../accounts/mail.ts";
import { studioAdmins } from "../agents/core/ownership.ts";
import { emitEvent } from "../events.ts";
import { insertNotifications } from "../notifications.ts";
import { endpointPath } from "./endpoints.ts";
import { mailConfigured, reachPrefs } from "./preferences.ts";

export const ENDPOINTS_PAUSED = "endpoints.paused";

export interface Departure {
  tenantId: string;
  /** Who changed the membership (the admin who removed them, or the person leaving). */
  actorId: string;
  studio: { id: string; name: string };
  person: { id: string; handle: string };
  /** Why, in words: "@dana left General". */
  why: string;
  /** `https://<workspace host>`, for the mail's link; absent in process (the mail names the page). */
  origin?: string;
}

/**
 * Pauses the studio's endpoints `person` set up, until a remaining admin confirms the URL is
 * still the studio's to send to, and tells those admins. Nothing is sent meanwhile, and
 * nothing is lost: deliveries wait, pending (deliveries.ts, sweep.ts). Returns how many paused.
 */
export async function pauseEndpointsOf(tx: Db, departure: Departure): Promise<number> {
  const { studio, person } = departure;
  const endpoints = await tx.outboundEndpoint.findMany({
    where: { studioId: studio.id, ownerId: person.id, pausedAt: null },
    select: { id: true, name: true },
    orderBy: { createdAt: "asc" },
  });
  if (!endpoints.length) return 0;
  await tx.outboundEndpoint.updateMany({
    where: { id: { in: endpoints.map((endpoint) => endpoint.id) } },
    data: { pausedAt: new Date(), pausedReason: departure.why },
  });
  await tellAdmins(tx, departure, endpoints);
  return endpoints.length;
}

async function tellAdmins(tx: Db, departure: Departure, endpoints: { id: string; name: string }[]) {
  // Read after the membership changed: the person who left is no longer among them.
  const admins = await studioAdmins(tx, departure.studio.id);
  if (!admins.length) return;
  const eventId = await emitEvent(tx, {
    tenantId: departure.tenantId,
    actorId: departure.actorId,
    type: ENDPOINTS_PAUSED,
    subjectType: "user",
    subjectId: departure.person.id,
    payload: { studio: departure.studio.id, endpoints: endpoints.map((endpoint) => endpoint.id) },
  });
  const names = endpoints.map((endpoint) => `“${endpoint.name}”`).join(", ");
  const which = endpoints.length === 1 ? `outgoing webhook ${names} is` : `outgoing webhooks ${names} are`;
  const told = `${departure.studio.name}'s ${which} paused: ${departure.why}, who set ${endpoints.length === 1 ? "it" : "them"} up. Deliveries wait until an admin confirms ${endpoints.length === 1 ? "it" : "them"}.`;
  await insertNotifications(
    tx,
    admins.map((admin) => ({
      tenantId: departure.tenantId,
      userId: admin.id,
      actorId: departure.actorId,
      eventId,
      kind: "agent" as const,
      path: endpointPath(admin.handle, endpoints[0]!.id),
      excerpt: told,
    })),
  );
  if (mailConfigured()) await mailAdmins(tx, departure, admins, endpoints[0]!.id, told);
}

async function mailAdmins(
  tx: Db,
  departure: Departure,
  admins: { id: string; handle: string }[],
  endpointId: string,
  told: string,
) {
  const people = await tx.user.findMany({
    where: { id: { in: admins.map((admin) => admin.id) }, email: { not: null } },
    select: { id: true, handle: true, reachPrefs: true },
  });
  for (const admin of people.filter((person) => reachPrefs(person.reachPrefs).approval === "email")) {
    const path = endpointPath(admin.handle, endpointId);
    await queueAccountMail(tx, {
      tenantId: departure.tenantId,
      userId: admin.id,
      kind: ENDPOINTS_PAUSED,
      subject: `${departure.studio.name}: an outgoing webhook is paused until you confirm it`,
      paragraphs: [
        told,
        departure.origin
          ? { label: "Review and confirm", url: `${departure.origin}${path}` }
          : `Review and confirm it at ${path}.`,
      ],
    });
  }
}

/** The membership change's notice, when it paused endpoints. */
export const pausedNotice = (count: number) =>
  count
    ? `. ${count === 1 ? "The outgoing webhook they set up is" : `The ${count} outgoing webhooks they set up are`} paused until an admin confirms ${count === 1 ? "it" : "them"}; deliveries wait meanwhile`
    : "";
