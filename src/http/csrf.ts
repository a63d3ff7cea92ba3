// CSRF tokens derived from what the request is bound to, with a key only the server
// holds: a logged-in request's token is an HMAC of its session, a login form's an HMAC of
// a random pre-session cookie. A cookie an attacker managed to plant proves nothing
// without its HMAC, and one session's token is worthless with another session.
import { createHmac, timingSafeEqual } from "node:crypto";

export type CsrfBinding = { kind: "session"; sessionId: string } | { kind: "pre-session"; nonce: string };

/** Its own key, derived from SESSION_SECRET, so no cookie signature can ever double as a token. */
export function csrfKey(sessionSecret: string): Buffer {
  return createHmac("sha256", sessionSecret).update("cadre csrf key").digest();
}

export function csrfToken(key: Buffer, tenantId: string, csrfBinding: CsrfBinding): string {
  const bound = csrfBinding.kind === "session" ? csrfBinding.sessionId : csrfBinding.nonce;
  return createHmac("sha256", key).update(`${tenantId}\0${csrfBinding.kind}\0${bound}`).digest("base64url");
}

export function sameToken(a: string, b: string): boolean {
  const buffer = Buffer.from(a);
  const y = Buffer.from(b);
  return buffer.length === y.length && timingSafeEqual(buffer, y);
}
