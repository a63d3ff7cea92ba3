// Offline replacement for `prisma migrate` (whose native engine cannot be downloaded here).
// Usage: tsx src/cli/migrate.ts create <name> | deploy | status | check
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadMigrateConfig } from "../config.ts";
import {
  createMigration,
  deploy,
  drift,
  type MigrateOptions,
  type MigrationStatus,
  redact,
  status,
  unmigratedChanges,
} from "../db/schema-engine.ts";

const USAGE = `Usage: npm run migrate -- <command>

  create <name>  write prisma/migrations/<timestamp>_<name>/migration.sql from schema.prisma changes
  deploy         create the database if needed and apply pending migrations
  status         list applied, pending, failed and edited migrations
  check          exit 1 on pending/failed/edited migrations, unmigrated schema changes or drift

DATABASE_URL defaults to postgresql://postgres@127.0.0.1:5432/cadre`;

// Resolved from this file so the command works from any working directory.
const prismaDir = fileURLToPath(new URL("../../prisma/", import.meta.url));

const env = loadMigrateConfig();
const opts: MigrateOptions = {
  databaseUrl: env.databaseUrl,
  schemaPath: path.join(prismaDir, "schema.prisma"),
  migrationsDir: path.join(prismaDir, "migrations"),
  log: env.debug ? (line) => console.error(line) : undefined,
};

const rel = (p: string) => path.relative(process.cwd(), p) || ".";
const list = (names: string[]) => names.map((n) => `  - ${n}`).join("\n");

function printStatus(migrationStatus: MigrationStatus): void {
  if (!migrationStatus.databaseExists) console.log("Database does not exist yet (deploy creates it).");
  const sections: [string, string[]][] = [
    ["Applied", migrationStatus.applied],
    ["Pending", migrationStatus.pending],
    ["Failed (fix, then resolve with `prisma migrate resolve`)", migrationStatus.failed],
    ["Edited since applied (checksum mismatch)", migrationStatus.edited],
    ["Applied but missing from prisma/migrations", migrationStatus.missingLocally],
  ];
  for (const [title, names] of sections) {
    if (names.length > 0 || title === "Applied")
      console.log(`${title}: ${names.length}\n${list(names)}`.trimEnd());
  }
}

/** Returns the process exit code. */
async function run(args: string[]): Promise<number> {
  if (!URL.canParse(opts.databaseUrl) || !new URL(opts.databaseUrl).protocol.startsWith("postgres")) {
    console.error(
      "DATABASE_URL must be a postgresql:// URL, e.g. postgresql://postgres@127.0.0.1:5432/cadre",
    );
    return 2;
  }
  const [command, ...rest] = args;
  switch (command) {
    case "create": {
      const name = rest.join(" ").trim();
      if (!name) {
        console.error(`Missing migration name.\n\n${USAGE}`);
        return 2;
      }
      const dir = await createMigration(opts, name);
      console.log(
        dir
          ? `Created ${rel(path.join(opts.migrationsDir, dir, "migration.sql"))}`
          : "no changes: schema.prisma matches the migrations, nothing written",
      );
      return 0;
    }
    case "deploy": {
      const applied = await deploy(opts);
      console.log(
        applied.length
          ? `Applied ${applied.length} migration(s):\n${list(applied)}`
          : "No pending migrations.",
      );
      return 0;
    }
    case "status": {
      console.log(`Database: ${redact(opts.databaseUrl)}`);
      printStatus(await status(opts));
      return 0;
    }
    case "check":
      return check();
    default:
      console.error(command ? `Unknown command "${command}".\n\n${USAGE}` : USAGE);
      return 2;
  }
}

async function check(): Promise<number> {
  const problems: string[] = [];
  const unmigrated = await unmigratedChanges(opts);
  if (unmigrated)
    problems.push(
      `schema.prisma has changes with no migration (run \`npm run migrate -- create <name>\`):\n${unmigrated}`,
    );
  const s = await status(opts);
  if (!s.databaseExists) problems.push(`Database does not exist: ${redact(opts.databaseUrl)}`);
  if (s.pending.length) problems.push(`Pending migrations:\n${list(s.pending)}`);
  if (s.failed.length) problems.push(`Failed migrations:\n${list(s.failed)}`);
  if (s.edited.length) problems.push(`Migrations edited after being applied:\n${list(s.edited)}`);
  if (s.missingLocally.length)
    problems.push(`Applied migrations missing locally:\n${list(s.missingLocally)}`);
  if (s.databaseExists) {
    const d = await drift(opts);
    if (d.dbToSchema)
      problems.push(`Drift: SQL needed to bring the database to schema.prisma:\n${d.dbToSchema}`);
    if (d.schemaToDb)
      problems.push(
        `Drift: the database has objects schema.prisma lacks; SQL reproducing them:\n${d.schemaToDb}`,
      );
  }
  if (problems.length === 0) {
    console.log(
      `OK: ${s.applied.length} migration(s) applied, schema.prisma, migrations and database agree.`,
    );
    return 0;
  }
  console.error(problems.join("\n\n").trimEnd());
  return 1;
}

function describe(e: unknown): string {
  // pg reports a refused connection to a multi-address host as an AggregateError with no message.
  if (e instanceof AggregateError && !e.message) return e.errors.map(describe).join("; ");
  return e instanceof Error ? e.message : String(e);
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (e) {
  console.error(`migrate failed: ${describe(e)}`);
  process.exitCode = 1;
}
// The engine can leave connections and timers behind; do not wait for them.
process.exit();
