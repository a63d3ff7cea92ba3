// Master key rotation: after a new version is added to APP_ENCRYPTION_KEYS (new writes
// already use it), this moves every stored key to it, so the old version can be retired.
import type { Db } from "../../db/prisma.ts";
import { apiKeyAad, type MasterKeys, open, seal } from "./secrets.ts";

export interface RotationReport {
  reencrypted: number;
  failed: { id: string; error: string }[];
}

export async function reencryptKeys(db: Db, master: MasterKeys, batch = 500): Promise<RotationReport> {
  const report: RotationReport = { reencrypted: 0, failed: [] };
  let after = "";
  for (;;) {
    const rows = await db.agentApiKey.findMany({
      where: { keyVersion: { lt: master.newest }, revokedAt: null, id: { gt: after } },
      orderBy: { id: "asc" },
      take: batch,
    });
    if (!rows.length) return report;
    for (const k of rows) {
      const aad = apiKeyAad(k.tenantId, k.id);
      try {
        const plain = open(
          master,
          { ciphertext: Buffer.from(k.encryptedKey), keyVersion: k.keyVersion },
          aad,
        );
        const sealed = seal(master, plain, aad);
        // Guarded by the version read: a row changed meanwhile is left for the next pass.
        const res = await db.agentApiKey.updateMany({
          where: { id: k.id, keyVersion: k.keyVersion, revokedAt: null },
          data: { encryptedKey: new Uint8Array(sealed.ciphertext), keyVersion: sealed.keyVersion },
        });
        report.reencrypted += res.count;
      } catch (err) {
        report.failed.push({ id: k.id, error: (err as Error).message });
      }
    }
    after = rows[rows.length - 1]!.id;
  }
}
