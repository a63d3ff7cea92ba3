// How a webhook's sender signs a delivery, per webhook: Cadre's own header (a timestamp in
// the signed text, so a captured request cannot be replayed minutes later) or GitHub's
// (the body alone; GitHub's delivery id makes a replay find the run it already started).
// Both are HMAC-SHA256 with the webhook's secret, compared in constant time.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { WebhookSignature } from "../../../generated/prisma/client.ts";

/** A Cadre signature older (or further ahead) than this is refused. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export const SCHEMES: Record<
  WebhookSignature,
  { title: string; header: string; delivery: string; shape: string }
> = {
  cadre: {
    title: "Cadre's",
    header: "X-Cadre-Signature",
    delivery: "X-Cadre-Delivery",
    shape: "t=<unix seconds>,v1=<hex HMAC-SHA256 of “<t>.<raw body>”>",
  },
  github: {
    title: "GitHub's",
    header: "X-Hub-Signature-256",
    delivery: "X-GitHub-Delivery",
    shape: "sha256=<hex HMAC-SHA256 of the raw body>",
  },
};

/** The hex HMAC-SHA256 of `<timestamp>.<raw body>`: what `X-Cadre-Signature` carries as `v1`. */
export function sign(secret: string, timestamp: number, body: Buffer): string {
  return createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex");
}

/** `sha256=<hex HMAC-SHA256 of the raw body>`: what GitHub sends as `X-Hub-Signature-256`. */
export function signGithub(secret: string, body: Buffer): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** The headers a sender using `scheme` sends with `body`: a test delivery sends exactly these. */
export function signedHeaders(
  scheme: WebhookSignature,
  secret: string,
  body: Buffer,
  delivery: string,
  nowMs = Date.now(),
): Record<string, string> {
  const t = Math.floor(nowMs / 1000);
  const signature = scheme === "cadre" ? `t=${t},v1=${sign(secret, t, body)}` : signGithub(secret, body);
  return {
    [SCHEMES[scheme].header.toLowerCase()]: signature,
    [SCHEMES[scheme].delivery.toLowerCase()]: delivery,
  };
}

/** `missing`: no signature header of the webhook's scheme; `other`: none, but the other scheme's. */
export type Verdict = "ok" | "bad" | "stale" | "missing" | "other";

const sameHex = (want: string, got: string) =>
  /^[0-9a-f]{64}$/i.test(got) && timingSafeEqual(Buffer.from(want, "hex"), Buffer.from(got, "hex"));

/** Checks `t=<unix seconds>,v1=<hex>` against the body. */
export function verifySignature(secret: string, header: unknown, body: Buffer, nowMs = Date.now()): Verdict {
  if (typeof header !== "string" || header.length > 1000) return "bad";
  const parts = new Map(
    header.split(",").map((p) => {
      const index = p.indexOf("=");
      return [p.slice(0, index).trim(), p.slice(index + 1).trim()] as const;
    }),
  );
  const t = parts.get("t") ?? "";
  const v1 = parts.get("v1") ?? "";
  if (!/^\d{1,12}$/.test(t) || !/^[0-9a-f]{64}$/i.test(v1)) return "bad";
  if (Math.abs(nowMs / 1000 - Number(t)) > SIGNATURE_TOLERANCE_SECONDS) return "stale";
  return sameHex(sign(secret, Number(t), body), v1) ? "ok" : "bad";
}

function verifyGithub(secret: string, header: unknown, body: Buffer): Verdict {
  if (typeof header !== "string" || !header.startsWith("sha256=")) return "bad";
  return sameHex(signGithub(secret, body).slice(7), header.slice(7)) ? "ok" : "bad";
}

/**
 * The delivery's signature under the webhook's scheme, against each secret it accepts now
 * (the current one, and the one before it during a rotation's grace period).
 */
export function verify(
  scheme: WebhookSignature,
  secrets: string[],
  headers: IncomingHttpHeaders,
  body: Buffer,
  nowMs = Date.now(),
): Verdict {
  const header = headers[SCHEMES[scheme].header.toLowerCase()];
  if (header === undefined) {
    const other = scheme === "cadre" ? SCHEMES.github : SCHEMES.cadre;
    return headers[other.header.toLowerCase()] === undefined ? "missing" : "other";
  }
  let verdict: Verdict = "bad";
  for (const secret of secrets) {
    const value =
      scheme === "cadre" ? verifySignature(secret, header, body, nowMs) : verifyGithub(secret, header, body);
    if (value === "ok") return value;
    if (value === "stale") verdict = value;
  }
  return verdict;
}

/** What a refused delivery's 401 says: a sender without a signature, or with another sender's, is told which. */
export function refusal(scheme: WebhookSignature, verdict: Exclude<Verdict, "ok">): string {
  const s = SCHEMES[scheme];
  const expects = `This webhook expects ${s.title} signature: ${s.header}: ${s.shape}.`;
  switch (verdict) {
    case "missing":
      return `No signature. ${expects}`;
    case "other": {
      const o = scheme === "cadre" ? SCHEMES.github : SCHEMES.cadre;
      return `Signed ${o.title} way (${o.header}), but ${expects.charAt(0).toLowerCase()}${expects.slice(1)} Its owner can switch it to ${o.title} on the webhook's page.`;
    }
    case "stale":
      return `The signature's timestamp is more than ${SIGNATURE_TOLERANCE_SECONDS / 60} minutes away from now.`;
    default:
      return `The signature does not match (${s.header}: ${s.shape}).`;
  }
}
