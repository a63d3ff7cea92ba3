// Guards the migrations directory: it must deploy cleanly onto an empty database, leave
// no drift against schema.prisma, and record checksums exactly as `prisma migrate` would.
import { createHash, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import {
  databaseExists,
  deploy,
  drift,
  type MigrateOptions,
  readMigrations,
  status,
  unmigratedChanges,
} from "../src/db/schema-engine.ts";

const TIMEOUT = 60_000;
const prismaDir = fileURLToPath(new URL("../prisma/", import.meta.url));
// The run's server (test/global-setup.ts): the environment's, or a container of the run's own.
const server = new URL(inject("databaseUrl"));

function urlFor(database: string): string {
  const u = new URL(server);
  u.pathname = `/${database}`;
  return u.toString();
}

const dbName = `cadre_migrations_test_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
const opts: MigrateOptions = {
  databaseUrl: urlFor(dbName),
  schemaPath: path.join(prismaDir, "schema.prisma"),
  migrationsDir: path.join(prismaDir, "migrations"),
};

async function query<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}

interface MigrationRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

const migrationRows = () =>
  query<MigrationRow>(
    opts.databaseUrl,
    "SELECT migration_name, checksum, finished_at, rolled_back_at FROM _prisma_migrations ORDER BY migration_name",
  );

describe("prisma/migrations", { timeout: TIMEOUT }, () => {
  afterAll(async () => {
    await query(urlFor("postgres"), `DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  }, TIMEOUT);

  // The tests share one database and run in order: each builds on the deploy above it.
  it("deploys every migration onto a fresh database it creates", async () => {
    const local = (await readMigrations(opts.migrationsDir)).migrationDirectories.map((d) => d.path);
    expect(local.length).toBeGreaterThan(0);
    expect(await databaseExists(opts.databaseUrl)).toBe(false);

    expect(await deploy(opts)).toEqual(local);

    const s = await status(opts);
    expect(s).toMatchObject({ databaseExists: true, applied: local, pending: [], failed: [], edited: [] });
  });

  it("has no drift between the migrated database and schema.prisma, either way", async () => {
    expect(await drift(opts)).toEqual({ dbToSchema: "", schemaToDb: "" });
  });

  it("has a migration for every schema.prisma change", async () => {
    expect(await unmigratedChanges(opts)).toBe("");
  });

  it("records the sha256 of each migration.sql as its checksum", async () => {
    const rows = await migrationRows();
    const local = (await readMigrations(opts.migrationsDir)).migrationDirectories;
    expect(rows.map((r) => r.migration_name)).toEqual(local.map((d) => d.path));
    for (const row of rows) {
      const sql = await readFile(path.join(opts.migrationsDir, row.migration_name, "migration.sql"));
      expect(row.checksum, row.migration_name).toBe(createHash("sha256").update(sql).digest("hex"));
      expect(row.finished_at, row.migration_name).not.toBeNull();
      expect(row.rolled_back_at, row.migration_name).toBeNull();
    }
  });

  it("treats a second deploy as a no-op", async () => {
    const before = await migrationRows();
    expect(await deploy(opts)).toEqual([]);
    expect(await migrationRows()).toEqual(before);
  });
});
