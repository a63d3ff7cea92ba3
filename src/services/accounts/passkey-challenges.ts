// The challenges of WebAuthn ceremonies, kept server-side: a browser is handed one, signs it
// with its authenticator and sends it back; the answer counts only if the challenge is
// found here, unexpired, for the same purpose and bound to the same session (or, before
// there is one, the same browser), and it is deleted as it is taken: one answer per
// challenge, so a recorded answer replayed is refused.

import { isoBase64URL } from "@simplewebauthn/server/helpers";
import type { Db } from "../../db/prisma.ts";
import { newId } from "../../lib/ids.ts";

/** Long enough to touch a key or find a phone; short enough that a stray one soon means nothing. */
export const CHALLENGE_TTL_MS = 5 * 60_000;

/** What a challenge is for: adding a passkey, the second step of a sign-in, or a sign-in with a passkey alone. */
export type ChallengePurpose = "register" | "second_factor" | "sign_in";

export interface ChallengeBinding {
  tenantId: string;
  purpose: ChallengePurpose;
  /** `session:<id>` or `browser:<sha256 of its pre-session cookie>`: what asked for it. */
  binding: string;
}

/** Stores a new challenge for `binding`, dropping the ones it asked for before (one ceremony at a time). */
export async function issueChallenge(
  db: Db,
  bound: ChallengeBinding & { userId: string | null; challenge: string },
): Promise<void> {
  await db.webauthnChallenge.deleteMany({
    where: { tenantId: bound.tenantId, purpose: bound.purpose, binding: bound.binding },
  });
  await db.webauthnChallenge.create({
    data: {
      id: newId(),
      tenantId: bound.tenantId,
      purpose: bound.purpose,
      binding: bound.binding,
      userId: bound.userId,
      challenge: bound.challenge,
      expiresAt: new Date(Date.now() + CHALLENGE_TTL_MS),
    },
  });
}

/** The challenge an answer's client data names (base64url), or null when it names none. */
export function challengeOf(clientDataJSON: unknown): string | null {
  if (typeof clientDataJSON !== "string" || clientDataJSON.length > 10_000) return null;
  try {
    const parsed = JSON.parse(isoBase64URL.toUTF8String(clientDataJSON)) as { challenge?: unknown };
    return typeof parsed.challenge === "string" && parsed.challenge.length <= 200 ? parsed.challenge : null;
  } catch {
    return null;
  }
}

/**
 * Takes the challenge for its one use: the row, or null when there is none for this binding
 * (never issued, answered already, for another session or purpose) or it has expired.
 * Deleting is the claim: of two answers racing with one challenge, one deletes it.
 */
export async function takeChallenge(db: Db, bound: ChallengeBinding & { challenge: string }) {
  const row = await db.webauthnChallenge.findUnique({ where: { challenge: bound.challenge } });
  if (
    !row ||
    row.tenantId !== bound.tenantId ||
    row.purpose !== bound.purpose ||
    row.binding !== bound.binding
  )
    return null;
  const { count } = await db.webauthnChallenge.deleteMany({ where: { id: row.id } });
  return count === 1 && row.expiresAt.getTime() > Date.now() ? row : null;
}

/** Expired challenges, for the maintenance job: nobody can answer them any more. */
export async function tidyChallenges(db: Db): Promise<number> {
  const { count } = await db.webauthnChallenge.deleteMany({ where: { expiresAt: { lte: new Date() } } });
  return count;
}
