// What a sign-in becomes after its first factor (password, SSO, passkey): the one decision
// every way in shares (http/sign-in.ts beginSession calls it), and the notice of a sign-in
// from a browser never seen, written when the session becomes full.
//
// - SSO: the identity provider vouched for the person and is responsible for their MFA, so
//   the session is full at once; Cadre's policy does not apply (docs/securing-accounts.md).
// - A passkey is a second factor by itself (possession and the device's user check): full.
// - A password: the second step when the person has a factor; enrolment when the policy
//   requires one they lack; else full.
import type { Db } from "../../db/prisma.ts";
import type { SessionStage, SignInMethod, User } from "../../generated/prisma/client.ts";
import type { SignInFrom } from "../sessions.ts";
import { noteBrowser } from "./known-browsers.ts";
import { factorsOf, hasSecondFactor, policyRequires } from "./second-factor.ts";
import { recordSecurityEvent } from "./security-events.ts";

type Person = Pick<User, "id" | "tenantId" | "tenantAdmin">;

export async function stageFor(db: Db, person: Person, method: SignInMethod): Promise<SessionStage> {
  if (method !== "password") return "full";
  if (hasSecondFactor(await factorsOf(db, person))) return "second_factor";
  const tenant = await db.tenant.findUniqueOrThrow({
    where: { id: person.tenantId },
    select: { twoFactorPolicy: true },
  });
  return policyRequires(tenant.twoFactorPolicy, person) ? "enrol" : "full";
}

/** Where a session at this stage is sent, and the only pages it reaches (with sign-out). */
export const STAGE_PATHS: Record<Exclude<SessionStage, "full">, string> = {
  second_factor: "/login/verify",
  enrol: "/login/enrol",
};

/** The new-browser notice of a session that just became full, in the caller's transaction. */
export async function noteSignIn(
  tx: Db,
  person: Pick<User, "id" | "tenantId" | "knownBrowsers">,
  browserId: string,
  from: SignInFrom,
  origin: string,
) {
  const news = await noteBrowser(tx, person, browserId, from);
  if (news)
    await recordSecurityEvent(tx, {
      tenantId: person.tenantId,
      userId: person.id,
      actorId: person.id,
      kind: "new_sign_in",
      detail: `${news} If it was not you, end that session on your security page and change your password.`,
      address: from.ipAddress,
      origin,
    });
}
