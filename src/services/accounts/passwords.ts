// Setting a person's password after they proved who they are — by their current password
// (change_password) or by a reset link from their mail (routes/password-reset.ts) — in the
// caller's transaction: the new hash, every other session ended, open reset links withdrawn,
// and the security event with its mail. A password is checked for strength before anything.
import type { Db } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { ValidationError } from "../../lib/errors.ts";
import { endSessions } from "../sessions.ts";
import { revokeOpenLinks } from "./one-time-links.ts";
import { checkPasswordStrength } from "./password-strength.ts";
import { recordSecurityEvent } from "./security-events.ts";

type Person = Pick<User, "id" | "tenantId" | "handle" | "name" | "email">;

/** A 400 on `field` when `password` is too easy to guess for this person, with the reason in words. */
export function assertStrong(person: Person, password: string, field: string, workspaceName = ""): void {
  const strength = checkPasswordStrength(password, [
    person.name,
    person.handle,
    person.email ?? "",
    workspaceName,
  ]);
  if (!strength.ok) throw new ValidationError([{ field, message: strength.reason }]);
}

/**
 * Stores the new password and ends every session but `keep` (the one that changed it, or the
 * one a reset signs in). Hashing is slow (scrypt): the caller hashes before its transaction.
 */
export async function storePassword(
  tx: Db,
  person: Person,
  passwordHash: string,
  event: { kind: "password_changed" | "password_reset"; keep?: string; address?: string; origin?: string },
): Promise<number> {
  await tx.user.update({ where: { id: person.id }, data: { passwordHash } });
  const ended = await endSessions(tx, person.tenantId, person.id, event.keep);
  await revokeOpenLinks(tx, person.tenantId, "reset", { userId: person.id });
  const how = event.kind === "password_changed" ? "was changed" : "was reset with a link mailed to you";
  const sessions = ended
    ? ` ${ended === 1 ? "Your other session was" : `Your ${ended} other sessions were`} ended.`
    : "";
  await recordSecurityEvent(tx, {
    tenantId: person.tenantId,
    userId: person.id,
    actorId: person.id,
    kind: event.kind,
    detail: `Your password ${how}.${sessions}`,
    address: event.address ?? null,
    origin: event.origin ?? null,
  });
  return ended;
}
