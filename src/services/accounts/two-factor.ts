// The changes to a person's second factor that belong together: confirming an authenticator
// makes the first recovery codes and tells the person, in one transaction; turning it off
// takes the codes with it; a new set of codes kills the old. Each is a security event mailed
// to the person, whose detail never holds a code (the leak test checks).
import type { Db } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { replaceRecoveryCodes } from "./recovery-codes.ts";
import { recordSecurityEvent } from "./security-events.ts";
import { acceptTotpCode, removeTotp } from "./totp.ts";

type Person = Pick<User, "id" | "tenantId">;

interface Where {
  /** The client's address. */
  address?: string | null;
  /** The workspace's address from outside, for the mail's link. */
  origin?: string | null;
  /** Who did it, when not the person (an admin); default: the person. */
  actorId?: string;
}

/**
 * In the caller's transaction: a pending authenticator confirmed with a code, its first
 * recovery codes (to show once) and the person told; null for a wrong code.
 */
export async function confirmTotp(
  tx: Db,
  person: Person,
  code: string,
  where: Where,
): Promise<string[] | null> {
  if (!(await acceptTotpCode(tx, person, code, { confirming: true }))) return null;
  const codes = await replaceRecoveryCodes(tx, person);
  await recordSecurityEvent(tx, {
    ...event(person, where),
    kind: "two_factor_enabled",
    detail:
      "Two-factor sign-in with an authenticator app was turned on for your account, with ten new recovery codes.",
  });
  return codes;
}

/** In the caller's transaction: the authenticator and its recovery codes gone, the person told. */
export async function turnOffTotp(tx: Db, person: Person, where: Where): Promise<boolean> {
  if (!(await removeTotp(tx, person))) return false;
  await recordSecurityEvent(tx, {
    ...event(person, where),
    kind: "two_factor_disabled",
    detail: "Two-factor sign-in was turned off on your account: a password alone signs you in now.",
  });
  return true;
}

/** In the caller's transaction: a new set of codes (the old ones dead), the person told. */
export async function renewRecoveryCodes(tx: Db, person: Person, where: Where): Promise<string[]> {
  const codes = await replaceRecoveryCodes(tx, person);
  await recordSecurityEvent(tx, {
    ...event(person, where),
    kind: "recovery_codes_regenerated",
    detail: "New recovery codes were made for your account; the old ones no longer work.",
  });
  return codes;
}

function event(person: Person, where: Where) {
  return {
    tenantId: person.tenantId,
    userId: person.id,
    actorId: where.actorId ?? person.id,
    address: where.address ?? null,
    origin: where.origin ?? null,
  };
}
