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
  write(r: Row, sealed: Sealed): Promise<number>;
}

async function reencrypt(master: MasterKeys, store: Store, batch: number): Promise<RotationReport> {
  const report: RotationReport = { reencrypted: 0, failed: [] };
  let after = "";
  for (;;) {
    const rows = await store.older(after, batch);
    if (!rows.length) return report;
    for (const r of rows) {
      const aad = store.aad(r);
      try {
        report.reencrypted += await store.write(r, seal(master, open(master, r.sealed, aad), aad));
      } catch (err) {
        report.failed.push({ id: r.id, error: (err as Error).message });
      }
    }
    after = rows[rows.length - 1]!.id;
  }
}

const bytes = (s: Sealed) => new Uint8Array(s.ciphertext);

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
      aad: (r) => apiKeyAad(r.tenantId, r.id),
      write: async (r, s) =>
        (
          await db.agentApiKey.updateMany({
            where: { id: r.id, keyVersion: r.sealed.keyVersion, revokedAt: null },
            data: { encryptedKey: bytes(s), keyVersion: s.keyVersion },
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
        ).map((h) => ({
          id: h.id,
          tenantId: h.tenantId,
          sealed: { ciphertext: Buffer.from(h.encryptedSecret), keyVersion: h.keyVersion },
        })),
      aad: (r) => webhookSecretAad(r.tenantId, r.id),
      // The ciphertext read, not just its version: a rotation of the secret meanwhile wins.
      write: async (r, s) =>
        (
          await db.agentWebhook.updateMany({
            where: { id: r.id, keyVersion: r.sealed.keyVersion, encryptedSecret: bytes(r.sealed) },
            data: { encryptedSecret: bytes(s), keyVersion: s.keyVersion },
          })
        ).count,
    },
    batch,
  );
}
