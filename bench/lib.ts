// Shared setup for benchmarks: a fresh database migrated from prisma/migrations,
// dropped at the end, so a benchmark never touches the demo's or a test run's data.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { deploy } from "../src/db/schema-engine.ts";

const prismaDir = fileURLToPath(new URL("../prisma/", import.meta.url));

export async function freshDatabase(
  baseUrl: string,
  label: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `cadre_bench_${label}_${randomBytes(3).toString("hex")}`;
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  await deploy({
    databaseUrl: url.toString(),
    schemaPath: path.join(prismaDir, "schema.prisma"),
    migrationsDir: path.join(prismaDir, "migrations"),
  });
  return {
    url: url.toString(),
    async drop() {
      const admin = new URL(baseUrl);
      admin.pathname = "/postgres";
      const c = new pg.Client({ connectionString: admin.toString() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
