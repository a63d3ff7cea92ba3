// Statements are named (prepared once per connection, their plans kept by Postgres)
// unless DATABASE_NAMED_STATEMENTS turns it off for a pooler that cannot carry them;
// hotQuery sends Prisma.sql straight to the pool either way, with Dates as UTC.
import { describe, expect, it } from "vitest";
import { createPrisma, hotQuery, type PrismaClient } from "../src/db/prisma.ts";
import { Prisma } from "../src/generated/prisma/client.ts";
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
});
