// A set-up link's one use: the person chooses their name and a password, and is then signed in
// by the caller (routes/accounts.ts). The password is checked before the link is taken, and
// everything happens in one transaction: a weak password leaves the link as it was.
import type { PrismaClient } from "../../db/prisma.ts";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { hashPassword } from "../passwords.ts";
import { consumeLink } from "./one-time-links.ts";
import { checkPasswordStrength } from "./password-strength.ts";
import { recordSecurityEvent } from "./security-events.ts";

export interface NameAndPassword {
  name: string;
  password: string;
}

/** The form's problems, each naming its field by its label; throws a 400 when there are any. */
export function checkNameAndPassword(input: NameAndPassword, related: string[]): void {
  const issues = [];
  const name = input.name.trim();
  if (!name || name.length > 100)
    issues.push({ field: "name", label: "Your name", message: "1–100 characters" });
  const strength = checkPasswordStrength(input.password, [name, ...related]);
  if (!strength.ok) issues.push({ field: "password", label: "Password", message: strength.reason });
  if (issues.length) throw new ValidationError(issues, "Please fix");
}

/** Sets the person's name and first password through their set-up link; the person, to sign in. */
export async function completeSetup(
  db: PrismaClient,
  input: { tenantId: string; token: string; address?: string } & NameAndPassword,
) {
  // Hashed before the transaction: scrypt takes a while and holds no row.
  const passwordHash = await hashPassword(input.password);
  return db.$transaction(async (tx) => {
    const taken = await consumeLink(tx, input.tenantId, "setup", input.token);
    if (!taken.ok) throw new ConflictError(taken.reason);
    const user = await tx.user.findFirst({
      where: { id: taken.link.userId ?? "", tenantId: input.tenantId },
    });
    if (!user || user.archivedAt)
      throw new ConflictError("This account no longer exists: ask your workspace's admin.");
    checkNameAndPassword(input, [user.email ?? "", user.handle]);
    const updated = await tx.user.update({
      where: { id: user.id },
      data: { name: input.name.trim(), passwordHash },
    });
    await recordSecurityEvent(tx, {
      tenantId: input.tenantId,
      userId: user.id,
      actorId: user.id,
      kind: "setup_completed",
      detail: `@${user.handle} set their name and first password.`,
      address: input.address,
      mail: false,
    });
    return updated;
  });
}
