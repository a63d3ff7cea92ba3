// Shared setup for benchmarks: a fresh database migrated from prisma/migrations,
// dropped at the end, so a benchmark never touches the demo's or a test run's data; the
// app's own entry points started as child processes; percentiles.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { PrismaClient } from "../src/db/prisma.ts";
import { deploy } from "../src/db/schema-engine.ts";
import { newId } from "../src/lib/ids.ts";

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

const fromSource = process.env.BENCH_SOURCE === "1";
let built = false;

/**
 * Starts an entry point (`src/worker.ts`, `src/server.ts`) as a node child, with `env` over
 * this process's environment: compiled, as production runs it (`npm run build` once per
 * benchmark, then `dist/worker.js`), or from source under tsx with `BENCH_SOURCE=1`. node
 * itself, no npm or npx wrapper: its pid is the process to measure and to signal.
 */
export function startEntry(
  entry: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): ChildProcess {
  if (!fromSource && !built) {
    execFileSync("npm", ["run", "--silent", "build"], { stdio: "inherit" });
    built = true;
  }
  const args = fromSource
    ? ["--import", "tsx", entry]
    : [entry.replace(/^src\//, "dist/").replace(/\.ts$/, ".js")];
  return spawn(process.execPath, [...nodeArgs, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
}

/** Resolves when the child prints `text` on stdout; rejects if it exits first. */
export function printed(child: ChildProcess, text: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => d.toString().includes(text) && resolve());
    child.once("exit", (code) => reject(new Error(`child exited with ${code} before printing "${text}"`)));
  });
}

/** SIGTERM, then SIGKILL if the child has not exited within `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const kill = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(kill);
}

/** A port free on loopback right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const TICK = 100; // USER_HZ: clock ticks per second on Linux

/** CPU seconds the whole machine has spent so far (all cores), less idle and iowait. */
export function machineCpuSeconds(): number {
  const all = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number);
  return (all.reduce((a, b) => a + b, 0) - all[3]! - all[4]!) / TICK;
}

/** CPU seconds (user + system) one process has spent so far. */
export function processCpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / TICK;
}

/** Peak resident memory of a process (its VmHWM), threads included, in MB. */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** A fresh tenant with one person, admin of its studio `general`: what every benchmark starts from. */
export async function seedStudio(db: PrismaClient, handle: string, name: string) {
  const tenant = await db.tenant.create({
    data: { id: newId(), subdomain: `bench${newId(6)}`, name: "Bench" },
  });
  const person = await db.user.create({
    data: { id: newId(), tenantId: tenant.id, handle, name, kind: "person" },
  });
  const studio = await db.studio.create({
    data: {
      id: newId(),
      tenantId: tenant.id,
      handle: "general",
      name: "General",
      inviteCode: newId(10),
      createdById: person.id,
      members: { create: { userId: person.id, tenantId: tenant.id, role: "admin" } },
    },
  });
  return { tenant, person, studio };
}
