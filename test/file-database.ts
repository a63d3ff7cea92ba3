// Runs before each test file: copies the run's migrated template database into one of
// the file's own, so the file's relays, workers and sweepers only ever see its own data.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, inject } from "vitest";

declare global {
  var __cadreFileDatabaseUrl: string | undefined;
}

const template = new URL(inject("databaseUrl"));
const templateName = template.pathname.slice(1);
const name = `${templateName}_f${randomBytes(4).toString("hex")}`;
const admin = new URL(template);
admin.pathname = "/postgres";

async function onAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: admin.toString() });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

// Two files copying the template at the same instant can see each other as "other users" of it: retry briefly.
for (let attempt = 0; ; attempt++) {
  try {
    await onAdmin((c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${templateName}"`));
    break;
  } catch (err) {
    if (attempt >= 20 || !/being accessed by other users/.test(String(err))) throw err;
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
  }
}
const url = new URL(template);
url.pathname = `/${name}`;
globalThis.__cadreFileDatabaseUrl = url.toString();

afterAll(async () => {
  await onAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
});
