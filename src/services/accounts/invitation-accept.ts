// An invitation's one use: the invited person chooses their name and a password; their account
// is made with the invitation's role, joins its studios, and the caller signs them in
// (routes/invitations.ts). One transaction takes the link, makes the account and writes the
// security event with its mails, so a weak password or a refusal leaves everything as it was.
import { conflictOnDuplicate, type Db, type PrismaClient } from "../../db/prisma.ts";
import type { OneTimeLink, User } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import { hashPassword } from "../passwords.ts";
import { freePersonHandle } from "./handles.ts";
import { termsOf } from "./invitations.ts";
import { queueAccountMail } from "./mail.ts";
import { consumeLink } from "./one-time-links.ts";
import { recordSecurityEvent } from "./security-events.ts";
import { checkNameAndPassword, type NameAndPassword } from "./setup.ts";

export type AcceptOutcome = { user: User } | { refusal: string };

const alreadyHere = (email: string) =>
  `${email} already has an account in this workspace, so this invitation was withdrawn: log in with it (or use “Forgot your password?” on the log-in page).`;

/** Makes the invited person's account through their link; the person to sign in, or the refusal in words. */
export async function acceptInvitation(
  db: PrismaClient,
  input: { tenantId: string; token: string; address?: string; origin?: string } & NameAndPassword,
): Promise<AcceptOutcome> {
  // Hashed before the transaction: scrypt takes a while and holds no row.
  const passwordHash = await hashPassword(input.password);
  return db.$transaction(async (tx) => {
    const taken = await consumeLink(tx, input.tenantId, "invite", input.token);
    if (!taken.ok) return { refusal: taken.reason };
    return joinByInvitation(tx, taken.link, { ...input, passwordHash });
  });
}

/**
 * The account an invitation taken in this transaction makes: with the invitation's role and
 * studios, and its event. `passwordHash` null: a person who signs in through the workspace's
 * identity provider (sso-sign-in.ts) and has no password here.
 */
export async function joinByInvitation(
  tx: Db,
  link: OneTimeLink,
  input: {
    tenantId: string;
    name: string;
    password?: string;
    passwordHash: string | null;
    address?: string;
    origin?: string;
  },
): Promise<AcceptOutcome> {
  const email = link.email ?? "";
  // Someone made an account for this address meanwhile (the CLI, another invitation):
  // never a second one. The link is withdrawn, which commits with this answer.
  if (await tx.user.findUnique({ where: { tenantId_email: { tenantId: input.tenantId, email } } })) {
    await tx.oneTimeLink.update({ where: { id: link.id }, data: { usedAt: null, revokedAt: new Date() } });
    return { refusal: alreadyHere(email) };
  }
  if (input.passwordHash) checkNameAndPassword({ name: input.name, password: input.password ?? "" }, [email]);
  const terms = termsOf(link);
  const user = await tx.user
    .create({
      data: {
        id: newId(),
        tenantId: input.tenantId,
        handle: await freePersonHandle(tx, input.tenantId, email),
        name: input.name.trim(),
        email,
        kind: "person",
        passwordHash: input.passwordHash,
        tenantAdmin: terms.role === "admin",
      },
    })
    .catch(conflictOnDuplicate(alreadyHere(email)));
  // Studios deleted since the invitation are skipped; the rest are joined now.
  const studios = await tx.studio.findMany({
    where: { tenantId: input.tenantId, id: { in: terms.studios } },
    select: { id: true, name: true },
  });
  await tx.studioMember.createMany({
    data: studios.map((studio) => ({ studioId: studio.id, userId: user.id, tenantId: input.tenantId })),
    skipDuplicates: true,
  });
  await announce(tx, { user, inviterId: link.createdById, role: terms.role, studios, ...input });
  return { user };
}

/** The audit trail's event, mailed to the new person, and a word to whoever invited them. */
async function announce(
  tx: Db,
  input: {
    user: User;
    inviterId: string | null;
    role: string;
    studios: { name: string }[];
    tenantId: string;
    address?: string;
    origin?: string;
  },
) {
  const inviter = input.inviterId
    ? await tx.user.findUnique({ where: { id: input.inviterId }, select: { id: true, handle: true } })
    : null;
  const tenant = await tx.tenant.findUniqueOrThrow({ where: { id: input.tenantId } });
  const studios = input.studios.length ? `, in ${input.studios.map((studio) => studio.name).join(", ")}` : "";
  await recordSecurityEvent(tx, {
    tenantId: input.tenantId,
    userId: input.user.id,
    actorId: input.user.id,
    kind: "invitation_accepted",
    detail: `You joined ${tenant.name} as @${input.user.handle}, ${input.role === "admin" ? "a workspace admin" : "a member"}${studios}${inviter ? `, invited by @${inviter.handle}` : ", through its invite link"}.`,
    address: input.address,
    origin: input.origin,
  });
  if (inviter)
    await queueAccountMail(tx, {
      tenantId: input.tenantId,
      userId: inviter.id,
      kind: "account.invitation_accepted",
      subject: `${input.user.name} accepted your invitation (${tenant.name})`,
      paragraphs: [
        `${input.user.name} (${input.user.email}) accepted your invitation and joined ${tenant.name} as @${input.user.handle}${studios}.`,
      ],
    });
}
