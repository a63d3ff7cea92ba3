// A connection the server ends while a transaction holds it (idle in transaction between two
// statements, as when the app does work of its own mid-transaction) must fail that
// transaction, transiently, not the process: pg emits the error on the client, and a pool
// listens only on clients it holds idle.
import { afterAll, describe, expect, it } from "vitest";
import { isTransient } from "../src/lib/transient.ts";
import { namedPrisma, terminateBackends } from "./helpers/faults.ts";

const db = namedPrisma("conn-loss", 2);
afterAll(async () => {
  await db.$disconnect();
});

describe("a connection lost inside a transaction", () => {
  it("fails the transaction with a transient error; the process lives and the next statement works", async () => {
    const crashes: unknown[] = [];
    const onCrash = (err: unknown) => crashes.push(err);
    process.on("uncaughtException", onCrash);
    try {
      const tx = db.$transaction(async (t) => {
        await t.$queryRaw`SELECT 1`;
        expect(await terminateBackends("conn-loss")).toBeGreaterThan(0);
        await new Promise((r) => setTimeout(r, 300)); // the error arrives while no statement runs
        await t.$queryRaw`SELECT 2`;
      });
      const err = await tx.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).not.toBeNull();
      expect(isTransient(err)).toBe(true);
      expect(crashes).toEqual([]);
      expect(await db.$queryRaw<{ n: number }[]>`SELECT 3 AS n`).toEqual([{ n: 3 }]);
    } finally {
      process.off("uncaughtException", onCrash);
    }
  });
});
