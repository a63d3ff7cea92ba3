// The BYOK envelope (AES-256-GCM bound to its row) and master-key rotation, by the service
// and by the CLI (`npm run keys:reencrypt`). Key rows are written sealed directly, as an
// older deployment would have left them; this file's database is its own.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../src/config.ts";
import { newId } from "../src/lib/ids.ts";
import {
  apiKeyAad,
  DEV_ENCRYPTION_KEYS,
  DecryptError,
  type MasterKeys,
  open,
  parseMasterKeys,
  seal,
  usesDevelopmentKey,
} from "../src/lib/secrets.ts";
import { reencryptKeys } from "../src/services/money/rotation.ts";
import { fileDatabaseUrl, makeWorld, testPrisma, type World } from "./helpers/app.ts";
import { fakeKey, keyRow, last4 } from "./helpers/keys.ts";

const db = testPrisma;
const b64key = () => randomBytes(32).toString("base64");

/** A key row sealed under `master`, written directly (as an older deployment would have). */
async function sealedRow(w: World, master: MasterKeys, plaintext: string, extra: { revokedAt?: Date } = {}) {
  const id = newId();
  const sealed = seal(master, plaintext, apiKeyAad(w.tenant.id, id));
  return db().agentApiKey.create({
    data: {
      id,
      tenantId: w.tenant.id,
      ownerId: w.alice.id,
      label: `key ${id}`,
      provider: "openai_compatible",
      baseUrl: "https://llm.example.com/v1",
      encryptedKey: extra.revokedAt ? new Uint8Array(0) : new Uint8Array(sealed.ciphertext),
      keyVersion: sealed.keyVersion,
      keyHint: last4(plaintext),
      ...extra,
    },
  });
}

const sealedOf = (row: { encryptedKey: Uint8Array; keyVersion: number }) => ({
  ciphertext: Buffer.from(row.encryptedKey),
  keyVersion: row.keyVersion,
});

/** Runs `npm run keys:reencrypt`'s program as its own process against this file's database. */
function reencryptCli(keys: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      "npx",
      ["tsx", "src/cli/reencrypt-keys.ts"],
      {
        cwd: new URL("..", import.meta.url).pathname,
        env: { ...process.env, DATABASE_URL: fileDatabaseUrl(), APP_ENCRYPTION_KEYS: keys },
        timeout: 60_000,
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("the envelope: AES-256-GCM bound to its row", () => {
  const master = parseMasterKeys(`1:${b64key()}`);
  const aad = apiKeyAad("tenant1", "key1");

  it("round-trips, with a fresh IV each time and no plaintext in the ciphertext", () => {
    const a = seal(master, "sk-round-trip-1234", aad);
    const b = seal(master, "sk-round-trip-1234", aad);
    expect(open(master, a, aad)).toBe("sk-round-trip-1234");
    expect(open(master, b, aad)).toBe("sk-round-trip-1234");
    expect(a.keyVersion).toBe(1);
    // 12-byte IV + body + 16-byte tag
    expect(a.ciphertext.length).toBe(12 + "sk-round-trip-1234".length + 16);
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
    expect(a.ciphertext.includes(Buffer.from("sk-round-trip"))).toBe(false);
  });

  it("rejects a flipped byte in the IV, the body or the tag, and a truncated value", () => {
    const sealed = seal(master, "sk-tamper-me-5678", aad);
    const n = sealed.ciphertext.length;
    for (const at of [0, 11, 12, n - 17, n - 16, n - 1]) {
      const c = Buffer.from(sealed.ciphertext);
      c[at]! ^= 0x01;
      expect(() => open(master, { ...sealed, ciphertext: c }, aad), `byte ${at}`).toThrow(DecryptError);
    }
    expect(() => open(master, { ...sealed, ciphertext: sealed.ciphertext.subarray(0, 20) }, aad)).toThrow(
      DecryptError,
    );
    expect(() => open(master, { ...sealed, ciphertext: Buffer.alloc(0) }, aad)).toThrow(/too short/);
  });

  it("rejects the ciphertext under another row's or another tenant's associated data", () => {
    const sealed = seal(master, "sk-bound-to-row-9999", aad);
    expect(() => open(master, sealed, apiKeyAad("tenant1", "key2"))).toThrow(DecryptError);
    expect(() => open(master, sealed, apiKeyAad("tenant2", "key1"))).toThrow(DecryptError);
    // The error never carries the bytes or the plaintext.
    try {
      open(master, sealed, apiKeyAad("tenant2", "key1"));
    } catch (err) {
      expect((err as Error).message).toBe(
        "the secret does not decrypt: tampered, moved from another row, or a wrong master key",
      );
    }
  });

  it("rejects an unknown key version and a different key under the same version", () => {
    const sealed = seal(master, "sk-versioned-0000", aad);
    expect(() => open(master, { ...sealed, keyVersion: 9 }, aad)).toThrow(
      new DecryptError("master key version 9 is not configured"),
    );
    const impostor = parseMasterKeys(`1:${b64key()}`);
    expect(() => open(impostor, sealed, aad)).toThrow(DecryptError);
  });

  it("rotation in memory: old versions still open, new seals use the newest", () => {
    const [a, b] = [b64key(), b64key()];
    const v1 = parseMasterKeys(`1:${a}`);
    const both = parseMasterKeys(`1:${a}, 2:${b}`);
    const v2 = parseMasterKeys(`2:${b}`);
    const old = seal(v1, "sk-rotate-me-1111", aad);
    expect(both.newest).toBe(2);
    expect(open(both, old, aad)).toBe("sk-rotate-me-1111");
    const fresh = seal(both, "sk-rotate-me-1111", aad);
    expect(fresh.keyVersion).toBe(2);
    expect(open(v2, fresh, aad)).toBe("sk-rotate-me-1111");
    expect(() => open(v1, fresh, aad)).toThrow(/version 2 is not configured/);
    expect(() => open(v2, old, aad)).toThrow(/version 1 is not configured/);
  });

  it("parseMasterKeys says what is wrong with a spec", () => {
    expect(() => parseMasterKeys(`1:${randomBytes(16).toString("base64")}`)).toThrow(
      "key version 1 must be 32 bytes (base64), got 16",
    );
    expect(() => parseMasterKeys("just-a-password")).toThrow(/each entry must be <version>:<base64 key>/);
    expect(() => parseMasterKeys("v1:abc")).toThrow(/each entry must be/);
    expect(() => parseMasterKeys(`1:${b64key()},1:${b64key()}`)).toThrow("key version 1 is listed twice");
    expect(() => parseMasterKeys(" , ")).toThrow("at least one key is required");
    expect(parseMasterKeys(`3:${b64key()},7:${b64key()}`).newest).toBe(7);
  });

  it("parseConfig refuses malformed keys, and the development key in production", () => {
    const secret = "a-production-session-secret-0123456789";
    expect(() => parseConfig({ APP_ENCRYPTION_KEYS: `1:${randomBytes(31).toString("base64")}` })).toThrow(
      /APP_ENCRYPTION_KEYS: key version 1 must be 32 bytes \(base64\), got 31/,
    );
    expect(() => parseConfig({ APP_ENCRYPTION_KEYS: "not-a-key" })).toThrow(
      /APP_ENCRYPTION_KEYS: each entry must be <version>:<base64 key>/,
    );
    expect(() => parseConfig({ APP_ENCRYPTION_KEYS: "" })).toThrow(/APP_ENCRYPTION_KEYS: at least one key/);
    // Unset in production means the published development key: refused, and so is naming it.
    expect(() => parseConfig({ NODE_ENV: "production", SESSION_SECRET: secret })).toThrow(
      /APP_ENCRYPTION_KEYS: must be set in production/,
    );
    expect(() =>
      parseConfig({
        NODE_ENV: "production",
        SESSION_SECRET: secret,
        APP_ENCRYPTION_KEYS: DEV_ENCRYPTION_KEYS,
      }),
    ).toThrow(/APP_ENCRYPTION_KEYS: must be set in production/);
    const real = `1:${b64key()}`;
    expect(
      parseConfig({ NODE_ENV: "production", SESSION_SECRET: secret, APP_ENCRYPTION_KEYS: real })
        .APP_ENCRYPTION_KEYS,
    ).toBe(real);
    // Outside production the development key is the default, so local data survives restarts.
    expect(parseConfig({}).APP_ENCRYPTION_KEYS).toBe(DEV_ENCRYPTION_KEYS);
  });

  it("usesDevelopmentKey spots the published key under any spelling", () => {
    const devB64 = DEV_ENCRYPTION_KEYS.slice(2);
    for (const spec of [DEV_ENCRYPTION_KEYS, `2:${devB64}`, ` 1:${devB64},`, `1:${b64key()},5:${devB64}`])
      expect(usesDevelopmentKey(parseMasterKeys(spec)), spec.slice(0, 6)).toBe(true);
    expect(usesDevelopmentKey(parseMasterKeys(`1:${b64key()},2:${b64key()}`))).toBe(false);
  });
});

// Versions 0 → 1 here, below the development key's version 1 that the app seals with:
// rotation only touches rows below the newest version.
describe("rotation: reencryptKeys and npm run keys:reencrypt", () => {
  it("moves every live row to the newest version, in batches, and is idempotent", async () => {
    const w = await makeWorld();
    const [a, b] = [b64key(), b64key()];
    const old = parseMasterKeys(`0:${a}`);
    const both = parseMasterKeys(`0:${a},1:${b}`);
    const newOnly = parseMasterKeys(`1:${b}`);
    const plain = [fakeKey(), fakeKey(), fakeKey()];
    const rows = await Promise.all(plain.map((k) => sealedRow(w, old, k)));
    const revoked = await sealedRow(w, old, fakeKey(), { revokedAt: new Date() });

    // Batches of one: the loop has to page through all three.
    expect(await reencryptKeys(db(), both, 1)).toEqual({ reencrypted: 3, failed: [] });
    const after = await Promise.all(rows.map((r) => keyRow(r.id)));
    for (const [i, r] of after.entries()) {
      expect(r.keyVersion).toBe(1);
      expect(Buffer.from(r.encryptedKey).equals(Buffer.from(rows[i]!.encryptedKey))).toBe(false);
      expect(open(newOnly, sealedOf(r), apiKeyAad(w.tenant.id, r.id))).toBe(plain[i]);
      expect(() => open(old, sealedOf(r), apiKeyAad(w.tenant.id, r.id))).toThrow(DecryptError);
    }
    // A revoked key has no ciphertext left: skipped, not reported as a failure.
    expect(await keyRow(revoked.id)).toMatchObject({ keyVersion: 0, encryptedKey: new Uint8Array(0) });

    expect(await reencryptKeys(db(), both)).toEqual({ reencrypted: 0, failed: [] });
    const again = await Promise.all(rows.map((r) => keyRow(r.id)));
    expect(again.map((r) => Buffer.from(r.encryptedKey).toString("hex"))).toEqual(
      after.map((r) => Buffer.from(r.encryptedKey).toString("hex")),
    );
  });

  it("the CLI re-encrypts what it can, names (never prints) what it cannot, and exits non-zero", async () => {
    const w = await makeWorld();
    const [a, b] = [b64key(), b64key()];
    const old = parseMasterKeys(`0:${a}`);
    const plain = [fakeKey("sk-cli"), fakeKey("sk-cli")];
    const rows = await Promise.all(plain.map((k) => sealedRow(w, old, k)));
    // Sealed under a version-0 key the operator no longer has.
    const lost = await sealedRow(w, parseMasterKeys(`0:${b64key()}`), fakeKey("sk-lost"));

    const first = await reencryptCli(`0:${a},1:${b}`);
    expect(first.code).toBe(1);
    expect(first.stdout).toContain("Re-encrypted 2 key(s) with master key version 1.");
    expect(first.stderr).toContain(`key ${lost.id}: the secret does not decrypt`);
    expect(first.stderr).toContain("1 key(s) could not be decrypted with the configured versions.");
    for (const k of [...plain, a, b]) expect(first.stdout + first.stderr).not.toContain(k);
    const newOnly = parseMasterKeys(`1:${b}`);
    for (const [i, r] of rows.entries())
      expect(open(newOnly, sealedOf(await keyRow(r.id)), apiKeyAad(w.tenant.id, r.id))).toBe(plain[i]);
    expect((await keyRow(lost.id)).keyVersion).toBe(0);

    // Once the lost key is gone, a second run has nothing left to do.
    await db().agentApiKey.delete({ where: { id: lost.id } });
    const second = await reencryptCli(`0:${a},1:${b}`);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain("Re-encrypted 0 key(s) with master key version 1.");
  }, 120_000);
});
