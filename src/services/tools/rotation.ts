// keys:reencrypt for tool connections: each sealed part of a connection (a bearer token or
// OAuth token set, the registered OAuth client, a sign-in's PKCE verifier) moves to the
// newest master key, still bound to its workspace, row and part; a part rewritten meanwhile
// (a refresh saved new tokens) wins, and is left for the next pass.
import type { Db } from "../../db/prisma.ts";
import type { Prisma } from "../../generated/prisma/client.ts";
import { type MasterKeys, toolConnectionAad } from "../../lib/secrets.ts";
import { type RotationReport, reencrypt } from "../money/rotation.ts";
import { COLUMNS, SECRET_PARTS, type SecretPart } from "./sealed.ts";

function reencryptPart(db: Db, master: MasterKeys, part: SecretPart, batch: number) {
  const { data, version } = COLUMNS[part];
  return reencrypt(
    master,
    {
      older: async (after, take) => {
        const rows = await db.toolConnection.findMany({
          where: { [version]: { lt: master.newest }, id: { gt: after } } as Prisma.ToolConnectionWhereInput,
          orderBy: { id: "asc" },
          take,
        });
        return rows.map((row) => ({
          id: row.id,
          aad: toolConnectionAad(row.tenantId, row.id, part),
          sealed: { ciphertext: Buffer.from(row[data]!), keyVersion: row[version]! },
        }));
      },
      write: async (row, sealed) =>
        (
          await db.toolConnection.updateMany({
            where: {
              id: row.id,
              [version]: row.sealed.keyVersion,
              [data]: new Uint8Array(row.sealed.ciphertext),
            } as Prisma.ToolConnectionWhereInput,
            data: { [data]: new Uint8Array(sealed.ciphertext), [version]: sealed.keyVersion },
          })
        ).count,
    },
    batch,
  );
}

export async function reencryptToolConnections(
  db: Db,
  master: MasterKeys,
  batch = 500,
): Promise<RotationReport> {
  const report: RotationReport = { reencrypted: 0, failed: [] };
  for (const part of SECRET_PARTS) {
    const done = await reencryptPart(db, master, part, batch);
    report.reencrypted += done.reencrypted;
    report.failed.push(...done.failed.map((failure) => ({ ...failure, id: `${failure.id} (${part})` })));
  }
  return report;
}
