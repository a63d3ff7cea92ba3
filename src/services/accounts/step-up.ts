// Re-confirmation before sensitive changes: what counts as proof that the person at a session
// is its person (their password; a two-factor code once they have one), how long a
// confirmation lasts (STEP_UP_MINUTES, set once at start by `configureStepUp`), and the
// session's `confirmed_at`, moved on by a right proof. The registry decides when to ask
// (registry/step-up.ts); the /confirm page (routes/confirm.ts) and a marked action's own form
// both end here, in `reconfirm`.
// A person who has no password (SSO only) cannot confirm with one: `proofsOf` says so, and
// the /confirm page sends them through their sign-in again (the `oidc` branch's flow).
import type { Config } from "../../config.ts";
import type { Db } from "../../db/prisma.ts";
import { ForbiddenError, TooManyRequestsError, ValidationError } from "../../lib/errors.ts";
import {
  type ConfirmAttempt,
  confirmSucceeded,
  countConfirmAttempt,
  type ThrottleSettings,
} from "../login-throttle.ts";
import { verifyPassword } from "../passwords.ts";
import { RECONFIRM_FIELD, RECONFIRM_LABEL, type StepUp } from "../registry/step-up.ts";
import type { Ctx } from "../registry/types.ts";
import { acceptTotpCode, hasTotp } from "./totp.ts";

type StepUpSettings = ThrottleSettings & Pick<Config, "STEP_UP_MINUTES">;

let settings: StepUpSettings = {
  STEP_UP_MINUTES: 10,
  LOGIN_ACCOUNT_MAX_FAILURES: 10,
  LOGIN_ADDRESS_MAX_FAILURES: 30,
  LOGIN_WINDOW_SECONDS: 900,
  LOGIN_ADDRESS_MAX_LOCK_SECONDS: 6 * 3600,
};

/** The window and the throttle's limits, from the config at start (app.ts). */
export function configureStepUp(config: StepUpSettings) {
  settings = {
    STEP_UP_MINUTES: config.STEP_UP_MINUTES,
    LOGIN_ACCOUNT_MAX_FAILURES: config.LOGIN_ACCOUNT_MAX_FAILURES,
    LOGIN_ADDRESS_MAX_FAILURES: config.LOGIN_ADDRESS_MAX_FAILURES,
    LOGIN_WINDOW_SECONDS: config.LOGIN_WINDOW_SECONDS,
    LOGIN_ADDRESS_MAX_LOCK_SECONDS: config.LOGIN_ADDRESS_MAX_LOCK_SECONDS,
  };
}

export const stepUpMinutes = () => settings.STEP_UP_MINUTES;

/** A confirmation at `at` is too old now (none known is too old). */
export function confirmationStale(at: Date | undefined, now = Date.now()): boolean {
  return !at || now - at.getTime() >= settings.STEP_UP_MINUTES * 60_000;
}

/** What a person can confirm with: the /confirm page offers these, and says so when there is none. */
export interface Proofs {
  password: boolean;
  /** A confirmed authenticator app: its current code confirms too (once: a code is never taken twice). */
  totp: boolean;
}

export async function proofsOf(db: Db, tenantId: string, userId: string): Promise<Proofs> {
  const person = await db.user.findFirst({ where: { id: userId, tenantId }, select: { passwordHash: true } });
  return { password: Boolean(person?.passwordHash), totp: await hasTotp(db, { id: userId, tenantId }) };
}

/** Six digits (spaces allowed, as apps show them): tried as an authenticator's code, before the password. */
const CODE = /^\s*\d{3}\s?\d{3}\s*$/;

/** Whether the proof is the person's: a current authenticator code, or their password. */
async function proves(db: Db, person: ConfirmAttempt, proof: string): Promise<boolean> {
  if (
    CODE.test(proof) &&
    (await acceptTotpCode(db, { id: person.userId, tenantId: person.tenantId }, proof.replace(/\s/g, "")))
  )
    return true;
  const row = await db.user.findFirst({
    where: { id: person.userId, tenantId: person.tenantId },
    select: { passwordHash: true },
  });
  // verifyPassword spends a real check's time even without a hash: no timing tells them apart.
  return proof.length <= 1000 && verifyPassword(proof, row?.passwordHash ?? null);
}

export type Reconfirmed = { ok: true } | { ok: false; waitSeconds?: number };

/**
 * Checks what the person typed against their password (and, once they have two-factor, a
 * current code); right, the session is confirmed now. Counted before the check and throttled
 * like a login, in its own scope (login-throttle.ts countConfirmAttempt).
 */
export async function reconfirm(
  db: Db,
  session: ConfirmAttempt & { sessionId: string },
  proof: string,
): Promise<Reconfirmed> {
  const count = await countConfirmAttempt(db, settings, session);
  if (count.waitSeconds) return { ok: false, waitSeconds: count.waitSeconds };
  if (!(await proves(db, session, proof)))
    return { ok: false, ...(count.lockSeconds && { waitSeconds: count.lockSeconds }) };
  await confirmSucceeded(db, session);
  await db.session.updateMany({
    where: { id: session.sessionId, tenantId: session.tenantId, userId: session.userId },
    data: { confirmedAt: new Date() },
  });
  return { ok: true };
}

/** "Too many attempts to confirm: try again in 15 minutes." */
export function tooManyConfirmations(seconds: number): string {
  const wait = seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
  return `Too many wrong attempts to confirm it is you: try again in ${wait}.`;
}

/** What a client that sent no proof must send, in words for a person and for a script. */
function missingProof(): string {
  return `This change needs a recent confirmation that it is you (the last one is older than ${settings.STEP_UP_MINUTES} minutes): send your password or a current two-factor code as \`${RECONFIRM_FIELD}\` with the action (a form's “${RECONFIRM_LABEL}”), or confirm at /confirm first. API tokens are not asked.`;
}

/** The registry's hook (catalog.ts): a session asked to re-confirm before a `confirmRecent` action. */
export const sessionStepUp: StepUp = {
  stale(ctx: Ctx) {
    return ctx.auth?.via === "session" && confirmationStale(ctx.auth.confirmation?.at);
  },
  async confirm(ctx: Ctx, proof: string | undefined) {
    const auth = ctx.auth;
    if (auth?.via !== "session" || !auth.sessionId) throw new ForbiddenError(missingProof());
    if (!proof) throw new ForbiddenError(missingProof());
    const done = await reconfirm(
      ctx.db,
      { tenantId: ctx.tenant.id, userId: ctx.actor.id, sessionId: auth.sessionId },
      proof,
    );
    if (done.ok) {
      // The page that answers this request reads it: its forms no longer ask.
      if (auth.confirmation) auth.confirmation.at = new Date();
      return;
    }
    if (done.waitSeconds)
      throw new TooManyRequestsError(tooManyConfirmations(done.waitSeconds), done.waitSeconds);
    throw new ValidationError([
      {
        field: RECONFIRM_FIELD,
        label: RECONFIRM_LABEL,
        message: "this is not your password or a current two-factor code",
      },
    ]);
  },
};
