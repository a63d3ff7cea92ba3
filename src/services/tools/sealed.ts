// A connection's secrets at rest: sealed like provider keys (src/lib/secrets.ts) with the
// tenant, the row and which secret it is as associated data, the key version beside each.
// Nothing here logs or returns a secret to a caller outside this folder.
import type { Db } from "../../db/prisma.ts";
import type { ToolConnection } from "../../generated/prisma/client.ts";
import { open, seal, toolConnectionAad } from "../../lib/secrets.ts";
import { keyring } from "../money/keyring.ts";

export type SecretPart = "token" | "client" | "verifier";

export const COLUMNS = {
  token: { data: "encryptedToken", version: "tokenKeyVersion" },
  client: { data: "encryptedClient", version: "clientKeyVersion" },
  verifier: { data: "encryptedVerifier", version: "verifierKeyVersion" },
} as const;

export const SECRET_PARTS = Object.keys(COLUMNS) as SecretPart[];

/** The columns to write for a new secret (`null`: clear it). */
export function sealedColumns(tenantId: string, id: string, part: SecretPart, plaintext: string | null) {
  const { data, version } = COLUMNS[part];
  if (plaintext === null) return { [data]: null, [version]: null };
  const sealed = seal(keyring().master, plaintext, toolConnectionAad(tenantId, id, part));
  return { [data]: new Uint8Array(sealed.ciphertext), [version]: sealed.keyVersion };
}

/** The opened secret, or null when none is stored. Throws DecryptError when it does not open. */
export function openSecret(connection: ToolConnection, part: SecretPart): string | null {
  const { data, version } = COLUMNS[part];
  const ciphertext = connection[data];
  const keyVersion = connection[version];
  if (!ciphertext || keyVersion === null) return null;
  return open(
    keyring().master,
    { ciphertext: Buffer.from(ciphertext), keyVersion },
    toolConnectionAad(connection.tenantId, connection.id, part),
  );
}

/** Seals and stores one secret of a connection, and keeps the in-memory row in step. */
export async function storeSecret(
  db: Db,
  connection: ToolConnection,
  part: SecretPart,
  plaintext: string | null,
) {
  const columns = sealedColumns(connection.tenantId, connection.id, part, plaintext);
  await db.toolConnection.update({
    where: { id: connection.id, tenantId: connection.tenantId },
    data: columns,
  });
  Object.assign(connection, columns);
}
