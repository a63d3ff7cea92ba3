// bin/demo re-run: the token it printed last time stays valid (a copied curl line keeps
// working); only a token that no longer works is replaced, and then the old ones are revoked.
import { describe, expect, it } from "vitest";
import { seedDemo } from "../src/dev/demo-seed.ts";
import { verifyApiToken } from "../src/services/tokens.ts";
import { testPrisma } from "./helpers/app.ts";

// The run's own database (bin/test): the `demo` workspace made here is no other test's.
const db = testPrisma;

describe("the demo seed's token", () => {
  it("keeps last run's token while it works, replaces one that does not", async () => {
    const first = await seedDemo(db());
    expect(first.tokenKept).toBe(false);
    const again = await seedDemo(db(), first.token);
    expect(again).toMatchObject({ token: first.token, tokenKept: true });
    const tenant = await db().tenant.findUniqueOrThrow({ where: { subdomain: "demo" } });
    expect(await verifyApiToken(db(), tenant.id, first.token)).not.toBeNull();
    // A token that does not work (made up, or revoked) is not kept: a fresh one, the old revoked.
    const fresh = await seedDemo(db(), "cadre_aaaaaaaa_not-a-real-token-at-all");
    expect(fresh.tokenKept).toBe(false);
    expect(fresh.token).not.toBe(first.token);
    expect(await verifyApiToken(db(), tenant.id, first.token)).toBeNull();
    expect(await verifyApiToken(db(), tenant.id, fresh.token)).not.toBeNull();
  }, 60_000);
});
