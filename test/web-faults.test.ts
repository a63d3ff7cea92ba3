// The web app when its database connections drop mid-request: a read is read again once
// (200), a write answers 503 with Retry-After (never 500), and nothing is half-written.
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.ts";
import type { PrismaClient } from "../src/db/prisma.ts";
import { fileDatabaseUrl, makeWorld, md, testConfig, testPrisma, waitFor } from "./helpers/app.ts";
import { namedPrisma, terminateBackends } from "./helpers/faults.ts";

const NAME = "web-faults";
let app: FastifyInstance;
let prisma: PrismaClient;
beforeAll(async () => {
  prisma = namedPrisma(NAME, 2);
  app = await buildApp({ config: testConfig(), prisma, logger: false });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await prisma.$disconnect();
});

/**
 * Runs `request` while `lock` holds what it needs, so it is sure to be waiting on the
 * database; then terminates the app's connections and lifts the lock.
 */
async function withConnectionsDropped<T>(lock: string, request: () => PromiseLike<T>): Promise<T> {
  const locker = new pg.Client({ connectionString: fileDatabaseUrl() });
  await locker.connect();
  try {
    await locker.query("BEGIN");
    await locker.query(lock);
    // An inject() chain starts when first awaited: start it now.
    const pending = Promise.resolve(request());
    await waitFor(async () => {
      // pg_stat_activity is read once per transaction: clear the locker's snapshot each time.
      const { rows } = await locker.query(
        "SELECT 1 FROM (SELECT pg_stat_clear_snapshot()) c, pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
        [NAME],
      );
      return rows.length > 0;
    });
    expect(await terminateBackends(NAME)).toBeGreaterThan(0);
    await locker.query("ROLLBACK");
    return await pending;
  } finally {
    await locker.end();
  }
}

describe("dropped database connections", () => {
  it("a write answers 503 with Retry-After, in the request's format, and writes nothing", async () => {
    const w = await makeWorld();
    // The note's studio row, which the insert's foreign key check must share-lock.
    const lock = `SELECT 1 FROM studios WHERE id = '${w.studio.id}' FOR UPDATE`;
    const res = await withConnectionsDropped(lock, () =>
      md(app, w, w.alice, "POST", "/studios/general/actions/create_note", { title: "Lost?", text: "Hello" }),
    );
    expect(res.statusCode).toBe(503);
    expect(res.headers["retry-after"]).toBe("2");
    expect(res.headers["content-type"]).toMatch(/^text\/markdown/);
    expect(res.body).toMatch(/briefly unavailable[\s\S]*Nothing was changed/);
    expect(res.body).not.toMatch(/terminat|57P01/i);
    expect(await testPrisma().note.count({ where: { tenantId: w.tenant.id } })).toBe(0);
    // And the next request is served as usual.
    const again = await md(app, w, w.alice, "POST", "/studios/general/actions/create_note", {
      title: "Second try",
      text: "Hello",
    });
    expect(again.statusCode).toBe(201);
  });

  it("a read is read again once, and answers 200", async () => {
    const w = await makeWorld();
    await md(app, w, w.alice, "POST", "/studios/general/actions/create_note", { title: "Kept", text: "Hi" });
    const res = await withConnectionsDropped("LOCK TABLE notes IN ACCESS EXCLUSIVE MODE", () =>
      md(app, w, w.alice, "GET", "/studios/general/notes"),
    );
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Kept");
  });
});
