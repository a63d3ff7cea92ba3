// One fresh database per test run, migrated from prisma/migrations, serves as the
// template each test file copies (test/file-database.ts): relays, workers and sweepers
// act on a whole database, so files running in parallel must not share one. One queue
// prefix per run keeps concurrent runs on a machine apart. All dropped at the end. Postgres
// and Redis are the environment's, or containers of the run's own (test/containers.ts).
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { deploy } from "../src/db/schema-engine.ts";
import { startContainers } from "./containers.ts";

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    redisUrl: string;
    queuePrefix: string;
  }
}

const prismaDir = fileURLToPath(new URL("../prisma/", import.meta.url));

export default async function setup(project: TestProject) {
  const run = `${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;
  const services = await startContainers(process.env.CADRE_TEST_CONTAINERS);
  const server = new URL(
    services.databaseUrl ?? (process.env.DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/cadre"),
  );
  const dbName = `cadre_test_${run}`;
  const url = new URL(server);
  url.pathname = `/${dbName}`;
  await deploy({
    databaseUrl: url.toString(),
    schemaPath: path.join(prismaDir, "schema.prisma"),
    migrationsDir: path.join(prismaDir, "migrations"),
  });
  project.provide("databaseUrl", url.toString());
  project.provide("redisUrl", services.redisUrl ?? (process.env.REDIS_URL || "redis://127.0.0.1:6379"));
  project.provide("queuePrefix", `cadre-test-${run}`);

  return async () => {
    const admin = new URL(server);
    admin.pathname = "/postgres";
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    const { rows } = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname = $1 OR datname LIKE $2",
      [dbName, `${dbName}\\_f%`],
    );
    for (const r of rows) await client.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
    await client.end();
    await services.stop();
  };
}
