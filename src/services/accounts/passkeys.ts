// A person's passkeys (WebAuthn, @simplewebauthn/server): adding one from the security page,
// and checking one's answer at sign-in, as the second step after a password or alone. The
// relying party is the workspace as the browser reached it: its host (no port) is the RP ID,
// so a passkey made for one workspace is worthless on another, and the page's origin is the
// origin its answers must name. Every ceremony is user-verified (a PIN, a fingerprint): a
// passkey is then something the person has and something they are or know, which is what
// lets it stand in for a password (docs/securing-accounts.md "Passkeys").
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from "@simplewebauthn/server";
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { ConflictError, ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { type ChallengeBinding, challengeOf, issueChallenge, takeChallenge } from "./passkey-challenges.ts";
import { recordSecurityEvent } from "./security-events.ts";

/** The workspace as this request reached it: what passkeys are made for and answer to. */
export interface RelyingParty {
  /** The host without its port (`acme.example.com`). */
  id: string;
  /** `https://acme.example.com`, with the port when there is one. */
  origin: string;
  /** The workspace's name, shown by the browser when a passkey is made. */
  name: string;
}

type Person = Pick<User, "id" | "tenantId" | "handle" | "name" | "email">;

/** At most this many per person: a list anyone can read at a glance, and a bound on allowCredentials. */
export const MAX_PASSKEYS = 20;

/** A refusal of a passkey's answer, named by the field a person knows it as. */
export function passkeyRefused(message: string): ValidationError {
  return new ValidationError([{ field: "passkey", label: "Passkey", message }]);
}

const EXPIRED = "this request expired or was answered already: try again";

/** What a response's `response.clientDataJSON` is, read defensively: the body is the client's. */
function clientData(response: unknown): unknown {
  return (response as { response?: { clientDataJSON?: unknown } } | null)?.response?.clientDataJSON;
}

/** Options for the browser's `navigator.credentials.create`, their challenge kept for the answer. */
export async function registrationOptions(db: Db, rp: RelyingParty, person: Person, binding: string) {
  const existing = await db.passkey.findMany({
    where: { tenantId: person.tenantId, userId: person.id },
    select: { credentialId: true, transports: true },
  });
  if (existing.length >= MAX_PASSKEYS)
    throw passkeyRefused(`you have ${MAX_PASSKEYS} passkeys already: remove one first`);
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: person.email ?? person.handle,
    userDisplayName: person.name,
    // Our id, not the address: the authenticator keeps it, and it never changes.
    userID: new TextEncoder().encode(person.id),
    attestationType: "none",
    // The authenticator refuses to make a second passkey for an account it holds one of already.
    excludeCredentials: existing.map((key) => ({ id: key.credentialId, transports: key.transports })),
    // Discoverable where it can be, so it can sign in alone; verified always.
    authenticatorSelection: { residentKey: "preferred", userVerification: "required" },
  });
  await issueChallenge(db, {
    tenantId: person.tenantId,
    purpose: "register",
    binding,
    userId: person.id,
    challenge: options.challenge,
  });
  return options;
}

/**
 * Checks the browser's answer and keeps the passkey under `name`, with its security event and
 * mail. The challenge is taken before anything is verified and stays taken whatever follows:
 * a refused answer cannot be tried again with it.
 */
export async function addPasskey(
  db: PrismaClient,
  rp: RelyingParty,
  person: Person,
  input: { binding: string; response: unknown; name: string; address?: string; origin?: string },
) {
  const challenge = challengeOf(clientData(input.response));
  const taken = challenge
    ? await takeChallenge(db, {
        tenantId: person.tenantId,
        purpose: "register",
        binding: input.binding,
        challenge,
      })
    : null;
  if (!taken || taken.userId !== person.id) throw passkeyRefused(EXPIRED);
  const verification = await verifyRegistrationResponse({
    response: input.response as Parameters<typeof verifyRegistrationResponse>[0]["response"],
    expectedChallenge: taken.challenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.id,
    requireUserVerification: true,
  }).catch((error: Error) => {
    throw passkeyRefused(`the browser's answer did not check out (${error.message})`);
  });
  if (!verification.verified) throw passkeyRefused("the browser's answer did not check out");
  const info = verification.registrationInfo;
  return db.$transaction(async (tx) => {
    const taken = await tx.passkey.findUnique({
      where: { tenantId_credentialId: { tenantId: person.tenantId, credentialId: info.credential.id } },
    });
    if (taken) throw new ConflictError("This passkey is registered here already.");
    const passkey = await tx.passkey.create({
      data: {
        id: newId(),
        tenantId: person.tenantId,
        userId: person.id,
        credentialId: info.credential.id,
        publicKey: new Uint8Array(info.credential.publicKey),
        counter: BigInt(info.credential.counter),
        transports: info.credential.transports ?? [],
        name: input.name,
        deviceType: info.credentialDeviceType,
        backedUp: info.credentialBackedUp,
      },
    });
    await recordSecurityEvent(tx, {
      tenantId: person.tenantId,
      userId: person.id,
      actorId: person.id,
      kind: "passkey_added",
      detail: `A passkey named “${input.name}” was added to your account. It can now be used to sign in.`,
      address: input.address ?? null,
      origin: input.origin ?? null,
    });
    return passkey;
  });
}

/**
 * Options for `navigator.credentials.get`: for one person's passkeys (the second step of a
 * sign-in, `userId` given), or for any passkey of the workspace (signing in with one alone:
 * the browser offers the discoverable ones it holds for this host).
 */
export async function authenticationOptions(
  db: Db,
  rp: RelyingParty,
  bound: ChallengeBinding & { userId: string | null },
) {
  const allowed = bound.userId
    ? await db.passkey.findMany({
        where: { tenantId: bound.tenantId, userId: bound.userId },
        select: { credentialId: true, transports: true },
        take: MAX_PASSKEYS,
      })
    : [];
  if (bound.userId && !allowed.length) throw passkeyRefused("you have no passkey registered");
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    allowCredentials: allowed.map((key) => ({ id: key.credentialId, transports: key.transports })),
    userVerification: "required",
  });
  await issueChallenge(db, { ...bound, challenge: options.challenge });
  return options;
}

/**
 * Checks a passkey's answer to the challenge this binding was handed: the passkey is one of
 * this workspace's, of the person the challenge was for (when it named one), its signature
 * checks out, and its counter moved on (a counter that did not is a cloned authenticator,
 * or this very answer replayed). Returns the passkey; its counter and last use are saved.
 */
export async function verifyPasskey(db: Db, rp: RelyingParty, bound: ChallengeBinding, response: unknown) {
  const challenge = challengeOf(clientData(response));
  const taken = challenge ? await takeChallenge(db, { ...bound, challenge }) : null;
  if (!taken) throw passkeyRefused(EXPIRED);
  const credentialId = (response as { id?: unknown } | null)?.id;
  const passkey =
    typeof credentialId === "string" && credentialId.length <= 1400
      ? await db.passkey.findUnique({
          where: { tenantId_credentialId: { tenantId: bound.tenantId, credentialId } },
        })
      : null;
  if (!passkey) throw passkeyRefused("this passkey is not registered in this workspace");
  if (taken.userId && passkey.userId !== taken.userId)
    throw passkeyRefused("this passkey belongs to someone else");
  const verification = await verifyAuthenticationResponse({
    response: response as Parameters<typeof verifyAuthenticationResponse>[0]["response"],
    expectedChallenge: taken.challenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.id,
    credential: {
      id: passkey.credentialId,
      publicKey: new Uint8Array(passkey.publicKey),
      counter: Number(passkey.counter),
      transports: passkey.transports,
    },
    requireUserVerification: true,
  }).catch((error: Error) => {
    throw passkeyRefused(`its answer did not check out (${error.message})`);
  });
  if (!verification.verified) throw passkeyRefused("its answer did not check out");
  const counter = BigInt(verification.authenticationInfo.newCounter);
  // Conditional, so two answers racing with the same counter cannot both count.
  const { count } = await db.passkey.updateMany({
    where: { id: passkey.id, counter: counter === 0n ? 0n : { lt: counter } },
    data: { counter, lastUsedAt: new Date() },
  });
  if (!count) throw passkeyRefused("its counter went backwards: was this authenticator copied?");
  return passkey;
}

/** A person's passkeys, newest first, for their security page. */
export async function passkeysOf(db: Db, tenantId: string, userId: string) {
  return db.passkey.findMany({
    where: { tenantId, userId },
    orderBy: { createdAt: "desc" },
    select: {
      id: true,
      name: true,
      deviceType: true,
      backedUp: true,
      createdAt: true,
      lastUsedAt: true,
    },
    take: MAX_PASSKEYS,
  });
}
