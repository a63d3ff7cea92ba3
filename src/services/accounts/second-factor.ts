// What second factors a person has and whether the workspace requires one of them: the
// sign-in's second step lists what factorsOf answers (a method per entry, rendered from data,
// so a new kind of factor adds an entry, not a page), and the policy decides enrolment.
import type { Db } from "../../db/prisma.ts";
import type { TwoFactorPolicy, User } from "../../generated/prisma/client.ts";
import { recoveryCodesLeft } from "./recovery-codes.ts";
import { hasTotp } from "./totp.ts";

type Person = Pick<User, "id" | "tenantId" | "tenantAdmin">;

export interface Factors {
  /** A confirmed authenticator app. */
  totp: boolean;
  /** Unused recovery codes (they come with the authenticator). */
  recoveryCodesLeft: number;
  /** Registered passkeys (services/accounts/passkeys.ts): each answers the second step too. */
  passkeys: number;
}

export async function factorsOf(db: Db, person: Person): Promise<Factors> {
  const [totp, left, passkeys] = await Promise.all([
    hasTotp(db, person),
    recoveryCodesLeft(db, person),
    db.passkey.count({ where: { tenantId: person.tenantId, userId: person.id } }),
  ]);
  return { totp, recoveryCodesLeft: left, passkeys };
}

/** Whether any factor can answer the second step. */
export function hasSecondFactor(factors: Factors): boolean {
  return factors.totp || factors.passkeys > 0;
}

/** Whether the workspace's policy asks this person for a second factor. */
export function policyRequires(policy: TwoFactorPolicy, person: Pick<User, "tenantAdmin">): boolean {
  return policy === "everyone" || (policy === "admins" && person.tenantAdmin);
}

export const POLICY_LABELS: Record<TwoFactorPolicy, string> = {
  off: "Not required",
  admins: "Required for admins",
  everyone: "Required for everyone",
};
