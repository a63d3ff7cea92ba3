// A person's authenticator app (TOTP, RFC 6238 with otpauth): 30-second steps, six digits,
// one step either side accepted for clocks that drift. The seed is sealed at rest like
// provider keys (lib/secrets.ts, AAD bound to tenant and person) and shown only while the
// enrolment is pending, to its owner; once confirmed nobody reads it again but the check.
// A code is accepted once: the last accepted step is stored and anything at or before it is
// refused, in one conditional update, so two requests racing with one code cannot both win.
import { Secret, TOTP } from "otpauth";
import type { Db } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import { open, seal, totpSeedAad } from "../../lib/secrets.ts";
import { keyring } from "../money/keyring.ts";

const PERIOD = 30;
const DIGITS = 6;
/** Steps either side of now a code may come from. */
export const TOTP_WINDOW = 1;

type Person = Pick<User, "id" | "tenantId">;

function sealSeed(person: Person, seed: string) {
  const sealed = seal(keyring().master, seed, totpSeedAad(person.tenantId, person.id));
  return { encryptedSeed: new Uint8Array(sealed.ciphertext), keyVersion: sealed.keyVersion };
}

function openSeed(person: Person, row: { encryptedSeed: Uint8Array; keyVersion: number }): string {
  return open(
    keyring().master,
    { ciphertext: Buffer.from(row.encryptedSeed), keyVersion: row.keyVersion },
    totpSeedAad(person.tenantId, person.id),
  );
}

/** The otpauth:// address an app scans: labelled with the workspace and the person's handle. */
function totpOf(seed: string, label = "", issuer = "Cadre") {
  return new TOTP({ issuer, label, secret: Secret.fromBase32(seed), digits: DIGITS, period: PERIOD });
}

/** Whether the person has a confirmed authenticator (a pending one does not count). */
export async function hasTotp(db: Db, person: Person): Promise<boolean> {
  const row = await db.totpFactor.findUnique({ where: { userId: person.id } });
  return Boolean(row?.confirmedAt && row.tenantId === person.tenantId);
}

/** Starts (or restarts) enrolment with a fresh seed; refused when one is already confirmed. */
export async function startTotpEnrolment(db: Db, person: Person): Promise<"started" | "already_on"> {
  if (await hasTotp(db, person)) return "already_on";
  const seed = new Secret({ size: 20 }).base32;
  await db.totpFactor.deleteMany({ where: { userId: person.id, confirmedAt: null } });
  await db.totpFactor.create({
    data: { id: newId(), tenantId: person.tenantId, userId: person.id, ...sealSeed(person, seed) },
  });
  return "started";
}

/** A pending enrolment's secret and address, for its owner's page only; null when none is pending. */
export async function pendingTotp(
  db: Db,
  person: Person & Pick<User, "handle">,
  workspaceName: string,
): Promise<{ secret: string; uri: string } | null> {
  const row = await db.totpFactor.findUnique({ where: { userId: person.id } });
  if (!row || row.confirmedAt || row.tenantId !== person.tenantId) return null;
  const seed = openSeed(person, row);
  return { secret: seed, uri: totpOf(seed, person.handle, `Cadre (${workspaceName})`).toString() };
}

/** The step a code matches (within the window) at `now`, or null. */
function matchingStep(seed: string, code: string, now: number): number | null {
  const token = code.replace(/\s+/g, "");
  if (!/^\d{6}$/.test(token)) return null;
  const delta = totpOf(seed).validate({ token, timestamp: now, window: TOTP_WINDOW });
  return delta === null ? null : TOTP.counter({ period: PERIOD, timestamp: now }) + delta;
}

/**
 * Checks a code against the person's authenticator, pending (`confirming`) or confirmed, and
 * spends its step: true only for a code from a step later than the last one accepted.
 */
export async function acceptTotpCode(
  db: Db,
  person: Person,
  code: string,
  options: { confirming?: boolean; now?: number } = {},
): Promise<boolean> {
  const row = await db.totpFactor.findUnique({ where: { userId: person.id } });
  if (!row || row.tenantId !== person.tenantId || Boolean(row.confirmedAt) === Boolean(options.confirming))
    return false;
  const step = matchingStep(openSeed(person, row), code, options.now ?? Date.now());
  if (step === null) return false;
  const { count } = await db.totpFactor.updateMany({
    where: { id: row.id, lastStep: { lt: step } },
    data: { lastStep: step, ...(options.confirming && { confirmedAt: new Date() }) },
  });
  return count === 1;
}

/** Turns the authenticator off: the seed and every recovery code go. */
export async function removeTotp(db: Db, person: Person): Promise<boolean> {
  const { count } = await db.totpFactor.deleteMany({
    where: { userId: person.id, tenantId: person.tenantId },
  });
  await db.recoveryCode.deleteMany({ where: { userId: person.id, tenantId: person.tenantId } });
  return count > 0;
}
