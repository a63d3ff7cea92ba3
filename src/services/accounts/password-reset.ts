// "Forgot password": a request mails a single-use link valid an hour (only its hash stored);
// the link sets a new password, ends every session and signs the person in afresh.
//
// The request answers the same whatever the address, and in about the same time: the work
// for a known address (a transaction writing the link and its mail) is done under a floor
// every answer waits out, so the answer's timing does not say whether an account exists.
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type { Tenant, User } from "../../generated/prisma/client.ts";
import { noSoonerThan } from "../../lib/answer-floor.ts";
import { queueAccountMail } from "./mail.ts";
import {
  checkLink,
  consumeLink,
  issueLink,
  LINK_LIFETIME_HOURS,
  type LinkOutcome,
  revokeOpenLinks,
} from "./one-time-links.ts";

/** Every request's answer waits this long at least: longer than the known address's work on a busy machine. */
export const RESET_ANSWER_FLOOR_MS = 400;

export const RESET_ANSWER =
  "If that address belongs to an account in this workspace, a link to choose a new password is on its way to it. It works once, for an hour. Nothing came? Check the address and your spam folder, then ask again.";

export const resetLinkPath = (token: string) => `/reset-password/${token}`;

/** Whom a reset may be mailed to: an active person of this workspace with that address. */
async function resettable(db: Db, tenantId: string, email: string) {
  const user = await db.user.findUnique({ where: { tenantId_email: { tenantId, email } } });
  return user?.kind === "person" && !user.archivedAt && !user.deactivatedAt ? user : null;
}

/**
 * Mails a reset link when `email` is a person's here; always resolves the same, after the floor.
 * `origin` is the workspace's address from the configuration, never the request's Host:
 * a forged Host must not put its own address in front of someone's token.
 */
export async function requestReset(
  db: PrismaClient,
  tenant: Pick<Tenant, "id" | "name">,
  email: string,
  origin: string,
) {
  await noSoonerThan(RESET_ANSWER_FLOOR_MS, () =>
    db.$transaction(async (tx) => {
      const user = await resettable(tx, tenant.id, email);
      if (!user) return;
      // A new request replaces the old link: only the latest mail works.
      await revokeOpenLinks(tx, tenant.id, "reset", { userId: user.id });
      const { token } = await issueLink(tx, {
        tenantId: tenant.id,
        purpose: "reset",
        userId: user.id,
        email,
      });
      await queueAccountMail(tx, {
        tenantId: tenant.id,
        userId: user.id,
        kind: "account.reset",
        subject: `Choose a new Cadre password (${tenant.name})`,
        paragraphs: [
          `Someone (we hope you) asked to reset the password of your account in ${tenant.name}.`,
          { label: "Choose a new password", url: `${origin}${resetLinkPath(token)}` },
          `The link works once, for ${LINK_LIFETIME_HOURS.reset} hour. Choosing a new password signs you out everywhere else.`,
          "Did not ask for it? Ignore this mail: your password stays as it is.",
        ],
      });
    }),
  );
}

/** The link's state before the form is sent: the person it resets, or the words saying why not. */
export async function checkResetLink(db: Db, tenantId: string, token: string): Promise<LinkOutcome> {
  return checkLink(db, tenantId, "reset", token);
}

/** Takes the link in `tx` for the person it was mailed to; null with the refusal's words otherwise. */
export async function takeResetLink(
  tx: Db,
  tenantId: string,
  token: string,
): Promise<{ user: User } | { refusal: string }> {
  const taken = await consumeLink(tx, tenantId, "reset", token);
  if (!taken.ok) return { refusal: taken.reason };
  const user = taken.link.userId ? await tx.user.findUnique({ where: { id: taken.link.userId } }) : null;
  if (user?.kind !== "person" || user.archivedAt || user.deactivatedAt)
    return { refusal: "This account can no longer sign in: ask a workspace admin." };
  return { user };
}
