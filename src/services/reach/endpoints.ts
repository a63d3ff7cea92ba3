// Outgoing webhooks' endpoints: a person's own (the events of agents they manage) or a
// studio's, kept by its admins (the events of the studio's agents). The signing secret is
// sealed like a provider key, bound to its row, and shown once when made.
import { randomBytes } from "node:crypto";
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type { Event, OutboundEndpoint } from "../../generated/prisma/client.ts";
import { open, type Sealed, seal } from "../../lib/secrets.ts";
import { studioAdmins } from "../agents/core/ownership.ts";
import { keyring } from "../money/keyring.ts";
import { insertNotifications } from "../notifications.ts";

export const ENDPOINT_DISABLED = "endpoint.disabled";
/** "Send a test event": the worker writes and sends a `ping` delivery. */
export const ENDPOINT_TEST = "endpoint.test";

/** An endpoint's page, under its keeper's settings. */
export const endpointPath = (handle: string, id: string) => `/u/${handle}/settings/webhooks/${id}`;

const aad = (tenantId: string, id: string) => `cadre:outbound_endpoint:${tenantId}:${id}`;

export const newEndpointSecret = () => `whsec_${randomBytes(32).toString("base64url")}`;

export function sealEndpointSecret(tenantId: string, id: string, secret: string): Sealed {
  return seal(keyring().master, secret, aad(tenantId, id));
}

export function openEndpointSecret(
  endpoint: Pick<OutboundEndpoint, "id" | "tenantId" | "encryptedSecret" | "keyVersion">,
) {
  return open(
    keyring().master,
    { ciphertext: Buffer.from(endpoint.encryptedSecret), keyVersion: endpoint.keyVersion },
    aad(endpoint.tenantId, endpoint.id),
  );
}

/**
 * Who keeps an endpoint, with their handles: a studio's endpoint is kept by every admin of
 * the studio (any of them may turn it on again), a person's by that person.
 */
async function keepersOf(db: PrismaClient, endpoint: OutboundEndpoint) {
  if (!endpoint.studioId)
    return db.user.findMany({ where: { id: endpoint.ownerId }, select: { id: true, handle: true } });
  return studioAdmins(db, endpoint.studioId);
}

/** Tells an endpoint's keepers it was turned off, once each (one notification per event and person). */
export async function notifyEndpointOff(db: PrismaClient, event: Event): Promise<number> {
  const endpoint = await db.outboundEndpoint.findUnique({
    where: { id: event.subjectId },
    include: { studio: { select: { name: true } } },
  });
  if (!endpoint) return 0;
  const whose = endpoint.studio ? `${endpoint.studio.name}'s outgoing webhook` : "Your outgoing webhook";
  const keepers = await keepersOf(db, endpoint);
  return insertNotifications(
    db,
    keepers.map((key) => ({
      tenantId: endpoint.tenantId,
      userId: key.id,
      actorId: endpoint.ownerId,
      eventId: event.id,
      kind: "agent" as const,
      // Each keeper's own settings: the page is only reachable under one's own handle.
      path: endpointPath(key.handle, endpoint.id),
      excerpt: `${whose} “${endpoint.name}” was turned off: ${endpoint.disabledReason ?? "its deliveries kept failing"}. Fix the receiver, then turn it on again.`,
    })),
  );
}

/**
 * A remaining admin confirms a paused endpoint: it becomes theirs (they now answer for its
 * URL), and what waited is due at once, so the outbound sweep sends it within seconds.
 */
export async function confirmEndpoint(tx: Db, endpointId: string, confirmerId: string): Promise<number> {
  await tx.outboundEndpoint.update({
    where: { id: endpointId },
    data: { pausedAt: null, pausedReason: null, ownerId: confirmerId },
  });
  return tx.$executeRaw`
    UPDATE outbound_deliveries SET next_attempt_at = now() - interval '1 hour'
    WHERE endpoint_id = ${endpointId} AND status = 'pending'`;
}
