// Invitations by mail: a workspace admin invites several addresses at once, with a role and the
// studios to join. Each address gets a single-use `invite` link (one_time_links: only its hash
// kept, 7 days) and its mail in the same transaction. An address that is already a person here
// gets no invitation; one invited again gets a new link and the old one is withdrawn, so there
// is never more than one open invitation per address (an advisory lock holds two admins apart).
import { advisoryLock, type Db } from "../../db/prisma.ts";
import type { OneTimeLink } from "../../generated/prisma/client.ts";
import { NotFoundError, ValidationError } from "../../lib/errors.ts";
import { queueAccountMail } from "./mail.ts";
import { issueLink, LINK_LIFETIME_HOURS, revokeLink, revokeOpenLinks } from "./one-time-links.ts";
import { emailProblem } from "./workspaces.ts";

export type InviteRole = "member" | "admin";

/** What an invitation's link carries besides its address. */
export interface InvitationTerms {
  role: InviteRole;
  /** Ids of the studios joined on accepting. */
  studios: string[];
  /** Asked for through the workspace's shared link (join-link.ts), which one. */
  joinLinkId?: string;
}

/** The page an invitation's link opens. */
export const invitePath = (token: string) => `/invite/${token}`;

const MAX_ADDRESSES = 50;

/** The addresses as typed (comma, space or newline separated), lowercased, each once; a 400 naming the field otherwise. */
export function parseAddresses(raw: string, field = { name: "emails", label: "Email addresses" }): string[] {
  const addresses = [
    ...new Set(
      raw
        .split(/[\s,;]+/)
        .map((address) => address.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  const fail = (message: string) =>
    new ValidationError([{ field: field.name, label: field.label, message }], "Please fix");
  if (!addresses.length) throw fail("type at least one email address");
  if (addresses.length > MAX_ADDRESSES) throw fail(`at most ${MAX_ADDRESSES} addresses at once`);
  const problems = addresses.map(emailProblem).filter((problem): problem is string => Boolean(problem));
  if (problems.length) throw fail(problems.join(" "));
  return addresses;
}

/** The studios named by handle (comma or space separated), as rows of this workspace; a 400 for one that is not. */
export async function studiosByHandle(
  db: Db,
  tenantId: string,
  raw: string | undefined,
  field = { name: "studios", label: "Studios to join" },
) {
  const handles = [
    ...new Set(
      (raw ?? "")
        .split(/[\s,;]+/)
        .map((handle) => handle.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  if (!handles.length) return [];
  const studios = await db.studio.findMany({
    where: { tenantId, handle: { in: handles } },
    select: { id: true, handle: true, name: true },
  });
  const missing = handles.filter((handle) => !studios.some((studio) => studio.handle === handle));
  if (missing.length)
    throw new ValidationError(
      [
        {
          field: field.name,
          label: field.label,
          message: `no studio ${missing.map((handle) => `“${handle}”`).join(", ")} in this workspace`,
        },
      ],
      "Please fix",
    );
  return studios;
}

export function termsOf(link: Pick<OneTimeLink, "data">): InvitationTerms {
  const data = (link.data ?? {}) as Partial<InvitationTerms>;
  return {
    role: data.role === "admin" ? "admin" : "member",
    studios: Array.isArray(data.studios) ? data.studios.filter((id) => typeof id === "string") : [],
    ...(typeof data.joinLinkId === "string" && { joinLinkId: data.joinLinkId }),
  };
}

export interface InvitationMail {
  tenant: { id: string; name: string };
  /** The workspace's address from outside, for the link. */
  origin: string;
  /** Who invites, in words ("Alice Adams (@alice)"), or null for the shared link. */
  inviter: string | null;
  studioNames: string[];
}

/**
 * Opens an invitation for `email` (withdrawing any open one for it) and queues its mail, in `tx`.
 * `renewed`: an open invitation was replaced.
 */
export async function openInvitation(
  tx: Db,
  input: InvitationMail & { email: string; terms: InvitationTerms; createdById: string | null },
): Promise<{ renewed: boolean }> {
  await advisoryLock(tx, `invite:${input.tenant.id}:${input.email}`);
  const withdrawn = await revokeOpenLinks(tx, input.tenant.id, "invite", { email: input.email });
  const { token } = await issueLink(tx, {
    tenantId: input.tenant.id,
    purpose: "invite",
    email: input.email,
    createdById: input.createdById,
    data: { ...input.terms },
  });
  const role = input.terms.role === "admin" ? "an admin" : "a member";
  const studios = input.studioNames.length
    ? `, in the ${input.studioNames.length === 1 ? "studio" : "studios"} ${input.studioNames.join(", ")}`
    : "";
  await queueAccountMail(tx, {
    tenantId: input.tenant.id,
    to: input.email,
    kind: "account.invite",
    subject: input.inviter
      ? `${input.inviter} invited you to ${input.tenant.name} on Cadre`
      : `Confirm your address to join ${input.tenant.name} on Cadre`,
    paragraphs: [
      input.inviter
        ? `${input.inviter} invited you to join ${input.tenant.name} on Cadre as ${role}${studios}.`
        : `Someone (we hope you) asked to join ${input.tenant.name} on Cadre with this address, through the workspace's invite link. Opening the link below confirms the address is yours.`,
      { label: "Accept the invitation", url: `${input.origin}${invitePath(token)}` },
      `The link works once, for ${LINK_LIFETIME_HOURS.invite / 24} days: choose your name and a password, and you are signed in.`,
      "Not expecting this? Ignore this mail: nothing happens without the link.",
    ],
  });
  return { renewed: withdrawn > 0 };
}

/** The workspace's open invitations, newest first, with who sent each and the studios' names. */
export async function pendingInvitations(db: Db, tenantId: string) {
  const links = await db.oneTimeLink.findMany({
    where: { tenantId, purpose: "invite", usedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
    orderBy: { createdAt: "desc" },
    take: 200,
    include: { createdBy: { select: { handle: true } } },
  });
  const studioIds = [...new Set(links.flatMap((link) => termsOf(link).studios))];
  const studios = await db.studio.findMany({
    where: { tenantId, id: { in: studioIds } },
    select: { id: true, name: true },
  });
  const names = new Map(studios.map((studio) => [studio.id, studio.name]));
  return links.map((link) => {
    const terms = termsOf(link);
    return {
      id: link.id,
      email: link.email ?? "",
      role: terms.role,
      studios: terms.studios.map((id) => names.get(id)).filter((name): name is string => Boolean(name)),
      sentBy: link.createdBy
        ? `@${link.createdBy.handle}`
        : terms.joinLinkId
          ? "the invite link"
          : "the operator",
      createdAt: link.createdAt,
      expiresAt: link.expiresAt,
    };
  });
}

export type PendingInvitation = Awaited<ReturnType<typeof pendingInvitations>>[number];

/** Withdraws one open invitation of this workspace; its address, to say which. */
export async function revokeInvitation(tx: Db, tenantId: string, id: string): Promise<string> {
  const link = await tx.oneTimeLink.findFirst({ where: { id, tenantId, purpose: "invite" } });
  if (!link || !(await revokeLink(tx, tenantId, id)))
    throw new NotFoundError(
      `No open invitation ${id} in this workspace: it was accepted, withdrawn or never sent.`,
    );
  return link.email ?? "";
}

export interface InviteOutcome {
  invited: string[];
  renewed: string[];
  /** Already a person of the workspace, each in words ("bob@acme.test is already a member, as @bob"). */
  members: string[];
}

/** Invites each address not already in the workspace, in `tx`: all of them or, on bad input, none. */
export async function invitePeople(
  tx: Db,
  input: {
    tenant: { id: string; name: string };
    inviter: { id: string; handle: string; name: string };
    origin: string;
    emails: string;
    role: InviteRole;
    studios?: string;
  },
): Promise<InviteOutcome> {
  const addresses = parseAddresses(input.emails);
  const studios = await studiosByHandle(tx, input.tenant.id, input.studios);
  const existing = await tx.user.findMany({
    where: { tenantId: input.tenant.id, email: { in: addresses } },
    select: { email: true, handle: true, deactivatedAt: true },
  });
  const outcome: InviteOutcome = { invited: [], renewed: [], members: [] };
  for (const person of existing)
    outcome.members.push(
      `${person.email} is already a member, as @${person.handle}${person.deactivatedAt ? " (deactivated: reactivate them on their page)" : ""}`,
    );
  const known = new Set(existing.map((person) => person.email));
  for (const email of addresses.filter((address) => !known.has(address))) {
    const { renewed } = await openInvitation(tx, {
      tenant: input.tenant,
      origin: input.origin,
      inviter: `${input.inviter.name} (@${input.inviter.handle})`,
      studioNames: studios.map((studio) => studio.name),
      email,
      terms: { role: input.role, studios: studios.map((studio) => studio.id) },
      createdById: input.inviter.id,
    });
    (renewed ? outcome.renewed : outcome.invited).push(email);
  }
  return outcome;
}
