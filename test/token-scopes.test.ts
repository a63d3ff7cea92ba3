// API tokens' scopes and expiry (services/registry/token-scope.ts): `read` reads, `act` acts
// but never manages tokens or keys, `manage` does, and over MCP only when the operator allows
// (MCP_MANAGE_ACTIONS); a session is its person. Pages list what the token may use; anything
// else is a 403 saying why. An expired token is a 401. Tokens made before scopes were
// migrated to `manage`, what they could do then.
import { randomUUID } from "node:crypto";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deploy } from "../src/db/schema-engine.ts";
import type { TokenScope } from "../src/generated/prisma/client.ts";
import { createApiToken } from "../src/services/tokens.ts";
import {
  actionNames,
  buildTestApp,
  login,
  makeWorld,
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";
import { mcpClient } from "./helpers/mcp.ts";

let app: FastifyInstance;
let mcpManaging: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ port: 0, host: "127.0.0.1" });
  mcpManaging = await buildTestApp({ MCP_MANAGE_ACTIONS: "1" });
  await mcpManaging.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await app.close();
  await mcpManaging.close();
});

const TOKENS = "/u/alice/settings/tokens";

/** Alice with a fresh token of `scope` (and an expiry, when given). */
async function aliceWith(w: World, scope: TokenScope, expiresAt?: Date): Promise<Person> {
  const { token } = await createApiToken(testPrisma(), w.tenant.id, w.alice.id, scope, { scope, expiresAt });
  return { ...w.alice, token };
}

const call = (
  a: FastifyInstance,
  w: World,
  who: Person,
  method: "GET" | "POST",
  url: string,
  body?: object,
) =>
  a.inject({
    method,
    url,
    headers: { host: w.host, accept: "text/markdown", authorization: `Bearer ${who.token}` },
    ...(body && { payload: body as Record<string, unknown> }),
  });

describe("over the markdown API", () => {
  it("read: pages and non-writing actions; a write is a 403 naming the scope, and is not listed", async () => {
    const w = await makeWorld();
    const reader = await aliceWith(w, "read");
    const page = await call(app, w, reader, "GET", "/studios/general");
    expect(page.statusCode).toBe(200);
    expect(actionNames(page.body)).not.toContain("create_note");
    const write = await call(app, w, reader, "POST", "/studios/general/actions/create_note", { text: "no" });
    expect(write.statusCode).toBe(403);
    expect(write.body).toContain("this API token may only read (its scope is `read`)");
    expect(await testPrisma().note.count({ where: { tenantId: w.tenant.id } })).toBe(0);
    expect((await call(app, w, reader, "POST", "/search/actions/search", { query: "x" })).statusCode).toBe(
      200,
    );
  });

  it("act: acts, but creating a token or adding a key is a 403 saying what it needs", async () => {
    const w = await makeWorld();
    const actor = await aliceWith(w, "act");
    const note = await call(app, w, actor, "POST", "/studios/general/actions/create_note", { text: "yes" });
    expect(note.statusCode).toBe(201);
    expect(actionNames((await call(app, w, actor, "GET", TOKENS)).body)).toEqual([]);
    const mint = await call(app, w, actor, "POST", `${TOKENS}/actions/create_api_token`, { name: "copy" });
    expect(mint.statusCode).toBe(403);
    expect(mint.body).toContain(
      "managing tokens and keys needs a signed-in session or a token with the `manage` scope (this one is `act`)",
    );
    expect(mint.body).not.toMatch(/cadre_[a-z0-9]{8}_/);
    const key = await call(app, w, actor, "POST", "/u/alice/settings/api-keys/actions/add_api_key", {
      label: "k",
      provider: "openai",
      key: "sk-test-12345678",
    });
    expect(key.statusCode).toBe(403);
    expect(await testPrisma().apiToken.count({ where: { userId: w.alice.id } })).toBe(2);
    expect(await testPrisma().agentApiKey.count({ where: { ownerId: w.alice.id } })).toBe(0);
  });

  it("manage: creates a token with a scope and an expiry, shown on the tokens page; bad values name the field", async () => {
    const w = await makeWorld();
    const manager = await aliceWith(w, "manage");
    const made = await call(app, w, manager, "POST", `${TOKENS}/actions/create_api_token`, {
      name: "ci",
      scope: "read",
      expires_in_days: 30,
    });
    expect(made.statusCode).toBe(201);
    const row = await testPrisma().apiToken.findFirstOrThrow({ where: { userId: w.alice.id, name: "ci" } });
    expect(row.scope).toBe("read");
    const days = (row.expiresAt!.getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    const list = (await call(app, w, manager, "GET", TOKENS)).body;
    expect(list).toMatch(/\| \[ci\]\([^)]+\) \| `cadre_\w+_…` \| read \| .* \| active, expires /);
    const bad = await call(app, w, manager, "POST", `${TOKENS}/actions/create_api_token`, {
      name: "x",
      scope: "root",
      expires_in_days: 0,
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("`scope`");
    expect(bad.body).toContain("`expires_in_days`: at least 1");
  });

  it("an expired token is a 401; one made without an expiry keeps working", async () => {
    const w = await makeWorld();
    const stale = await aliceWith(w, "act", new Date(Date.now() - 1000));
    const res = await call(app, w, stale, "GET", "/whoami");
    expect(res.statusCode).toBe(401);
    expect(res.body).toContain("Invalid, revoked, expired or unknown API token");
    expect((await call(app, w, await aliceWith(w, "act"), "GET", "/whoami")).statusCode).toBe(200);
  });
});

describe("in the browser", () => {
  it("a session creates a read token expiring in 7 days from the form; the page shows both", async () => {
    const w = await makeWorld();
    const browser = await login(app, w, w.alice);
    const bad = await browser.post(TOKENS, {
      _action: "create_api_token",
      name: "x",
      scope: "act",
      expires_in_days: "400",
    });
    expect(bad.statusCode).toBe(400);
    expect(issuesOf(bad.body).expires_in_days).toBe("at most 365");
    const res = await browser.post(TOKENS, {
      _action: "create_api_token",
      name: "dashboard",
      scope: "read",
      expires_in_days: "7",
    });
    // The secret is shown once on the page the form redirects to (post/redirect/get).
    expect(res.statusCode).toBe(303);
    const shown = await browser.get(String(res.headers.location));
    expect(shown.body).toContain("Token “dashboard” created (read, expires");
    const row = await testPrisma().apiToken.findFirstOrThrow({ where: { name: "dashboard" } });
    expect(row).toMatchObject({ scope: "read", revokedAt: null });
    const page = (await browser.get(TOKENS)).body;
    expect(page).toMatch(/<td>read<\/td>/);
    expect(page).toContain("active, expires");
  });
});

describe("over MCP", () => {
  const tools = async (a: FastifyInstance, w: World, token: string) => {
    const c = await mcpClient(a, w, token);
    return { c, names: (await c.listTools()).tools.map((t) => t.name) };
  };

  it("even a manage token neither sees nor calls create_api_token unless the operator allows it", async () => {
    const w = await makeWorld();
    const manager = await aliceWith(w, "manage");
    const { c, names } = await tools(app, w, manager.token);
    expect(names).toContain("create_note");
    expect(names).not.toContain("create_api_token");
    expect(names).not.toContain("add_api_key");
    const r = (await c.callTool({
      name: "create_api_token",
      arguments: { page: TOKENS, name: "copy" },
    })) as CallToolResult;
    expect(r.isError).toBe(true);
    expect(JSON.stringify(r.content)).toContain("not offered over MCP here");
    await c.close();

    const allowed = await tools(mcpManaging, w, manager.token);
    expect(allowed.names).toContain("create_api_token");
    const made = (await allowed.c.callTool({
      name: "create_api_token",
      arguments: { page: TOKENS, name: "by mcp" },
    })) as CallToolResult;
    expect(made.isError).toBeFalsy();
    await allowed.c.close();
    // An act token does not get it even where the operator allows it; a read token lists no writes.
    expect((await tools(mcpManaging, w, (await aliceWith(w, "act")).token)).names).not.toContain(
      "create_api_token",
    );
    const read = await tools(app, w, (await aliceWith(w, "read")).token);
    expect(read.names).toContain("read_page");
    expect(read.names).not.toContain("create_note");
    expect(
      await testPrisma().apiToken.count({ where: { userId: w.alice.id, name: { in: ["copy", "by mcp"] } } }),
    ).toBe(1);
  });
});

describe("the migration", () => {
  it("gives tokens made before scopes `manage` (what they could do), and new rows `act`", async () => {
    const server = new URL(inject("databaseUrl"));
    const name = `cadre_scopes_${randomUUID().replace(/-/g, "").slice(0, 10)}`;
    const url = new URL(server);
    url.pathname = `/${name}`;
    const migrations = fileURLToPath(new URL("../prisma/migrations/", import.meta.url));
    const all = (await readdir(migrations)).filter((d) => /^\d{14}_/.test(d)).sort();
    const mine = all.findIndex((d) => d.endsWith("_token_scopes"));
    // Every migration before this one, in a directory of their own.
    const before = await mkdtemp(path.join(tmpdir(), "cadre-migrations-"));
    for (const d of [...all.slice(0, mine), "migration_lock.toml"])
      await cp(path.join(migrations, d), path.join(before, d), { recursive: true });
    const opts = { databaseUrl: url.toString(), schemaPath: "", migrationsDir: before };
    const schemaPath = fileURLToPath(new URL("../prisma/schema.prisma", import.meta.url));
    const admin = new pg.Client({ connectionString: server.toString() });
    await admin.connect();
    try {
      await deploy({ ...opts, schemaPath });
      const db = new pg.Client({ connectionString: url.toString() });
      await db.connect();
      try {
        await db.query(`INSERT INTO tenants (id, subdomain, name) VALUES ('t1', 'old', 'Old')`);
        await db.query(`INSERT INTO users (id, tenant_id, handle, name) VALUES ('u1', 't1', 'ann', 'Ann')`);
        await db.query(
          `INSERT INTO api_tokens (id, tenant_id, user_id, name, token_hash, prefix) VALUES ('k1', 't1', 'u1', 'old', 'h1', 'p1')`,
        );
        await deploy({ ...opts, schemaPath, migrationsDir: migrations });
        await db.query(
          `INSERT INTO api_tokens (id, tenant_id, user_id, name, token_hash, prefix) VALUES ('k2', 't1', 'u1', 'new', 'h2', 'p2')`,
        );
        const { rows } = await db.query("SELECT id, scope, expires_at FROM api_tokens ORDER BY id");
        expect(rows).toEqual([
          { id: "k1", scope: "manage", expires_at: null },
          { id: "k2", scope: "act", expires_at: null },
        ]);
      } finally {
        await db.end();
      }
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await rm(before, { recursive: true, force: true });
      await admin.end();
    }
  }, 60_000);
});
