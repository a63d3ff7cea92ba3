// An SSO sign-in, start to finish (routes/sso.ts is its HTTP adapter): the flow's state, nonce
// and PKCE verifier kept in a short-lived row named by a random browser cookie (only its hash
// stored), taken once by the callback; then who the verified ID token says this is, and
// whether they may come in. The order of `admit` is the order of trust: a linked identity,
// then a person here with that verified address, then an open invitation, then an allowed
// domain; anyone else is refused in words.
import { conflictOnDuplicate, type Db, type PrismaClient } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { newId, randomToken, sha256 } from "../../lib/ids.ts";
import { freePersonHandle } from "./handles.ts";
import { joinByInvitation } from "./invitation-accept.ts";
import { consumeOpenInvitation } from "./one-time-links.ts";
import { recordSecurityEvent } from "./security-events.ts";
import {
  authorizationUrl,
  discoverProvider,
  exchangeCode,
  newFlowSecrets,
  type VerifiedClaims,
} from "./sso-client.ts";
import { providerSettingsOf } from "./sso-settings.ts";

/** Long enough to type a password and a code at the provider; short enough to be no lasting key. */
export const SSO_FLOW_MINUTES = 10;

export type SsoOutcome = { user: User; joined: boolean } | { refusal: string };

const NOT_SET = "Single sign-on is not set up for this workspace: log in with your password.";
const START_AGAIN = "This sign-in expired or was already used: start again from the log-in page.";
const DID_NOT_CHECK =
  "The identity provider's answer did not check out (its state, nonce or token), so nobody was signed in: start again from the log-in page.";

/** Starts a sign-in: the cookie to set (its raw value, never stored) and where to send the browser. */
export async function startSsoLogin(
  db: Db,
  input: { tenantId: string; redirectUri: string; next: string },
): Promise<{ cookie: string; expiresAt: Date; url: URL } | { refusal: string }> {
  const settings = await providerSettingsOf(db, input.tenantId);
  if (!settings) return { refusal: NOT_SET };
  const config = await discoverProvider(settings);
  const flow = newFlowSecrets();
  const cookie = randomToken(32);
  const expiresAt = new Date(Date.now() + SSO_FLOW_MINUTES * 60_000);
  // A browser starting again and again leaves rows that expire; the maintenance sweep has no
  // need to know: each start clears this workspace's expired ones.
  await db.ssoLogin.deleteMany({ where: { tenantId: input.tenantId, expiresAt: { lte: new Date() } } });
  await db.ssoLogin.create({
    data: {
      id: newId(),
      tenantId: input.tenantId,
      cookieHash: sha256(cookie),
      ...flow,
      next: input.next,
      expiresAt,
    },
  });
  return { cookie, expiresAt, url: await authorizationUrl(config, flow, input.redirectUri) };
}

/** The flow this browser started here, taken for its one use; null when there is none (or it expired). */
async function takeFlow(db: Db, tenantId: string, cookie: string) {
  const flow = await db.ssoLogin.findUnique({ where: { cookieHash: sha256(cookie) } });
  if (!flow || flow.tenantId !== tenantId) return null;
  // Taken whatever comes next: a failed exchange must not leave the flow open to a second try.
  const taken = await db.ssoLogin.deleteMany({ where: { id: flow.id } });
  return taken.count && flow.expiresAt > new Date() ? flow : null;
}

/**
 * The provider sent the browser back: checks the flow and trades the code, then admits the
 * person the ID token names. Deactivated people and foreign domains are refused in words.
 */
export async function finishSsoLogin(
  db: PrismaClient,
  input: {
    tenantId: string;
    cookie: string | undefined;
    callbackUrl: URL;
    address?: string;
    origin?: string;
  },
): Promise<SsoOutcome & { next?: string }> {
  const flow = input.cookie ? await takeFlow(db, input.tenantId, input.cookie) : null;
  if (!flow) return { refusal: START_AGAIN };
  const settings = await providerSettingsOf(db, input.tenantId);
  if (!settings) return { refusal: NOT_SET };
  let claims: VerifiedClaims;
  try {
    claims = await exchangeCode(await discoverProvider(settings), input.callbackUrl, flow);
  } catch {
    // The reason stays unlogged: openid-client's errors can quote the response they refused.
    return { refusal: DID_NOT_CHECK };
  }
  const outcome = await db.$transaction((tx) =>
    admit(tx, { ...input, claims, allowedDomains: settings.provider.allowedDomains }),
  );
  return { ...outcome, next: flow.next };
}

const deactivated = "This account has been deactivated: a workspace admin can reactivate it.";

/** Who may come in with these verified claims, in the order of trust (see the file's header). */
async function admit(
  tx: Db,
  input: {
    tenantId: string;
    claims: VerifiedClaims;
    allowedDomains: string[];
    address?: string;
    origin?: string;
  },
): Promise<SsoOutcome> {
  const { claims, tenantId } = input;
  const identity = await tx.userIdentity.findUnique({
    where: { tenantId_issuer_subject: { tenantId, issuer: claims.issuer, subject: claims.subject } },
    include: { user: true },
  });
  if (identity) {
    if (identity.user.deactivatedAt || identity.user.archivedAt) return { refusal: deactivated };
    await tx.userIdentity.update({ where: { id: identity.id }, data: { lastUsedAt: new Date() } });
    return { user: identity.user, joined: false };
  }
  // Past here the address decides, so only one the provider vouches for counts.
  if (!claims.email || !claims.emailVerified)
    return {
      refusal:
        "Your identity provider did not confirm your email address, so it cannot be matched to this workspace: confirm it there, or ask an admin.",
    };
  const email = claims.email;
  const link = (user: User) =>
    tx.userIdentity.create({
      data: { id: newId(), tenantId, userId: user.id, issuer: claims.issuer, subject: claims.subject },
    });
  const existing = await tx.user.findUnique({ where: { tenantId_email: { tenantId, email } } });
  if (existing) {
    if (existing.kind !== "person" || existing.deactivatedAt || existing.archivedAt)
      return { refusal: deactivated };
    await link(existing);
    await recordSecurityEvent(tx, {
      tenantId,
      userId: existing.id,
      actorId: existing.id,
      kind: "sso_linked",
      detail: `Your account was linked to your identity at ${claims.issuer}: you can sign in with it from now on.`,
      address: input.address,
      origin: input.origin,
    });
    return { user: existing, joined: false };
  }
  const name = (claims.name ?? email.split("@")[0] ?? email).slice(0, 100);
  const invitation = await consumeOpenInvitation(tx, tenantId, email);
  if (invitation) {
    const accepted = await joinByInvitation(tx, invitation, { ...input, name, passwordHash: null });
    if ("refusal" in accepted) return accepted;
    await link(accepted.user);
    return { user: accepted.user, joined: true };
  }
  const domain = email.split("@")[1] ?? "";
  if (!input.allowedDomains.includes(domain))
    return { refusal: `${domain} addresses may not join this workspace; ask an admin to invite you.` };
  return { user: await joinByDomain(tx, { ...input, email, name, link }), joined: true };
}

/** A new member whose address's domain the workspace allows: no password, role member. */
async function joinByDomain(
  tx: Db,
  input: {
    tenantId: string;
    email: string;
    name: string;
    address?: string;
    origin?: string;
    link: (user: User) => Promise<unknown>;
  },
): Promise<User> {
  const user = await tx.user
    .create({
      data: {
        id: newId(),
        tenantId: input.tenantId,
        handle: await freePersonHandle(tx, input.tenantId, input.email),
        name: input.name,
        email: input.email,
        kind: "person",
        passwordHash: null,
      },
    })
    .catch(conflictOnDuplicate(`${input.email} joined a moment ago: sign in again.`));
  await input.link(user);
  const tenant = await tx.tenant.findUniqueOrThrow({ where: { id: input.tenantId }, select: { name: true } });
  await recordSecurityEvent(tx, {
    tenantId: input.tenantId,
    userId: user.id,
    actorId: user.id,
    kind: "sso_joined",
    detail: `You joined ${tenant.name} as @${user.handle}, a member, by signing in with its identity provider.`,
    address: input.address,
    origin: input.origin,
  });
  return user;
}
