// Delivers an outgoing webhook: the stored body, signed as inbound webhooks are signed
// (X-Cadre-Signature: t=<unix seconds>,v1=<HMAC-SHA256 of "<t>.<body>">), POSTed with a
// time limit. A failed attempt is tried again with exponential backoff (the job's); after
// its last attempt the delivery has failed, and after OUTBOUND_DISABLE_AFTER failed
// deliveries in a row the endpoint is turned off and its keepers told (endpoints.ts). A
// paused endpoint (its creator left its studio) sends nothing and fails nothing: its
// deliveries wait, pending, until an admin confirms it.
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type { OutboundDelivery, OutboundEndpoint } from "../../generated/prisma/client.ts";
import { signedHeaders } from "../agents/automations/webhook-signatures.ts";
import { emitEvent } from "../events.ts";
import { checkResolvedUrl } from "../money/keys.ts";
import { ENDPOINT_DISABLED, openEndpointSecret } from "./endpoints.ts";

export interface DeliveryOptions {
  timeoutMs: number;
  maxAttempts: number;
  backoffMs: number;
  disableAfter: number;
}

const CLAIM_SECONDS = 120;

async function claim(db: Db, id: string) {
  const [row] = await db.$queryRaw<OutboundDelivery[]>`
    UPDATE outbound_deliveries SET claimed_until = now() + make_interval(secs => ${CLAIM_SECONDS}),
      attempts = attempts + 1
    WHERE id = ${id} AND status = 'pending' AND (claimed_until IS NULL OR claimed_until < now())
    RETURNING id, attempts, body, endpoint_id AS "endpointId", event_type AS "eventType"`;
  return row ?? null;
}

/** One POST; null when the receiver answered 2xx, else what went wrong. */
async function post(
  endpoint: OutboundEndpoint,
  delivery: Pick<OutboundDelivery, "id" | "body" | "eventType">,
  deliveryOptions: DeliveryOptions,
) {
  const refused = await checkResolvedUrl(endpoint.url);
  if (refused) return { status: null, error: refused };
  try {
    const res = await fetch(endpoint.url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(deliveryOptions.timeoutMs),
      headers: {
        "content-type": "application/json",
        "user-agent": "Cadre-Webhooks/1",
        "x-cadre-event": delivery.eventType,
        ...signedHeaders("cadre", openEndpointSecret(endpoint), Buffer.from(delivery.body), delivery.id),
      },
      body: delivery.body,
    });
    const text = await res.text().catch(() => "");
    if (res.ok) return null;
    return { status: res.status, error: `answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ""}` };
  } catch (err) {
    const error = err as Error & { cause?: { code?: string } };
    return {
      status: null,
      error:
        error.name === "TimeoutError"
          ? `no answer within ${deliveryOptions.timeoutMs} ms`
          : (error.cause?.code ?? error.message),
    };
  }
}

/** "delivered", "failed" (for good), or "skipped"; throws to be tried again. */
export async function deliver(
  db: PrismaClient,
  id: string,
  options: DeliveryOptions,
): Promise<"delivered" | "failed" | "skipped"> {
  const delivery = await claim(db, id);
  if (!delivery) return "skipped";
  const endpoint = await db.outboundEndpoint.findUnique({ where: { id: delivery.endpointId } });
  if (endpoint?.pausedAt) {
    // Paused until an admin confirms it (endpoints.ts): the delivery waits, its try uncounted.
    await db.$executeRaw`
      UPDATE outbound_deliveries SET claimed_until = NULL, attempts = attempts - 1 WHERE id = ${id}`;
    return "skipped";
  }
  if (!endpoint?.enabled) {
    await settle(db, id, "failed", { status: null, error: "the endpoint was turned off" });
    return "failed";
  }
  const failure = await post(endpoint, delivery, options);
  if (!failure) {
    await settle(db, id, "delivered", null);
    await db.outboundEndpoint.update({ where: { id: endpoint.id }, data: { failures: 0 } });
    return "delivered";
  }
  if (delivery.attempts < options.maxAttempts) {
    await db.$executeRaw`
      UPDATE outbound_deliveries SET claimed_until = NULL, last_status = ${failure.status}, last_error = ${failure.error},
        next_attempt_at = now() + make_interval(secs => 60 + ${options.backoffMs / 1000} * power(2, attempts))
      WHERE id = ${id}`;
    throw new Error(`delivery ${id} to endpoint ${endpoint.id} failed: ${failure.error}`);
  }
  await settle(db, id, "failed", failure);
  await countFailure(db, endpoint, options.disableAfter);
  return "failed";
}

function settle(
  db: Db,
  id: string,
  status: "delivered" | "failed",
  failure: { status: number | null; error: string } | null,
) {
  return db.outboundDelivery.update({
    where: { id },
    data: {
      status,
      claimedUntil: null,
      ...(status === "delivered" ? { deliveredAt: new Date(), lastStatus: 200, lastError: null } : {}),
      ...(failure && { lastStatus: failure.status, lastError: failure.error }),
    },
  });
}

/** One more delivery failed for good: at the limit the endpoint is turned off, once, and its keepers told (endpoints.ts). */
async function countFailure(db: PrismaClient, endpoint: OutboundEndpoint, disableAfter: number) {
  await db.$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<{ disabled: boolean }[]>`
      UPDATE outbound_endpoints SET failures = failures + 1,
        enabled = CASE WHEN failures + 1 >= ${disableAfter} THEN false ELSE enabled END,
        disabled_reason = CASE WHEN failures + 1 >= ${disableAfter} AND enabled
          THEN ${`${disableAfter} deliveries in a row failed`} ELSE disabled_reason END
      WHERE id = ${endpoint.id}
      RETURNING (failures = ${disableAfter} AND NOT enabled) AS disabled`;
    if (row?.disabled)
      await emitEvent(tx, {
        tenantId: endpoint.tenantId,
        actorId: endpoint.ownerId,
        type: ENDPOINT_DISABLED,
        subjectType: "endpoint",
        subjectId: endpoint.id,
      });
  });
}
