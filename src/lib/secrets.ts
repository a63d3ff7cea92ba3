// Envelope for secrets at rest (provider API keys): AES-256-GCM, a random 96-bit IV per
// write, a 128-bit tag, and associated data naming the row the ciphertext belongs to.
// Master keys are versioned: new writes use the newest, every listed version decrypts,
// and `npm run keys:reencrypt` moves old rows to the newest.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface MasterKeys {
  /** Version → 32-byte key. */
  keys: Map<number, Buffer>;
  newest: number;
}

/** Used when APP_ENCRYPTION_KEYS is unset outside production: stable, so dev data survives restarts. */
export const DEV_ENCRYPTION_KEYS = `1:${createHash("sha256").update("cadre dev-only encryption key").digest("base64")}`;

/** Parses `version:base64key[,version:base64key…]`; throws with what is wrong. */
export function parseMasterKeys(spec: string): MasterKeys {
  const keys = new Map<number, Buffer>();
  for (const part of spec
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const match = /^(\d{1,6}):([A-Za-z0-9+/=_-]+)$/.exec(part);
    if (!match) throw new Error("each entry must be <version>:<base64 key>, e.g. 1:q83v…");
    const version = Number(match[1]);
    const key = Buffer.from(match[2]!, "base64");
    if (key.length !== 32)
      throw new Error(`key version ${version} must be 32 bytes (base64), got ${key.length}`);
    if (keys.has(version)) throw new Error(`key version ${version} is listed twice`);
    keys.set(version, key);
  }
  if (!keys.size) throw new Error("at least one key is required");
  return { keys, newest: Math.max(...keys.keys()) };
}

/**
 * Whether any configured version is the published development key, however the spec
 * spells it (another version number, spaces, a trailing comma): production must refuse it.
 */
export function usesDevelopmentKey(master: MasterKeys): boolean {
  const dev = parseMasterKeys(DEV_ENCRYPTION_KEYS).keys.get(1)!;
  return [...master.keys.values()].some((k) => k.equals(dev));
}

export class DecryptError extends Error {}

export interface Sealed {
  ciphertext: Buffer;
  keyVersion: number;
}

export function seal(master: MasterKeys, plaintext: string, aad: string): Sealed {
  const initializationVector = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", master.keys.get(master.newest)!, initializationVector, {
    authTagLength: TAG_BYTES,
  });
  cipher.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return {
    ciphertext: Buffer.concat([initializationVector, body, cipher.getAuthTag()]),
    keyVersion: master.newest,
  };
}

export function open(master: MasterKeys, sealed: Sealed, aad: string): string {
  const key = master.keys.get(sealed.keyVersion);
  if (!key) throw new DecryptError(`master key version ${sealed.keyVersion} is not configured`);
  const buffer = sealed.ciphertext;
  if (buffer.length < IV_BYTES + TAG_BYTES) throw new DecryptError("ciphertext is too short");
  const decipher = createDecipheriv("aes-256-gcm", key, buffer.subarray(0, IV_BYTES), {
    authTagLength: TAG_BYTES,
  });
  decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(buffer.subarray(buffer.length - TAG_BYTES));
  try {
    return Buffer.concat([
      decipher.update(buffer.subarray(IV_BYTES, buffer.length - TAG_BYTES)),
      decipher.final(),
    ]).toString("utf8");
  } catch {
    // Never echo the bytes: a wrong row, tenant, key or a tampered value all look the same.
    throw new DecryptError(
      "the secret does not decrypt: tampered, moved from another row, or a wrong master key",
    );
  }
}

/** What binds an API key's ciphertext to its row. */
export const apiKeyAad = (tenantId: string, id: string) => `cadre:agent_api_key:${tenantId}:${id}`;

/** What binds a webhook secret's ciphertext to its row. */
export const webhookSecretAad = (tenantId: string, id: string) => `cadre:agent_webhook:${tenantId}:${id}`;

/** What binds a secret waiting to be shown once (a form's new token or webhook secret) to its row. */
export const revealAad = (tenantId: string, id: string) => `cadre:secret_reveal:${tenantId}:${id}`;

/** What binds a workspace's OpenID Connect client secret to its provider row. */
export const ssoSecretAad = (tenantId: string, id: string) => `cadre:sso_provider:${tenantId}:${id}`;
/** What binds a person's TOTP seed to them: moved to another row or workspace, it does not open. */
export const totpSeedAad = (tenantId: string, userId: string) => `cadre:totp_seed:${tenantId}:${userId}`;
/**
 * What binds a tool connection's sealed secrets to its row: `token` (a bearer token, or the OAuth
 * token set) and `client` (the OAuth client's registration) differ, so one cannot stand in for the other.
 */
export const toolConnectionAad = (tenantId: string, id: string, part: "token" | "client" | "verifier") =>
  `cadre:tool_connection:${part}:${tenantId}:${id}`;
