// Statements are named (prepared once per connection, their plans kept by Postgres)
// unless DATABASE_NAMED_STATEMENTS turns it off for a pooler that cannot carry them;
// hotQuery sends Prisma.sql straight to the pool either way, with Dates as UTC.
import { describe, expect, it } from "vitest";
import { advisoryLock, createPrisma, hotQuery, hotTransaction, type PrismaClient } from "../src/db/prisma.ts";
import { Prisma } from "../src/generated/prisma/client.ts";
import { isTransient } from "../src/lib/transient.ts";
import { fileDatabaseUrl } from "./helpers/app.ts";

async function prepared(db: PrismaClient) {
  // One connection in the pool: what this asks is what the statements before it used.
  return hotQuery<{ statement: string }>(db, Prisma.sql`SELECT statement FROM pg_prepared_statements`);
}

async function withClient(namedStatements: boolean, fn: (db: PrismaClient) => Promise<void>) {
  const db = createPrisma(fileDatabaseUrl(), 1, { namedStatements });
  try {
    await fn(db);
  } finally {
    await db.$disconnect();
  }
}

describe("named statements", () => {
  it("are prepared once per connection, for Prisma's queries and hot ones alike", async () => {
    await withClient(true, async (db) => {
      await db.tenant.findMany({ take: 1 });
      const at = new Date("2026-01-02T03:04:05.678Z");
      const [row] = await hotQuery<{ t: string }>(db, Prisma.sql`SELECT (${at}::timestamp)::text AS t`);
      expect(row!.t).toBe("2026-01-02 03:04:05.678");
      const statements = (await prepared(db)).map((r) => r.statement);
      expect(statements.some((s) => s.includes('FROM "public"."tenants"'))).toBe(true);
      expect(statements.some((s) => s.includes("::timestamp)::text AS t"))).toBe(true);
    });
  });

  it("are not used when turned off", async () => {
    await withClient(false, async (db) => {
      await db.tenant.findMany({ take: 1 });
      await hotQuery(db, Prisma.sql`SELECT ${1}::int AS one`);
      expect(await prepared(db)).toEqual([]);
    });
  });

  it("of group commits go on connections of their own, so a busy pool does not hold a step's record back", async () => {
    await withClient(true, async (db) => {
      // The pool's one connection sleeps for a second; the group commit's answers meanwhile.
      const order: string[] = [];
      const busy = hotQuery(db, Prisma.sql`SELECT pg_sleep(1)`).then(() => order.push("pool"));
      const [row] = await hotQuery<{ n: number }>(db, Prisma.sql`SELECT ${7}::int AS n`, {
        groupCommit: true,
      });
      order.push("group commit");
      expect(row!.n).toBe(7);
      await busy;
      expect(order).toEqual(["group commit", "pool"]);
    });
  });

  it("go through Prisma inside a transaction, which has no pool of its own", async () => {
    await withClient(true, async (db) => {
      const rows = await db.$transaction((tx) =>
        hotQuery<{ n: number }>(tx, Prisma.sql`SELECT ${41}::int + 1 AS n`),
      );
      expect(rows).toEqual([{ n: 42 }]);
    });
  });

  it("of a hot transaction share one connection, commit together, and roll back together on an error", async () => {
    await withClient(true, async (db) => {
      const table = `hot_tx_${Date.now()}`;
      await hotQuery(db, Prisma.sql`CREATE TABLE ${Prisma.raw(table)} (n int)`);
      try {
        const insert = (tx: typeof db, n: number) =>
          hotQuery(tx, Prisma.sql`INSERT INTO ${Prisma.raw(table)} VALUES (${n}::int) RETURNING n`);
        await hotTransaction(db, async (tx) => {
          await advisoryLock(tx, "hot-tx-test");
          await insert(tx as PrismaClient, 1);
          await insert(tx as PrismaClient, 2);
        });
        await expect(
          hotTransaction(db, async (tx) => {
            await insert(tx as PrismaClient, 3);
            throw new Error("refused");
          }),
        ).rejects.toThrow("refused");
        // Anything but hotQuery is a bug, said at once, and rolls back what came before it.
        await expect(
          hotTransaction(db, async (tx) => {
            await insert(tx as PrismaClient, 4);
            await tx.user.findMany();
          }),
        ).rejects.toThrow(/hot statements only/);
        const rows = await hotQuery<{ n: number }>(
          db,
          Prisma.sql`SELECT n FROM ${Prisma.raw(table)} ORDER BY n`,
        );
        expect(rows.map((r) => r.n)).toEqual([1, 2]);
        // The one connection went back to the pool each time.
        expect(await hotQuery(db, Prisma.sql`SELECT 1 AS one`)).toEqual([{ one: 1 }]);
      } finally {
        await hotQuery(db, Prisma.sql`DROP TABLE ${Prisma.raw(table)}`);
      }
    });
  });

  it("of a hot transaction wait for a connection no longer than a transaction would, then fail as a passing fault", async () => {
    // A second of waiting, not 200 ms: on a busy machine even the holder's own connection may
    // take a while to open, and the holder must have it before the late caller asks.
    const db = createPrisma(fileDatabaseUrl(), 1, { transactions: { maxWait: 1000, timeout: 10_000 } });
    try {
      // The pool's one connection, opened first, then held by a transaction until released.
      await hotQuery(db, Prisma.sql`SELECT 1 AS one`);
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let holding!: () => void;
      const holds = new Promise<void>((resolve) => {
        holding = resolve;
      });
      const holder = hotTransaction(db, () => {
        holding();
        return held;
      });
      // The holder has its connection (or failed, and says why) before the late caller comes.
      await Promise.race([holds, holder]);
      const started = Date.now();
      const err = await hotTransaction(db, async () => 1).catch((error: unknown) => error);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(isTransient(err)).toBe(true);
      expect(String(err)).toMatch(/no database connection was free within 1000 ms/);
      release();
      await holder;
      // The connection the late caller would have had went back: the pool still serves.
      expect(await hotTransaction(db, (tx) => hotQuery(tx, Prisma.sql`SELECT 1 AS one`))).toEqual([
        { one: 1 },
      ]);
    } finally {
      await db.$disconnect();
    }
  });

  it("of a hot transaction inside a caller's transaction run in that one", async () => {
    await withClient(true, async (db) => {
      const rows = await db.$transaction((outer) =>
        hotTransaction(outer, async (tx) => {
          await advisoryLock(tx, "hot-tx-test");
          return hotQuery<{ n: number }>(tx, Prisma.sql`SELECT ${6}::int * 7 AS n`);
        }),
      );
      expect(rows).toEqual([{ n: 42 }]);
    });
  });
});
