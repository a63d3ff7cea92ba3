// BYOK API keys: stored sealed (secrets.ts), shown only as their last four characters,
// opened only in the worker at the moment an agent calls its provider.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { Db } from "../../db/prisma.ts";
import type { AgentApiKey } from "../../generated/prisma/client.ts";
import { newId } from "../../lib/ids.ts";
import { apiKeyAad, DecryptError, open, seal } from "../../lib/secrets.ts";
import { keysOf, type Owned } from "../agents/core/ownership.ts";
import { keyring } from "./keyring.ts";
import { providerModels, providerStatus } from "./provider-clients.ts";

/** Where a model call goes, and with which key: what keys resolve to and the LLM client calls. */
export interface Endpoint {
  baseURL: string;
  apiKey: string;
  /** The key's provider; absent for the shared endpoint, which speaks OpenAI's protocol. What decides the wire protocol (runtime/llm.ts apiOf). */
  provider?: Provider;
  /** The owner's BYOK key row; absent for the shared endpoint. */
  keyId?: string;
  /** How the run page names it ("Work key (…abcd)"). */
  label?: string;
}

export const PROVIDERS = ["openai", "anthropic", "openai_compatible"] as const;
export type Provider = (typeof PROVIDERS)[number];

export const PROVIDER_LABELS: Record<Provider, string> = {
  openai: "OpenAI",
  anthropic: "Anthropic",
  openai_compatible: "OpenAI-compatible",
};

/** Each provider's URL as stored on its keys: OpenAI-compatible; an Anthropic key is called through its native API under it (provider-clients.ts). */
export const PROVIDER_URLS: Record<Exclude<Provider, "openai_compatible">, string> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com/v1/",
};

export const keyHint = (key: string) => key.slice(-4);

/** Null when the URL may be used, else why not. */
export function checkBaseUrl(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be a URL like https://llm.example.com/v1";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must start with https:// or http://";
  if (url.username || url.password) return "must not contain credentials: put the key in the key field";
  if (!keyring().allowPrivateUrls && isPrivateHost(url.hostname))
    return "must be a public address (private and loopback addresses are not allowed on this server)";
  return null;
}

/**
 * The check at use: a public-looking name may resolve to a private address (a DNS record
 * pointing at 127.0.0.1 or the cloud metadata service). Null when every address it
 * resolves to is public, or when private ones are allowed. A name that does not resolve
 * is left to the connection to fail. (Re-resolution between this check and the connect —
 * DNS rebinding — is not covered: that needs the lookup pinned in the HTTP agent.)
 */
export async function checkResolvedUrl(raw: string): Promise<string | null> {
  if (keyring().allowPrivateUrls) return null;
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, "");
  if (isPrivateHost(host)) return `${host} is a private address, not allowed on this server`;
  if (isIP(host)) return null;
  const addresses = await lookup(host, { all: true }).catch(() => []);
  const bad = addresses.find((a) => isPrivateHost(a.address));
  return bad ? `${host} resolves to a private address (${bad.address}), not allowed on this server` : null;
}

function isPrivateHost(host: string): boolean {
  // A trailing dot is the same name to DNS (`localhost.`, `metadata.google.internal.`).
  const name = host
    .replace(/^\[|\]$/g, "")
    .replace(/\.+$/, "")
    .toLowerCase();
  if (
    name === "localhost" ||
    name.endsWith(".localhost") ||
    name.endsWith(".internal") ||
    name.endsWith(".local")
  )
    return true;
  if (isIP(name) === 4) {
    const [first, second] = name.split(".").map(Number) as [number, number];
    return (
      first === 10 ||
      first === 127 ||
      first === 0 ||
      (first === 169 && second === 254) ||
      (first === 172 && second >= 16 && second <= 31) ||
      (first === 192 && second === 168) ||
      (first === 100 && second >= 64 && second <= 127)
    );
  }
  if (isIP(name) === 6)
    return (
      name === "::1" ||
      name === "::" ||
      name.startsWith("fc") ||
      name.startsWith("fd") ||
      /^fe[89ab]/.test(name) ||
      name.startsWith("::ffff:")
    );
  return false;
}

export async function createKey(
  db: Db,
  input: {
    tenantId: string;
    /** Exactly one: a person's key, or a studio's. */
    holder: { ownerId: string } | { studioId: string };
    label: string;
    provider: Provider;
    baseUrl: string;
    key: string;
  },
): Promise<AgentApiKey> {
  const id = newId();
  const sealed = seal(keyring().master, input.key, apiKeyAad(input.tenantId, id));
  return db.agentApiKey.create({
    data: {
      id,
      tenantId: input.tenantId,
      ...input.holder,
      label: input.label,
      provider: input.provider,
      baseUrl: input.baseUrl,
      encryptedKey: new Uint8Array(sealed.ciphertext),
      keyVersion: sealed.keyVersion,
      keyHint: keyHint(input.key),
    },
  });
}

export function openKey(key: Pick<AgentApiKey, "id" | "tenantId" | "encryptedKey" | "keyVersion">): string {
  return open(
    keyring().master,
    { ciphertext: Buffer.from(key.encryptedKey), keyVersion: key.keyVersion },
    apiKeyAad(key.tenantId, key.id),
  );
}

export class KeyUnavailableError extends Error {}

/** The endpoint an agent calls: its owner's key when it has one, else the shared one. */
export async function endpointFor(
  db: Db,
  agent: Owned & { tenantId: string },
  keyId: string | undefined,
  shared: Endpoint | null,
): Promise<Endpoint | null> {
  if (!keyId) return shared;
  const key = await db.agentApiKey.findFirst({
    where: { id: keyId, tenantId: agent.tenantId, ...keysOf(agent) },
  });
  if (!key)
    throw new KeyUnavailableError(
      "The API key this agent is set to use no longer exists: pick another on its page.",
    );
  if (key.revokedAt)
    throw new KeyUnavailableError(
      `The API key “${key.label}” (…${key.keyHint}) was revoked: pick another key, or the shared endpoint, on the agent's page.`,
    );
  const refused = await checkResolvedUrl(key.baseUrl);
  if (refused)
    throw new KeyUnavailableError(`The API key “${key.label}” (…${key.keyHint}) points at ${refused}.`);
  return {
    baseURL: key.baseUrl,
    apiKey: openKey(key),
    provider: key.provider as Provider,
    keyId: key.id,
    label: `“${key.label}” (…${key.keyHint})`,
  };
}

/** The provider refused the key: the owner sees it on their keys page, and on the run. */
export async function markKeyFailed(db: Db, keyId: string, message: string) {
  await db.agentApiKey.update({
    where: { id: keyId },
    data: { authFailedAt: new Date(), authError: message.slice(0, 500) },
  });
}

export interface KeyTest {
  ok: boolean;
  message: string;
}

/** The model ids the provider lists for the key (`GET /models`); throws as the SDK does. */
export async function listModels(key: AgentApiKey, timeoutMs = 10_000): Promise<string[]> {
  const ids = await providerModels(key.provider, key.baseUrl, openKey(key), timeoutMs);
  // Bounded: a listing is shown in a select and kept on the key's row.
  return [...new Set(ids.filter((id) => id && id.length <= 200))].sort().slice(0, 500);
}

/** Lists the provider's models with the key: proves it authenticates without spending tokens. */
export async function testKey(db: Db, key: AgentApiKey, timeoutMs = 10_000): Promise<KeyTest> {
  let result: KeyTest;
  const blocked = await checkResolvedUrl(key.baseUrl);
  if (blocked) {
    result = { ok: false, message: `Not tested: ${blocked}.` };
    await db.agentApiKey.update({
      where: { id: key.id },
      data: { lastTestedAt: new Date(), lastTestOk: false },
    });
    return result;
  }
  let listed: string[] | undefined;
  try {
    // Inside the try: a key that no longer decrypts is a failed test the owner can act on, not a 500.
    listed = await listModels(key, timeoutMs);
    result = { ok: true, message: `The key works: the provider lists ${listed.length} model(s).` };
  } catch (err) {
    result =
      err instanceof DecryptError
        ? {
            ok: false,
            message:
              "The key cannot be decrypted with the server's keys (APP_ENCRYPTION_KEYS): add it again.",
          }
        : providerStatus(err) === 401 || providerStatus(err) === 403
          ? { ok: false, message: `The provider refused the key (${providerStatus(err)}).` }
          : providerStatus(err)
            ? {
                ok: false,
                message: `The provider answered ${providerStatus(err)}; the key may still be fine.`,
              }
            : { ok: false, message: `Could not reach ${key.baseUrl}.` };
  }
  const refused = !result.ok && result.message.startsWith("The provider refused");
  await db.agentApiKey.update({
    where: { id: key.id },
    data: {
      lastTestedAt: new Date(),
      lastTestOk: result.ok,
      ...(result.ok && { authFailedAt: null, authError: null }),
      // What it listed joins the workspace's model catalogue (catalogue.ts).
      ...(listed && { listedModels: listed, modelsListedAt: new Date() }),
      ...(refused && { authFailedAt: new Date(), authError: result.message }),
    },
  });
  return result;
}
