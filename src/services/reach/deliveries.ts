// Delivers an outgoing webhook: the stored body, signed as inbound webhooks are signed
// (X-Cadre-Signature: t=<unix seconds>,v1=<HMAC-SHA256 of "<t>.<body>">), POSTed with a
// time limit. A failed attempt is tried again with exponential backoff (the job's); after
// its last attempt the delivery has failed, and after OUTBOUND_DISABLE_AFTER failed
// deliveries in a row the endpoint is turned off and its keepers told (endpoints.ts).
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
  ep: OutboundEndpoint,
  d: Pick<OutboundDelivery, "id" | "body" | "eventType">,
  deliveryOptions: DeliveryOptions,
) {
  const refused = await checkResolvedUrl(ep.url);
  if (refused) return { status: null, error: refused };
  try {
    const res = await fetch(ep.url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(deliveryOptions.timeoutMs),
      headers: {
        "content-type": "application/json",
        "user-agent": "Cadre-Webhooks/1",
        "x-cadre-event": d.eventType,
        ...signedHeaders("cadre", openEndpointSecret(ep), Buffer.from(d.body), d.id),
      },
      body: d.body,
    });
    const text = await res.text().catch(() => "");
    if (res.ok) return null;
    return { status: res.status, error: `answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ""}` };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    return {
      status: null,
      error:
        e.name === "TimeoutError"
          ? `no answer within ${deliveryOptions.timeoutMs} ms`
          : (e.cause?.code ?? e.message),
    };
  }
}

/** "delivered", "failed" (for good), or "skipped"; throws to be tried again. */
export async function deliver(
  db: PrismaClient,
  id: string,
  o: DeliveryOptions,
): Promise<"delivered" | "failed" | "skipped"> {
  const d = await claim(db, id);
  if (!d) return "skipped";
  const ep = await db.outboundEndpoint.findUnique({ where: { id: d.endpointId } });
  if (!ep?.enabled) {
    await settle(db, id, "failed", { status: null, error: "the endpoint was turned off" });
    return "failed";
  }
  const failure = await post(ep, d, o);
  if (!failure) {
    await settle(db, id, "delivered", null);
    await db.outboundEndpoint.update({ where: { id: ep.id }, data: { failures: 0 } });
    return "delivered";
  }
  if (d.attempts < o.maxAttempts) {
    await db.$executeRaw`
      UPDATE outbound_deliveries SET claimed_until = NULL, last_status = ${failure.status}, last_error = ${failure.error},
        next_attempt_at = now() + make_interval(secs => 60 + ${o.backoffMs / 1000} * power(2, attempts))
      WHERE id = ${id}`;
    throw new Error(`delivery ${id} to endpoint ${ep.id} failed: ${failure.error}`);
  }
  await settle(db, id, "failed", failure);
  await countFailure(db, ep, o.disableAfter);
  return "failed";
}

function settle(
  db: Db,
  id: string,
  status: "delivered" | "failed",
  f: { status: number | null; error: string } | null,
) {
  return db.outboundDelivery.update({
    where: { id },
    data: {
      status,
      claimedUntil: null,
      ...(status === "delivered" ? { deliveredAt: new Date(), lastStatus: 200, lastError: null } : {}),
      ...(f && { lastStatus: f.status, lastError: f.error }),
    },
  });
}

/** One more delivery failed for good: at the limit the endpoint is turned off, once, and its keepers told (endpoints.ts). */
async function countFailure(db: PrismaClient, ep: OutboundEndpoint, disableAfter: number) {
  await db.$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<{ disabled: boolean }[]>`
      UPDATE outbound_endpoints SET failures = failures + 1,
        enabled = CASE WHEN failures + 1 >= ${disableAfter} THEN false ELSE enabled END,
        disabled_reason = CASE WHEN failures + 1 >= ${disableAfter} AND enabled
          THEN ${`${disableAfter} deliveries in a row failed`} ELSE disabled_reason END
      WHERE id = ${ep.id}
      RETURNING (failures = ${disableAfter} AND NOT enabled) AS disabled`;
    if (row?.disabled)
      await emitEvent(tx, {
        tenantId: ep.tenantId,
        actorId: ep.ownerId,
        type: ENDPOINT_DISABLED,
        subjectType: "endpoint",
        subjectId: ep.id,
      });
  });
}
