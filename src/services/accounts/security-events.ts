// What touches an account, in the workspace's audit trail (security_events) and in a mail to
// the person concerned, both in the caller's transaction: a notice is never lost, and never
// sent for a change that rolled back. A detail is words only: never a token, a password or
// a link (the leak test holds it).
import type { Db } from "../../db/prisma.ts";
import { newId } from "../../lib/ids.ts";
import { queueAccountMail } from "./mail.ts";

/** Kept open (a string in the table) so a new kind needs no migration; these are the ones written. */
export type SecurityEventKind =
  | "setup_completed"
  | "invitation_accepted"
  | "role_changed"
  | "password_changed"
  | "password_reset"
  | "new_sign_in"
  | "sessions_ended"
  | "deactivated"
  | "reactivated"
  | "sso_linked"
  | "sso_joined"
  | "passkey_added"
  | "passkey_removed"
  | "two_factor_enabled"
  | "two_factor_disabled"
  | "recovery_codes_regenerated"
  | "recovery_code_used"
  | "two_factor_policy_changed"
  | (string & {});

const SUBJECTS: Record<string, string> = {
  setup_completed: "Your Cadre account is set up",
  invitation_accepted: "You joined a Cadre workspace",
  role_changed: "Your role in Cadre changed",
  password_changed: "Your Cadre password was changed",
  password_reset: "Your Cadre password was reset",
  new_sign_in: "New sign-in to your Cadre account",
  sessions_ended: "Your other Cadre sessions were ended",
  deactivated: "Your Cadre account was deactivated",
  reactivated: "Your Cadre account was reactivated",
  sso_linked: "Your Cadre account was linked to single sign-on",
  sso_joined: "You joined a Cadre workspace",
  passkey_added: "A passkey was added to your Cadre account",
  passkey_removed: "A passkey was removed from your Cadre account",
  two_factor_enabled: "Two-factor was turned on for your account",
  two_factor_disabled: "Two-factor was turned off on your account",
  recovery_codes_regenerated: "New recovery codes for your account",
  recovery_code_used: "A recovery code was used on your account",
  two_factor_policy_changed: "Your workspace's two-factor requirement changed",
};

export interface SecurityEventInput {
  tenantId: string;
  /** The person it concerns (mailed at their address). */
  userId: string;
  /** Who did it; null for the operator's CLI. */
  actorId: string | null;
  kind: SecurityEventKind;
  /** One line in words: "Your role changed from member to admin, by @alice." */
  detail: string;
  /** The client's address, when it came from a request. */
  address?: string | null;
  /** The workspace's address from outside, to link the person's security page; absent: no link. */
  origin?: string | null;
  /** Where the mail links (default: the person's security page); null: no link. */
  linkPath?: string | null;
  /** false: recorded, not mailed (the person is told on the page they are on). */
  mail?: boolean;
}

/** Records the event and queues its mail; the mail's id, or null when not mailed. */
export async function recordSecurityEvent(tx: Db, event: SecurityEventInput): Promise<string | null> {
  await tx.securityEvent.create({
    data: {
      id: newId(),
      tenantId: event.tenantId,
      userId: event.userId,
      actorId: event.actorId,
      kind: event.kind,
      detail: event.detail,
      address: event.address ?? null,
    },
  });
  if (event.mail === false) return null;
  const person = await tx.user.findUnique({
    where: { id: event.userId },
    select: { email: true, handle: true, tenant: { select: { name: true } } },
  });
  if (!person?.email) return null;
  const path = event.linkPath === undefined ? `/u/${person.handle}/settings/security` : event.linkPath;
  const when = new Date().toISOString().slice(0, 16).replace("T", " ");
  return queueAccountMail(tx, {
    tenantId: event.tenantId,
    userId: event.userId,
    kind: `account.security.${event.kind}`,
    subject: `${SUBJECTS[event.kind] ?? "A change to your Cadre account"} (${person.tenant.name})`,
    paragraphs: [
      event.detail,
      `When: ${when} UTC${event.address ? `, from ${event.address}` : ""}.`,
      ...(event.origin && path ? [{ label: "Review your account", url: `${event.origin}${path}` }] : []),
      "If this was not you or someone you expected, tell your workspace's admin.",
    ],
  });
}

/** The workspace's trail, newest first (the admins' people page shows it). */
export async function recentSecurityEvents(db: Db, tenantId: string, take = 50) {
  return db.securityEvent.findMany({
    where: { tenantId },
    orderBy: { createdAt: "desc" },
    take,
    include: { user: { select: { handle: true } }, actor: { select: { handle: true } } },
  });
}
