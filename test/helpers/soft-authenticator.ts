// A software WebAuthn authenticator for tests without a browser: an ES256 key pair per
// credential, "none" attestation, user present and verified, its own sign counter. It
// answers the options the server hands out exactly as a browser would send them on
// (RegistrationResponseJSON, AuthenticationResponseJSON), so the server's checks are the
// real ones; test/browser-passkeys.test.ts uses Chromium's own virtual authenticator.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { isoBase64URL, isoCBOR } from "@simplewebauthn/server/helpers";

const sha256 = (data: Uint8Array) => new Uint8Array(createHash("sha256").update(data).digest());
const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));
const b64 = (data: Uint8Array) => isoBase64URL.fromBuffer(new Uint8Array(data));
const FLAGS = { userPresent: 0x01, userVerified: 0x04, attested: 0x40 };

export interface SoftCredential {
  id: string;
  privateKey: KeyObject;
  /** The sign count it reports next; a test may set it back to fake a cloned authenticator. */
  counter: number;
  userHandle: string;
}

function counterBytes(counter: number): Uint8Array {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(counter);
  return new Uint8Array(bytes);
}

function clientData(type: string, challenge: string, origin: string): string {
  return b64(new TextEncoder().encode(JSON.stringify({ type, challenge, origin, crossOrigin: false })));
}

/** The COSE form of an ES256 public key, as an authenticator attests it. */
function coseKey(privateKey: KeyObject): Uint8Array {
  const jwk = privateKey.export({ format: "jwk" });
  return isoCBOR.encode(
    new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, isoBase64URL.toBuffer(jwk.x!)],
      [-3, isoBase64URL.toBuffer(jwk.y!)],
    ]),
  );
}

interface CreationOptions {
  challenge: string;
  rp: { id?: string };
  user: { id: string };
}

interface RequestOptions {
  challenge: string;
  rpId?: string;
}

/** Makes a credential for the creation options: the answer to post, and the credential to sign with later. */
export function createCredential(options: CreationOptions, origin: string) {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const credentialId = new Uint8Array(randomBytes(16));
  const rpId = options.rp.id ?? new URL(origin).hostname;
  const idLength = new Uint8Array([0, credentialId.length]);
  const authData = concat(
    sha256(new TextEncoder().encode(rpId)),
    new Uint8Array([FLAGS.userPresent | FLAGS.userVerified | FLAGS.attested]),
    counterBytes(0),
    new Uint8Array(16),
    idLength,
    credentialId,
    coseKey(privateKey),
  );
  const attestationObject = isoCBOR.encode(
    new Map<string, unknown>([
      ["fmt", "none"],
      ["attStmt", new Map()],
      ["authData", authData],
    ]) as never,
  );
  const credential: SoftCredential = {
    id: b64(credentialId),
    privateKey,
    counter: 1,
    userHandle: options.user.id,
  };
  const response = {
    id: credential.id,
    rawId: credential.id,
    type: "public-key",
    response: {
      clientDataJSON: clientData("webauthn.create", options.challenge, origin),
      attestationObject: b64(attestationObject),
      transports: ["internal"],
    },
    clientExtensionResults: {},
  };
  return { credential, response };
}

/** Signs the request options with `credential`, counting one use. */
export function assertion(credential: SoftCredential, options: RequestOptions, origin: string) {
  const rpId = options.rpId ?? new URL(origin).hostname;
  const authenticatorData = concat(
    sha256(new TextEncoder().encode(rpId)),
    new Uint8Array([FLAGS.userPresent | FLAGS.userVerified]),
    counterBytes(credential.counter++),
  );
  const clientDataJSON = clientData("webauthn.get", options.challenge, origin);
  const signature = sign(
    "sha256",
    concat(authenticatorData, sha256(isoBase64URL.toBuffer(clientDataJSON))),
    credential.privateKey,
  );
  return {
    id: credential.id,
    rawId: credential.id,
    type: "public-key",
    response: {
      clientDataJSON,
      authenticatorData: b64(authenticatorData),
      signature: b64(new Uint8Array(signature)),
      userHandle: credential.userHandle,
    },
    clientExtensionResults: {},
  };
}
