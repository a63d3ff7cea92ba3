// Recovery codes: ten single-use codes for when the authenticator is lost, shown once when
// made and kept only as hashes. They are random (50 bits each), so a plain sha256 is enough:
// there is no dictionary to try against it, unlike a password. Making a new set deletes the old.
import { randomInt } from "node:crypto";
import type { Db } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { newId, sha256 } from "../../lib/ids.ts";

export const RECOVERY_CODE_COUNT = 10;
/** No 0/o, 1/l/i: a code copied from paper should not be misread. */
const ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";

type Person = Pick<User, "id" | "tenantId">;

/** As typed: case, spaces and dashes do not matter. */
function normalise(code: string): string {
  return code.toLowerCase().replace(/[\s-]+/g, "");
}

const hashOf = (person: Person, code: string) => sha256(`recovery:${person.id}:${normalise(code)}`);

function newCode(): string {
  const chars = Array.from({ length: 10 }, () => ALPHABET[randomInt(ALPHABET.length)]);
  return `${chars.slice(0, 5).join("")}-${chars.slice(5).join("")}`;
}

/** A fresh set (the old ones dead), in the caller's transaction: the codes, to show once. */
export async function replaceRecoveryCodes(tx: Db, person: Person): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newCode);
  await tx.recoveryCode.deleteMany({ where: { userId: person.id, tenantId: person.tenantId } });
  await tx.recoveryCode.createMany({
    data: codes.map((code) => ({
      id: newId(),
      tenantId: person.tenantId,
      userId: person.id,
      codeHash: hashOf(person, code),
    })),
  });
  return codes;
}

/** Spends a code: true once per code, false for a wrong or used one. */
export async function useRecoveryCode(db: Db, person: Person, code: string): Promise<boolean> {
  if (!/^[a-z0-9]{10}$/.test(normalise(code))) return false;
  const { count } = await db.recoveryCode.updateMany({
    where: { userId: person.id, tenantId: person.tenantId, codeHash: hashOf(person, code), usedAt: null },
    data: { usedAt: new Date() },
  });
  return count === 1;
}

export async function recoveryCodesLeft(db: Db, person: Person): Promise<number> {
  return db.recoveryCode.count({ where: { userId: person.id, tenantId: person.tenantId, usedAt: null } });
}
