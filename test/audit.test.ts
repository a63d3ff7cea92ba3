// The audit trail of API tokens: one row per call made with a token, written after the
// answer in batches (never by the request), shown on the token's own page in markdown and
// HTML, kept AUDIT_RETENTION_DAYS; a database that cannot take a batch delays it, loses
// nothing and fails no request.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.ts";
import { createPrisma } from "../src/db/prisma.ts";
import { newId } from "../src/lib/ids.ts";
import { createAuditWriter } from "../src/services/audit.ts";
import { startAgents } from "./helpers/agents.ts";
import {
  buildTestApp,
  login,
  makeWorld,
  md,
  type Person,
  testConfig,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";
import { databaseBehindProxy } from "./helpers/faults.ts";
import { captureLog } from "./helpers/logs.ts";

const db = testPrisma;
let app: FastifyInstance;
beforeAll(async () => {
  // Written only when flushed by hand or at close: the tests see exactly when rows land.
  app = await buildApp({
    config: testConfig({ AUDIT_FLUSH_MS: "60000", AUDIT_BATCH_SIZE: "1000" }),
    prisma: testPrisma(),
    logger: false,
  });
  // What /mcp does with the contract: it names the tool it called, and the page it read.
  app.post("/test-mcp", async (req) => {
    req.audit.tool = "read_page";
    req.audit.page = "/whoami";
    return { ok: true };
  });
  await app.ready();
});
afterAll(async () => {
  await app?.close();
});

const tokenOf = async (who: Person) =>
  (await db().apiToken.findFirstOrThrow({ where: { userId: who.id }, orderBy: { createdAt: "asc" } })).id;
const callsOf = (tokenId: string) =>
  db().apiCall.findMany({ where: { tokenId }, orderBy: { createdAt: "asc" } });

describe("what a token did", () => {
  let w: World;
  let alice: string;
  beforeAll(async () => {
    w = await makeWorld();
    alice = await tokenOf(w.alice);
  });

  it("one row per call, written after the answer: the page, the action, the status, the latency", async () => {
    expect((await md(app, w, w.alice, "GET", "/studios/general?page=2")).statusCode).toBe(200);
    const made = await md(app, w, w.alice, "POST", "/studios/general/actions/create_note", {
      text: "audited",
    });
    expect(made.statusCode).toBe(201);
    expect((await md(app, w, w.alice, "GET", "/studios/general/actions/create_note")).statusCode).toBe(200);
    expect((await md(app, w, w.alice, "GET", "/studios/nowhere.md")).statusCode).toBe(404);
    const bad = await md(app, w, w.alice, "POST", "/studios/general/actions/create_note", { text: "" });
    expect(bad.statusCode).toBe(400);
    const mcp = await app.inject({
      method: "POST",
      url: "/test-mcp",
      headers: { host: w.host, authorization: `Bearer ${w.alice.token}` },
    });
    expect(mcp.statusCode).toBe(200);
    // The answers went out; nothing was written by them.
    expect(await callsOf(alice)).toEqual([]);

    await app.auditLog.flush();
    const rows = await callsOf(alice);
    expect(rows.map((r) => [r.method, r.page, r.action, r.tool, r.status])).toEqual([
      ["GET", "/studios/general", null, null, 200],
      ["POST", "/studios/general", "create_note", null, 201],
      ["GET", "/studios/general", "create_note", null, 200],
      ["GET", "/studios/nowhere", null, null, 404],
      ["POST", "/studios/general", "create_note", null, 400],
      ["POST", "/whoami", null, "read_page", 200],
    ]);
    for (const r of rows) {
      expect(r).toMatchObject({ tenantId: w.tenant.id, actorId: w.alice.id });
      expect(r.latencyMs).toBeGreaterThanOrEqual(0);
      expect(Date.now() - r.createdAt.getTime()).toBeLessThan(60_000);
    }
  });

  it("calls with a session, with a bad token, or with another token are not this token's", async () => {
    const before = (await callsOf(alice)).length;
    const browser = await login(app, w, w.alice);
    expect((await browser.get("/studios/general")).statusCode).toBe(200);
    const forged = { ...w.alice, token: `cadre_${newId(8)}_${"x".repeat(32)}` };
    expect((await md(app, w, forged, "GET", "/whoami")).statusCode).toBe(401);
    expect((await md(app, w, w.bob, "GET", "/whoami")).statusCode).toBe(200);
    await app.auditLog.flush();
    expect((await callsOf(alice)).length).toBe(before);
    expect((await callsOf(await tokenOf(w.bob))).map((r) => r.page)).toEqual(["/whoami"]);
  });

  it("the token's page shows them, newest first, in markdown and in HTML, to its owner only", async () => {
    const page = `/u/alice/settings/tokens/${alice}`;
    const res = await md(app, w, w.alice, "GET", page);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("## Recent calls");
    const table = res.body.slice(res.body.indexOf("| when |"));
    expect(table).toMatch(/\| POST \| tool `read_page` on `\/whoami` \| — \| 200 \| \d+ ms \|/);
    expect(table).toMatch(/\| POST \| `\/studios\/general` \| `create_note` \| 201 \| \d+ ms \|/);
    expect(table.indexOf("read_page")).toBeLessThan(table.indexOf("/studios/nowhere"));
    // The list of tokens links to it.
    expect((await md(app, w, w.alice, "GET", "/u/alice/settings/tokens")).body).toContain(`(${page})`);

    const browser = await login(app, w, w.alice);
    const html = await browser.get(page);
    expect(html.statusCode).toBe(200);
    expect(html.headers["content-type"]).toMatch(/^text\/html/);
    expect(html.body).toContain("<code>create_note</code>");
    expect(html.body).toMatch(/<td>201<\/td>/);

    // Bob's own settings say nothing of alice's token; her token's page is a 404 for him.
    expect((await md(app, w, w.bob, "GET", page)).statusCode).toBe(404);
    expect((await md(app, w, w.bob, "GET", `/u/bob/settings/tokens/${alice}`)).statusCode).toBe(404);
  });
});

describe("written in batches, never by the request", () => {
  it("a full batch is written at once, without waiting for the timer", async () => {
    const batched = await buildTestApp({ AUDIT_FLUSH_MS: "60000", AUDIT_BATCH_SIZE: "3" });
    try {
      const w = await makeWorld();
      const token = await tokenOf(w.alice);
      for (let i = 0; i < 2; i++) await md(batched, w, w.alice, "GET", "/whoami");
      expect(await callsOf(token)).toEqual([]);
      await md(batched, w, w.alice, "GET", "/whoami");
      await waitFor(async () => (await callsOf(token)).length === 3);
    } finally {
      await batched.close();
    }
  });

  it("the timer writes what is waiting; closing the app writes the rest", async () => {
    const timed = await buildTestApp({ AUDIT_FLUSH_MS: "100", AUDIT_BATCH_SIZE: "1000" });
    const w = await makeWorld();
    const token = await tokenOf(w.alice);
    await md(timed, w, w.alice, "GET", "/whoami");
    await waitFor(async () => (await callsOf(token)).length === 1);
    const closing = await buildTestApp({ AUDIT_FLUSH_MS: "60000", AUDIT_BATCH_SIZE: "1000" });
    await md(closing, w, w.alice, "GET", "/studios/general");
    expect((await callsOf(token)).length).toBe(1);
    await closing.close();
    await timed.close();
    expect((await callsOf(token)).map((r) => r.page)).toEqual(["/whoami", "/studios/general"]);
  });

  it("a database out of reach keeps the rows and says so once; they are written when it is back", async () => {
    const proxy = await databaseBehindProxy();
    const through = createPrisma(proxy.url, 1);
    const log = captureLog();
    const writer = createAuditWriter({ db: through, log: log.logger, flushMs: 60_000, batchSize: 1000 });
    const w = await makeWorld();
    const token = await tokenOf(w.alice);
    const row = (page: string) => ({
      tenantId: w.tenant.id,
      tokenId: token,
      actorId: w.alice.id,
      method: "GET",
      page,
      status: 200,
      latencyMs: 3,
      at: new Date(),
    });
    try {
      await proxy.cut();
      writer.push(row("/first"));
      await writer.flush();
      writer.push(row("/second"));
      await writer.flush();
      expect(await callsOf(token)).toEqual([]);
      expect(log.messages()).toEqual([expect.stringMatching(/database is unavailable; keeping calls/)]);

      await proxy.restore();
      await waitFor(async () => {
        await writer.flush();
        return (await callsOf(token)).length === 2;
      }, 10_000);
      expect((await callsOf(token)).map((r) => r.page).sort()).toEqual(["/first", "/second"]);
      expect(log.messages()).toEqual([
        expect.stringMatching(/unavailable/),
        expect.stringMatching(/writing again/),
      ]);
    } finally {
      await writer.close(0);
      await through.$disconnect();
      await proxy.cut();
    }
  });

  it("text Postgres cannot store (a NUL in a path) is kept, marked, and does not sink its batch", async () => {
    const w = await makeWorld();
    const token = await tokenOf(w.alice);
    expect((await md(app, w, w.alice, "GET", "/studios/a%00b")).statusCode).toBe(404);
    await md(app, w, w.alice, "GET", "/whoami");
    await app.auditLog.flush();
    expect((await callsOf(token)).map((r) => r.page)).toEqual(["/studios/a\ufffdb", "/whoami"]);
  });
});

describe("kept AUDIT_RETENTION_DAYS", () => {
  it("the worker's maintenance sweep deletes older rows and keeps the rest", async () => {
    const w = await makeWorld();
    const token = await tokenOf(w.alice);
    const day = 24 * 3600 * 1000;
    const at = (daysAgo: number) => ({
      id: newId(),
      tenantId: w.tenant.id,
      tokenId: token,
      actorId: w.alice.id,
      method: "GET",
      page: `/${daysAgo}-days-ago`,
      status: 200,
      latencyMs: 1,
      createdAt: new Date(Date.now() - daysAgo * day),
    });
    await db().apiCall.createMany({ data: [at(9), at(8), at(6), at(0)] });
    const env = await startAgents("audit-retention", { AUDIT_RETENTION_DAYS: "7" });
    try {
      await waitFor(async () => (await callsOf(token)).length === 2, 10_000);
      expect((await callsOf(token)).map((r) => r.page)).toEqual(["/6-days-ago", "/0-days-ago"]);
    } finally {
      await env.close();
    }
  });
});
