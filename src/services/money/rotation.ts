// Master key rotation: after a new version is added to APP_ENCRYPTION_KEYS (new writes
// already use it), this moves every stored secret (provider keys, webhook secrets, TOTP
// seeds, SSO client secrets; tool connections' own in services/tools/rotation.ts) to it, so the
// old version can be retired.
import type { Db } from "../../db/prisma.ts";
import {
  apiKeyAad,
  type MasterKeys,
  open,
  type Sealed,
  seal,
  ssoSecretAad,
  totpSeedAad,
  webhookSecretAad,
} from "../../lib/secrets.ts";

export interface RotationReport {
  reencrypted: number;
  failed: { id: string; error: string }[];
}

export interface Row {
  id: string;
  /** What the ciphertext is bound to (its AAD), computed where the row is read. */
  aad: string;
  sealed: Sealed;
}

/** One kind of sealed row: how to page through the old ones, bind them, and write one back. */
export interface Store {
  older(after: string, take: number): Promise<Row[]>;
  /** Guarded by the version read: a row changed meanwhile is left for the next pass. Returns rows written. */
  write(row: Row, sealed: Sealed): Promise<number>;
}

export async function reencrypt(master: MasterKeys, store: Store, batch: number): Promise<RotationReport> {
  const report: RotationReport = { reencrypted: 0, failed: [] };
  let after = "";
  for (;;) {
    const rows = await store.older(after, batch);
    if (!rows.length) return report;
    for (const row of rows) {
      try {
        report.reencrypted += await store.write(
          row,
          seal(master, open(master, row.sealed, row.aad), row.aad),
        );
      } catch (err) {
        report.failed.push({ id: row.id, error: (err as Error).message });
      }
    }
    after = rows[rows.length - 1]!.id;
  }
}

const bytes = (sealed: Sealed) => new Uint8Array(sealed.ciphertext);

export function reencryptKeys(db: Db, master: MasterKeys, batch = 500): Promise<RotationReport> {
  return reencrypt(
    master,
    {
      older: async (after, take) =>
        (
          await db.agentApiKey.findMany({
            where: { keyVersion: { lt: master.newest }, revokedAt: null, id: { gt: after } },
            orderBy: { id: "asc" },
            take,
          })
        ).map((key) => ({
          id: key.id,
          aad: apiKeyAad(key.tenantId, key.id),
          sealed: { ciphertext: Buffer.from(key.encryptedKey), keyVersion: key.keyVersion },
        })),
      write: async (row, sealed) =>
        (
          await db.agentApiKey.updateMany({
            where: { id: row.id, keyVersion: row.sealed.keyVersion, revokedAt: null },
            data: { encryptedKey: bytes(sealed), keyVersion: sealed.keyVersion },
          })
        ).count,
    },
    batch,
  );
}

export function reencryptWebhookSecrets(db: Db, master: MasterKeys, batch = 500): Promise<RotationReport> {
  return reencrypt(
    master,
    {
      older: async (after, take) =>
        (
          await db.agentWebhook.findMany({
            where: { keyVersion: { lt: master.newest }, id: { gt: after } },
            orderBy: { id: "asc" },
            take,
          })
        ).map((hook) => ({
          id: hook.id,
          aad: webhookSecretAad(hook.tenantId, hook.id),
          sealed: { ciphertext: Buffer.from(hook.encryptedSecret), keyVersion: hook.keyVersion },
        })),
      // The ciphertext read, not just its version: a rotation of the secret meanwhile wins.
      write: async (row, sealed) =>
        (
          await db.agentWebhook.updateMany({
            where: { id: row.id, keyVersion: row.sealed.keyVersion, encryptedSecret: bytes(row.sealed) },
            data: { encryptedSecret: bytes(sealed), keyVersion: sealed.keyVersion },
          })
        ).count,
    },
    batch,
  );
}

/** Authenticator seeds, bound to their person: a re-enrolment meanwhile (new ciphertext) wins. */
export function reencryptTotpSeeds(db: Db, master: MasterKeys, batch = 500): Promise<RotationReport> {
  return reencrypt(
    master,
    {
      older: async (after, take) =>
        (
          await db.totpFactor.findMany({
            where: { keyVersion: { lt: master.newest }, id: { gt: after } },
            orderBy: { id: "asc" },
            take,
          })
        ).map((factor) => ({
          id: factor.id,
          aad: totpSeedAad(factor.tenantId, factor.userId),
          sealed: { ciphertext: Buffer.from(factor.encryptedSeed), keyVersion: factor.keyVersion },
        })),
      write: async (row, sealed) =>
        (
          await db.totpFactor.updateMany({
            where: { id: row.id, keyVersion: row.sealed.keyVersion, encryptedSeed: bytes(row.sealed) },
            data: { encryptedSeed: bytes(sealed), keyVersion: sealed.keyVersion },
          })
        ).count,
    },
    batch,
  );
}

/** A workspace's OpenID Connect client secret: a new secret set meanwhile wins. */
export function reencryptSsoSecrets(db: Db, master: MasterKeys, batch = 500): Promise<RotationReport> {
  return reencrypt(
    master,
    {
      older: async (after, take) =>
        (
          await db.ssoProvider.findMany({
            where: { secretVersion: { lt: master.newest }, id: { gt: after } },
            orderBy: { id: "asc" },
            take,
          })
        ).map((provider) => ({
          id: provider.id,
          aad: ssoSecretAad(provider.tenantId, provider.id),
          sealed: { ciphertext: Buffer.from(provider.encryptedSecret), keyVersion: provider.secretVersion },
        })),
      write: async (row, sealed) =>
        (
          await db.ssoProvider.updateMany({
            where: { id: row.id, secretVersion: row.sealed.keyVersion, encryptedSecret: bytes(row.sealed) },
            data: { encryptedSecret: bytes(sealed), secretVersion: sealed.keyVersion },
          })
        ).count,
    },
    batch,
  );
}
