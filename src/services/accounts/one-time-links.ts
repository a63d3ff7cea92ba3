// Single-use links: a first password (setup), an invitation, a reset, a sign-up's
// confirmation, the workspace's shared invite link (join). The raw token leaves this module
// once, in the return value of `issueLink`, to be put in a mail or printed by the CLI; only its
// sha256 is stored. A link is taken in the transaction of what it opens, with a conditional
// update, so two clicks racing each other open it once.
import type { Db } from "../../db/prisma.ts";
import type { LinkPurpose, OneTimeLink, Prisma } from "../../generated/prisma/client.ts";
import { newId, randomToken, sha256 } from "../../lib/ids.ts";

export type { LinkPurpose };

/** How long each kind of link lives unless the caller says otherwise. */
export const LINK_LIFETIME_HOURS: Record<LinkPurpose, number> = {
  setup: 7 * 24,
  invite: 7 * 24,
  reset: 1,
  signup: 24,
  // The shared link lives until an admin turns it off; a year keeps "forever" finite.
  join: 365 * 24,
};

export interface IssuedLink {
  link: OneTimeLink;
  /** The raw token: put it in the mail or print it, never store or log it. */
  token: string;
}

export async function issueLink(
  tx: Db,
  input: {
    tenantId: string | null;
    purpose: LinkPurpose;
    email?: string | null;
    userId?: string | null;
    createdById?: string | null;
    data?: Prisma.InputJsonValue;
    lifetimeHours?: number;
  },
): Promise<IssuedLink> {
  const token = randomToken(32);
  const hours = input.lifetimeHours ?? LINK_LIFETIME_HOURS[input.purpose];
  const link = await tx.oneTimeLink.create({
    data: {
      id: newId(),
      tenantId: input.tenantId,
      purpose: input.purpose,
      tokenHash: sha256(token),
      email: input.email?.toLowerCase() ?? null,
      userId: input.userId ?? null,
      createdById: input.createdById ?? null,
      ...(input.data !== undefined && { data: input.data }),
      expiresAt: new Date(Date.now() + hours * 3600_000),
    },
  });
  return { link, token };
}

export type LinkRefusal = "unknown" | "wrong-workspace" | "wrong-purpose" | "expired" | "used" | "revoked";

export type LinkOutcome =
  | { ok: true; link: OneTimeLink }
  | { ok: false; refusal: LinkRefusal; reason: string };

const WHAT: Record<LinkPurpose, string> = {
  setup: "set-up link",
  invite: "invitation",
  reset: "password reset link",
  signup: "sign-up link",
  join: "invite link",
};

/** What to do about a refused link, in words for the page that shows it. */
const NEXT_STEP: Record<LinkPurpose, string> = {
  setup: "Ask your workspace's admin (or the operator) for a new set-up link.",
  invite: "Ask whoever invited you to send a new invitation.",
  reset: "Ask for a new one on the “Forgot password” page.",
  signup: "Start the sign-up again to get a new link.",
  join: "Ask a member of the workspace for its current invite link.",
};

/** The words a person sees for a refused link: which refusal, and what to do. */
export function refusalReason(refusal: LinkRefusal, purpose: LinkPurpose, link?: OneTimeLink): string {
  const what = WHAT[purpose];
  const next = NEXT_STEP[purpose];
  switch (refusal) {
    case "unknown":
      return `This ${what} is not valid: check that the whole address was copied from the mail. ${next}`;
    case "wrong-workspace":
      return `This ${what} belongs to another workspace: open it at the address in the mail.`;
    case "wrong-purpose":
      return `This link is not a ${what}: open it at the address in the mail.`;
    case "expired":
      return `This ${what} expired on ${link?.expiresAt.toISOString() ?? "its date"}. ${next}`;
    case "used":
      return `This ${what} was already used, on ${link?.usedAt?.toISOString() ?? "an earlier visit"}: it works once. If that was you, log in. ${next}`;
    case "revoked":
      return `This ${what} was withdrawn on ${link?.revokedAt?.toISOString() ?? "an earlier date"}. ${next}`;
  }
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{16,128}$/;

/**
 * The link a token names, checked for this workspace and purpose at `now`, without taking it:
 * what a link's page shows before the form is sent. `tenantId` null: a link with no
 * workspace (sign-up).
 */
export async function checkLink(
  db: Db,
  tenantId: string | null,
  purpose: LinkPurpose,
  token: string,
  now = new Date(),
): Promise<LinkOutcome> {
  const refuse = (refusal: LinkRefusal, link?: OneTimeLink): LinkOutcome => ({
    ok: false,
    refusal,
    reason: refusalReason(refusal, purpose, link),
  });
  if (!TOKEN_SHAPE.test(token)) return refuse("unknown");
  const link = await db.oneTimeLink.findUnique({ where: { tokenHash: sha256(token) } });
  if (!link) return refuse("unknown");
  // Another workspace's link says so and shows nothing of it (not even which workspace).
  if (link.tenantId !== tenantId) return refuse("wrong-workspace");
  if (link.purpose !== purpose) return refuse("wrong-purpose");
  if (link.revokedAt) return refuse("revoked", link);
  if (link.usedAt) return refuse("used", link);
  if (link.expiresAt <= now) return refuse("expired", link);
  return { ok: true, link };
}

/**
 * Takes the link for its one use, inside the transaction of what it opens: a second use, or
 * a second click racing the first, is refused as used. A `join` link is shared and stays
 * open: it is checked, never taken.
 */
export async function consumeLink(
  tx: Db,
  tenantId: string | null,
  purpose: LinkPurpose,
  token: string,
): Promise<LinkOutcome> {
  const now = new Date();
  const checked = await checkLink(tx, tenantId, purpose, token, now);
  if (!checked.ok || purpose === "join") return checked;
  const taken = await tx.oneTimeLink.updateMany({
    where: { id: checked.link.id, usedAt: null, revokedAt: null, expiresAt: { gt: now } },
    data: { usedAt: now },
  });
  if (!taken.count) {
    const again = await tx.oneTimeLink.findUnique({ where: { id: checked.link.id } });
    const refusal: LinkRefusal = again?.revokedAt ? "revoked" : "used";
    return { ok: false, refusal, reason: refusalReason(refusal, purpose, again ?? undefined) };
  }
  return { ok: true, link: { ...checked.link, usedAt: now } };
}

/**
 * Takes the open invitation for an address without its token, in the caller's transaction:
 * for a person the workspace's identity provider vouches for (sso-sign-in.ts), whose verified
 * address is what the invitation was sent to. Null when none is open, or another took it first.
 */
export async function consumeOpenInvitation(
  tx: Db,
  tenantId: string,
  email: string,
): Promise<OneTimeLink | null> {
  const now = new Date();
  const open = {
    tenantId,
    purpose: "invite" as const,
    email: email.toLowerCase(),
    usedAt: null,
    revokedAt: null,
  };
  const link = await tx.oneTimeLink.findFirst({
    where: { ...open, expiresAt: { gt: now } },
    orderBy: { createdAt: "desc" },
  });
  if (!link) return null;
  const taken = await tx.oneTimeLink.updateMany({ where: { id: link.id, ...open }, data: { usedAt: now } });
  return taken.count ? { ...link, usedAt: now } : null;
}

/** Withdraws a link of this workspace that is still open; false when there was none. */
export async function revokeLink(tx: Db, tenantId: string, linkId: string): Promise<boolean> {
  const revoked = await tx.oneTimeLink.updateMany({
    where: { id: linkId, tenantId, usedAt: null, revokedAt: null },
    data: { revokedAt: new Date() },
  });
  return revoked.count > 0;
}

/** Withdraws every open link of one purpose for a person or an address (a new reset link replaces the old). */
export async function revokeOpenLinks(
  tx: Db,
  tenantId: string,
  purpose: LinkPurpose,
  who: { userId?: string; email?: string },
): Promise<number> {
  const revoked = await tx.oneTimeLink.updateMany({
    where: {
      tenantId,
      purpose,
      usedAt: null,
      revokedAt: null,
      ...(who.userId && { userId: who.userId }),
      ...(who.email && { email: who.email.toLowerCase() }),
    },
    data: { revokedAt: new Date() },
  });
  return revoked.count;
}
