// The workspace's shared invite link (one_time_links purpose `join`), for teams that would rather
// pass one link around than invite each address. Off by default; an admin turns it on (a new
// link, the old one withdrawn) or off (withdrawn, with the confirmations it sent still open).
//
// An open link must not let anybody claim somebody else's address, so it makes no account: the
// visitor types an address (in the allowed domains, when set) and is mailed an ordinary
// invitation to it; opening that mail proves the address is theirs. The answer is the same
// whatever the address, so the link does not tell who is a member.
import type { Db } from "../../db/prisma.ts";
import { ValidationError } from "../../lib/errors.ts";
import { type InvitationTerms, openInvitation, studiosByHandle, termsOf } from "./invitations.ts";
import { queueAccountMail } from "./mail.ts";
import { issueLink, revokeOpenLinks } from "./one-time-links.ts";

export const joinPath = (token: string) => `/join/${token}`;

export const JOIN_ANSWER =
  "Check your mail: if this address may join, a link to confirm it is on its way to it. It works once, for 7 days. Nothing came? Check the address and your spam folder, then try again.";

const DOMAIN = /^(?=.{3,200}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/;

/** The allowed domains as typed ("acme.test, @acme.co"), lowercased; a 400 naming the field for one that is not a domain. */
export function parseDomains(raw: string | undefined): string[] {
  const domains = [
    ...new Set(
      (raw ?? "")
        .split(/[\s,;]+/)
        .map((domain) => domain.trim().toLowerCase().replace(/^@/, ""))
        .filter(Boolean),
    ),
  ];
  const bad = domains.filter((domain) => !DOMAIN.test(domain));
  if (bad.length)
    throw new ValidationError(
      [
        {
          field: "allowed_domains",
          label: "Allowed email domains",
          message: `${bad.map((domain) => `“${domain}”`).join(", ")} ${bad.length === 1 ? "is not a domain" : "are not domains"} (like acme.com)`,
        },
      ],
      "Please fix",
    );
  return domains;
}

interface JoinTerms {
  domains: string[];
  studios: string[];
}

const joinTermsOf = (data: unknown): JoinTerms => {
  const terms = (data ?? {}) as Partial<JoinTerms>;
  return {
    domains: Array.isArray(terms.domains) ? terms.domains : [],
    studios: Array.isArray(terms.studios) ? terms.studios : [],
  };
};

/** The link that is on, if one is: who turned it on, when, and its terms (never its token: only a hash is kept). */
export async function currentJoinLink(db: Db, tenantId: string) {
  const link = await db.oneTimeLink.findFirst({
    where: { tenantId, purpose: "join", usedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
    orderBy: { createdAt: "desc" },
    include: { createdBy: { select: { handle: true } } },
  });
  if (!link) return null;
  const terms = joinTermsOf(link.data);
  const studios = await db.studio.findMany({
    where: { tenantId, id: { in: terms.studios } },
    select: { name: true },
  });
  return { ...link, domains: terms.domains, studioNames: studios.map((studio) => studio.name) };
}

/** Withdraws the shared link and the confirmations it mailed that are still open; how many links. */
export async function turnJoinLinkOff(tx: Db, tenantId: string): Promise<number> {
  const open = await tx.oneTimeLink.findMany({
    where: { tenantId, purpose: "join", usedAt: null, revokedAt: null },
    select: { id: true },
  });
  await revokeOpenLinks(tx, tenantId, "join", {});
  const ids = new Set(open.map((link) => link.id));
  const confirmations = await tx.oneTimeLink.findMany({
    where: { tenantId, purpose: "invite", usedAt: null, revokedAt: null },
    select: { id: true, data: true },
  });
  const fromLink = confirmations.filter((link) => ids.has(termsOf(link).joinLinkId ?? ""));
  if (fromLink.length)
    await tx.oneTimeLink.updateMany({
      where: { id: { in: fromLink.map((link) => link.id) } },
      data: { revokedAt: new Date() },
    });
  return open.length;
}

/** A new shared link (the old one withdrawn); its raw token, to show once. */
export async function turnJoinLinkOn(
  tx: Db,
  input: { tenantId: string; createdById: string; allowedDomains?: string; studios?: string },
): Promise<{ token: string; domains: string[]; studioNames: string[] }> {
  const domains = parseDomains(input.allowedDomains);
  const studios = await studiosByHandle(tx, input.tenantId, input.studios);
  await turnJoinLinkOff(tx, input.tenantId);
  const { token } = await issueLink(tx, {
    tenantId: input.tenantId,
    purpose: "join",
    createdById: input.createdById,
    data: { domains, studios: studios.map((studio) => studio.id) },
  });
  return { token, domains, studioNames: studios.map((studio) => studio.name) };
}

/** Whether the address may join through this link: null, or the reason in words. */
export function domainProblem(data: unknown, email: string): string | null {
  const { domains } = joinTermsOf(data);
  const domain = email.split("@").pop() ?? "";
  if (!domains.length || domains.includes(domain)) return null;
  return `This invite link is for addresses at ${domains.join(", ")}: use one of those, or ask an admin to invite you.`;
}

/**
 * Mails the confirmation for `email` through the link `joinLink` (checked by the caller): an
 * invitation as a member of the link's studios, or, for an address that is a person here
 * already or already invited, a word to it instead. Nothing is answered that differs.
 */
export async function requestToJoin(
  tx: Db,
  input: {
    tenant: { id: string; name: string };
    joinLink: { id: string; data: unknown };
    email: string;
    origin: string;
  },
): Promise<void> {
  const { tenant, email } = input;
  const person = await tx.user.findUnique({ where: { tenantId_email: { tenantId: tenant.id, email } } });
  if (person) {
    await queueAccountMail(tx, {
      tenantId: tenant.id,
      userId: person.id,
      kind: "account.join_existing",
      subject: `You already have an account in ${tenant.name} on Cadre`,
      paragraphs: [
        `Someone (we hope you) asked to join ${tenant.name} with this address, which has an account there already, as @${person.handle}.`,
        { label: "Log in", url: `${input.origin}/login` },
        "Forgot your password? Use “Forgot your password?” on the log-in page. Did not ask? Ignore this mail.",
      ],
    });
    return;
  }
  // An admin's invitation waiting for this address keeps its role and studios: the link only renews it.
  const waiting = await tx.oneTimeLink.findFirst({
    where: {
      tenantId: tenant.id,
      purpose: "invite",
      email,
      usedAt: null,
      revokedAt: null,
      expiresAt: { gt: new Date() },
    },
    include: { createdBy: { select: { handle: true, name: true } } },
  });
  const joinTerms = joinTermsOf(input.joinLink.data);
  const terms: InvitationTerms = waiting
    ? termsOf(waiting)
    : { role: "member", studios: joinTerms.studios, joinLinkId: input.joinLink.id };
  const studios = await tx.studio.findMany({
    where: { tenantId: tenant.id, id: { in: terms.studios } },
    select: { name: true },
  });
  await openInvitation(tx, {
    tenant,
    origin: input.origin,
    inviter: waiting?.createdBy ? `${waiting.createdBy.name} (@${waiting.createdBy.handle})` : null,
    studioNames: studios.map((studio) => studio.name),
    email,
    terms,
    createdById: waiting?.createdById ?? null,
  });
}
