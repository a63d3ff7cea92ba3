// Master-key rotation reaches tool connections (issue 45): a connection's OAuth token set and
// registered client, sealed under an old master key, move to the newest one, each still bound
// to its workspace, row and part; a second pass finds nothing left to move.
import { describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { open, seal, toolConnectionAad } from "../src/lib/secrets.ts";
import { reencryptToolConnections } from "../src/services/tools/rotation.ts";
import { makeWorld, testPrisma } from "./helpers/app.ts";
import { both, sealedOf, v1, v2 } from "./helpers/master-keys.ts";

const db = testPrisma;
describe("keys:reencrypt and tool connections", () => {
  it("moves a connection's tokens and client to the newest master key, each bound to its part", async () => {
    const w = await makeWorld("rot-tools");
    const id = newId();
    const tokens = JSON.stringify({ access_token: "at-old", refresh_token: "rt-old" });
    const client = JSON.stringify({ client_id: "cadre-client", client_secret: "cs-old" });
    const token = seal(v1, tokens, toolConnectionAad(w.tenant.id, id, "token"));
    const registered = seal(v1, client, toolConnectionAad(w.tenant.id, id, "client"));
    await db().toolConnection.create({
      data: {
        id,
        tenantId: w.tenant.id,
        ownerUserId: w.alice.id,
        name: "Linear",
        slug: "linear",
        url: "https://mcp.linear.app/mcp",
        authKind: "oauth",
        audience: "owner",
        createdById: w.alice.id,
        encryptedToken: new Uint8Array(token.ciphertext),
        tokenKeyVersion: token.keyVersion,
        encryptedClient: new Uint8Array(registered.ciphertext),
        clientKeyVersion: registered.keyVersion,
      },
    });
    const first = await reencryptToolConnections(db(), both);
    expect(first.failed).toEqual([]);
    expect(first.reencrypted).toBeGreaterThanOrEqual(2);
    const row = await db().toolConnection.findUniqueOrThrow({ where: { id } });
    expect([row.tokenKeyVersion, row.clientKeyVersion, row.verifierKeyVersion]).toEqual([2, 2, null]);
    expect(open(v2, sealedOf(row.encryptedToken!, 2), toolConnectionAad(w.tenant.id, id, "token"))).toBe(
      tokens,
    );
    expect(open(v2, sealedOf(row.encryptedClient!, 2), toolConnectionAad(w.tenant.id, id, "client"))).toBe(
      client,
    );
    // Bound to its part: the token set does not open as the client.
    expect(() =>
      open(v2, sealedOf(row.encryptedToken!, 2), toolConnectionAad(w.tenant.id, id, "client")),
    ).toThrow();
    expect((await reencryptToolConnections(db(), both)).reencrypted).toBe(0);
  });
});
