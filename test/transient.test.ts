// One classification of failures (src/lib/transient.ts), checked against the errors real
// Postgres, Prisma with adapter-pg, pg and ioredis raise — not against hand-made shapes.
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createPrisma, hotQuery } from "../src/db/prisma.ts";
import { Prisma } from "../src/generated/prisma/client.ts";
import { ValidationError } from "../src/lib/errors.ts";
import { isTransient, retryTransient } from "../src/lib/transient.ts";
import { fileDatabaseUrl, testPrisma } from "./helpers/app.ts";
import { namedPrisma, terminateBackends } from "./helpers/faults.ts";

const failure = async (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e,
  );
const raise = (code: string) =>
  Prisma.sql`DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '${Prisma.raw(code)}'; END $$`;
const closing: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of closing) await c();
});

describe("transient failures", () => {
  it("a transaction that cannot start in time, or outlives its limit (Prisma P2028)", async () => {
    const db = createPrisma(fileDatabaseUrl(), 1, { transactions: { maxWait: 20, timeout: 100 } });
    closing.push(() => db.$disconnect());
    const busy = db.$transaction((tx) => tx.$queryRaw`SELECT pg_sleep(0.3)::text`, {
      maxWait: 2000,
      timeout: 2000,
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(isTransient(await failure(db.$transaction((tx) => tx.$queryRaw`SELECT 1`)))).toBe(true);
    await busy;
    const expired = db.$transaction(async (tx) => {
      await new Promise((r) => setTimeout(r, 200));
      return tx.$queryRaw`SELECT 1`;
    });
    expect(isTransient(await failure(expired))).toBe(true);
  });

  it("a connection terminated mid-statement, through pg and through Prisma", async () => {
    const name = "transient-terminated";
    const db = namedPrisma(name, 2);
    closing.push(() => db.$disconnect());
    const direct = failure(hotQuery(db, Prisma.sql`SELECT pg_sleep(5)::text`));
    const inTx = failure(db.$transaction((tx) => tx.$queryRaw`SELECT pg_sleep(5)::text`));
    await new Promise((r) => setTimeout(r, 300));
    await terminateBackends(name);
    expect(isTransient(await direct)).toBe(true);
    expect(isTransient(await inTx)).toBe(true);
  });

  it("deadlocks and serialization failures, an unreachable server, Redis gone", async () => {
    expect(isTransient(await failure(testPrisma().$executeRaw(raise("40P01"))))).toBe(true);
    expect(isTransient(await failure(hotQuery(testPrisma(), raise("40001"))))).toBe(true);
    const nowhere = createPrisma("postgresql://postgres@127.0.0.1:1/none", 1);
    closing.push(() => nowhere.$disconnect());
    expect(isTransient(await failure(nowhere.$queryRaw`SELECT 1`))).toBe(true);
    expect(isTransient(await failure(hotQuery(nowhere, Prisma.sql`SELECT 1`)))).toBe(true);
    const redis = new Redis("redis://127.0.0.1:1", { lazyConnect: true, maxRetriesPerRequest: 0 });
    redis.on("error", () => undefined);
    expect(isTransient(await failure(redis.get("k")))).toBe(true);
    redis.disconnect();
  });

  it("permanent: a bad statement, a constraint, invalid input, a bug", async () => {
    expect(isTransient(await failure(hotQuery(testPrisma(), Prisma.sql`SELECT 1/0`)))).toBe(false);
    expect(isTransient(await failure(testPrisma().$queryRaw`SELECT 1/0`))).toBe(false);
    const fk = testPrisma().note.create({
      data: { id: "x", tenantId: "none", studioId: "none", authorId: "none", text: "" },
    });
    expect(isTransient(await failure(fk))).toBe(false);
    expect(isTransient(new ValidationError([{ field: "title", message: "required" }]))).toBe(false);
    expect(isTransient(new TypeError("undefined is not a function"))).toBe(false);
  });

  it("retryTransient tries again until it works, and never retries a permanent failure", async () => {
    let calls = 0;
    const flaky = () =>
      ++calls < 3 ? Promise.reject(Object.assign(new Error("x"), { code: "40001" })) : Promise.resolve(calls);
    expect(await retryTransient(flaky, { until: Date.now() + 5000 })).toBe(3);
    calls = 0;
    const bug = () => {
      calls += 1;
      return Promise.reject(new TypeError("bug"));
    };
    await expect(retryTransient(bug, { until: Date.now() + 5000 })).rejects.toThrow("bug");
    expect(calls).toBe(1);
  });
});
