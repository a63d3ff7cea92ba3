// Master-key rotation reaches the account secrets too (issue 44): a TOTP seed and a workspace's
// OpenID Connect client secret sealed under an old master key move to the newest one, still
// bound to their person and row, and a second pass finds nothing left to move.
import { describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { open, seal, ssoSecretAad, totpSeedAad } from "../src/lib/secrets.ts";
import { reencryptSsoSecrets, reencryptTotpSeeds } from "../src/services/money/rotation.ts";
import { makeWorld, testPrisma } from "./helpers/app.ts";
import { both, sealedOf, v1, v2 } from "./helpers/master-keys.ts";

const db = testPrisma;
describe("keys:reencrypt and the account secrets", () => {
  it("moves a person's TOTP seed to the newest master key, bound to that person", async () => {
    const w = await makeWorld("rot-totp");
    const sealed = seal(v1, "JBSWY3DPEHPK3PXP", totpSeedAad(w.tenant.id, w.bob.id));
    const id = newId();
    await db().totpFactor.create({
      data: {
        id,
        tenantId: w.tenant.id,
        userId: w.bob.id,
        encryptedSeed: new Uint8Array(sealed.ciphertext),
        keyVersion: sealed.keyVersion,
      },
    });
    const first = await reencryptTotpSeeds(db(), both);
    expect(first.failed).toEqual([]);
    expect(first.reencrypted).toBeGreaterThanOrEqual(1);
    const row = await db().totpFactor.findUniqueOrThrow({ where: { id } });
    expect(row.keyVersion).toBe(2);
    expect(open(v2, sealedOf(row.encryptedSeed, row.keyVersion), totpSeedAad(w.tenant.id, w.bob.id))).toBe(
      "JBSWY3DPEHPK3PXP",
    );
    expect(() => open(v2, sealedOf(row.encryptedSeed, 2), totpSeedAad(w.tenant.id, w.alice.id))).toThrow();
    expect((await reencryptTotpSeeds(db(), both)).reencrypted).toBe(0);
  });

  it("moves a workspace's SSO client secret to the newest master key, bound to its row", async () => {
    const w = await makeWorld("rot-sso");
    const id = newId();
    const sealed = seal(v1, "client-secret-of-the-idp", ssoSecretAad(w.tenant.id, id));
    await db().ssoProvider.create({
      data: {
        id,
        tenantId: w.tenant.id,
        displayName: "Example IdP",
        issuer: "https://idp.example.com",
        clientId: "cadre",
        encryptedSecret: new Uint8Array(sealed.ciphertext),
        secretVersion: sealed.keyVersion,
      },
    });
    const first = await reencryptSsoSecrets(db(), both);
    expect(first.failed).toEqual([]);
    expect(first.reencrypted).toBeGreaterThanOrEqual(1);
    const row = await db().ssoProvider.findUniqueOrThrow({ where: { id } });
    expect(row.secretVersion).toBe(2);
    expect(open(v2, sealedOf(row.encryptedSecret, 2), ssoSecretAad(w.tenant.id, id))).toBe(
      "client-secret-of-the-idp",
    );
    expect((await reencryptSsoSecrets(db(), both)).reencrypted).toBe(0);
  });
});
