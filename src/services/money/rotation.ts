// Master key rotation: after a new version is added to APP_ENCRYPTION_KEYS (new writes
// already use it), this moves every stored secret (provider keys, webhook secrets) to it,
// so the old version can be retired.
import type { Db } from "../../db/prisma.ts";
import { apiKeyAad, type MasterKeys, open, type Sealed, seal, webhookSecretAad } from "../../lib/secrets.ts";

export interface RotationReport {
  reencrypted: number;
  failed: { id: string; error: string }[];
}

interface Row {
  id: string;
  tenantId: string;
  sealed: Sealed;
}

/** One kind of sealed row: how to page through the old ones, bind them, and write one back. */
interface Store {
  older(after: string, take: number): Promise<Row[]>;
  aad(row: Row): string;
  /** Guarded by the version read: a row changed meanwhile is left for the next pass. Returns rows written. */
  write(row: Row, sealed: Sealed): Promise<number>;
}

async function reencrypt(master: MasterKeys, store: Store, batch: number): Promise<RotationReport> {
  const report: RotationReport = { reencrypted: 0, failed: [] };
  let after = "";
  for (;;) {
    const rows = await store.older(after, batch);
    if (!rows.length) return report;
    for (const row of rows) {
      const aad = store.aad(row);
      try {
        report.reencrypted += await store.write(row, seal(master, open(master, row.sealed, aad), aad));
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
          tenantId: key.tenantId,
          sealed: { ciphertext: Buffer.from(key.encryptedKey), keyVersion: key.keyVersion },
        })),
      aad: (row) => apiKeyAad(row.tenantId, row.id),
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
          tenantId: hook.tenantId,
          sealed: { ciphertext: Buffer.from(hook.encryptedSecret), keyVersion: hook.keyVersion },
        })),
      aad: (row) => webhookSecretAad(row.tenantId, row.id),
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
