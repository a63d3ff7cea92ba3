// The leak test for tool connections: a static bearer token and the OAuth tokens of a real
// sign-in (consent, callback, refresh after expiry, revoke) are in no HTTP answer after the
// form that took them, no log line of the app or the worker, no job in Redis, and no row in
// plaintext (only sealed), whatever pages, tests and the callback were used on the way.
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { makeWorld, md } from "./helpers/app.ts";
import { databaseDump, redisDump } from "./helpers/dumps.ts";
import { answers, expectClean, type LeakStack, startLeakStack } from "./helpers/leak-stack.ts";
import { startMcpServer, type TestMcpServer } from "./helpers/mcp-servers.ts";
import { startAuthServer, type TestAuthServer } from "./helpers/oauth-server.ts";
import { signInAs } from "./helpers/sessions.ts";

const BEARER = "tok_leak_7f3a9b2c1d8e4f6a5b0c9d2e";
let stack: LeakStack;
let as: TestAuthServer;
let oauthServer: TestMcpServer;
let bearerServer: TestMcpServer;
const tools = [{ name: "echo", description: "Echoes.", inputSchema: { text: z.string() } }];

beforeAll(async () => {
  stack = await startLeakStack("tools-leak");
  as = await startAuthServer();
  oauthServer = await startMcpServer({ verifyToken: (t) => as.verify(t), challenge: as.challenge, tools });
  as.guard(oauthServer.url);
  bearerServer = await startMcpServer({ bearer: BEARER, tools });
});
afterAll(async () => {
  await stack?.close();
  await oauthServer?.close();
  await bearerServer?.close();
  await as?.close();
});

describe("the leak test for tool connection secrets", () => {
  it("keeps a bearer token and OAuth tokens out of every answer, log, job and plaintext row", async () => {
    const { app } = stack;
    const w = await makeWorld("tleak");
    const alice = await signInAs(app, w, w.alice);
    const seen: LightMyRequestResponse[] = [];
    const keep = async (res: Promise<LightMyRequestResponse>) => {
      const done = await res;
      seen.push(done);
      return done;
    };
    const PAGE = "/u/alice/settings/tools";
    const add = (body: Record<string, string>) => alice.post(`${PAGE}/actions/add_tool_connection`, body);

    // The bearer token goes in once, in the form: that request is not `seen`, its answer is.
    const bearer = await keep(
      add({
        name: "Tools",
        slug: "tools",
        url: bearerServer.url,
        audience: "owner",
        auth: "bearer",
        token: BEARER,
      }),
    );
    expect(bearer.statusCode).toBe(303);
    const bearerPage = bearer.headers.location as string;
    await keep(alice.get(bearerPage));
    await keep(alice.get(`${bearerPage}.md`));
    await keep(md(app, w, w.alice, "GET", bearerPage));
    await keep(alice.get(PAGE));
    const id = bearerPage.split("/").pop()!;
    await keep(alice.post(`${bearerPage}/actions/test_tool_connection`, { id }));

    // OAuth: the consent step driven over HTTP, the callback on Cadre's own host.
    const made = await keep(
      add({ name: "Company", slug: "corp", url: oauthServer.url, audience: "owner", auth: "oauth" }),
    );
    const oauthPage = made.headers.location as string;
    const page = await keep(alice.get(oauthPage));
    const authorize = /href="(http:\/\/127\.0\.0\.1:\d+\/authorize\?[^"]+)"/
      .exec(page.body)![1]!
      .replace(/&amp;/g, "&");
    const consent = await (await fetch(authorize)).text();
    const requestId = /name="id" value="([^"]+)"/.exec(consent)![1]!;
    const allowed = await fetch(`${as.url}/consent`, {
      method: "POST",
      body: new URLSearchParams({ id: requestId }),
      redirect: "manual",
    });
    const back = new URL(allowed.headers.get("location")!);
    const callback = await keep(alice.get(`${back.pathname}${back.search}`));
    expect(callback.statusCode).toBe(303);
    expect(callback.headers.location).toBe(oauthPage);
    const signedIn = await keep(alice.get(oauthPage));
    expect(signedIn.body).toContain("Signed in to “Company”");
    as.expireAccessTokens();
    const oauthId = oauthPage.split("/").pop()!;
    const refreshed = await keep(alice.post(`${oauthPage}/actions/test_tool_connection`, { id: oauthId }));
    expect(refreshed.statusCode).toBe(303);
    expect(as.refreshes).toBe(1);
    await keep(alice.get(oauthPage));
    await keep(md(app, w, w.alice, "GET", oauthPage));
    await keep(md(app, w, w.alice, "GET", PAGE));
    const rows = await databaseDump();
    const disconnected = await keep(
      alice.post(`${oauthPage}/actions/disconnect_tool_connection`, { id: oauthId, _confirm: "yes" }),
    );
    expect(disconnected.statusCode).toBe(303);
    expect(as.revoked.length).toBeGreaterThanOrEqual(2);

    const secrets = [BEARER, ...as.issued];
    expect(as.issued.length).toBe(4);
    const clean = (where: string, texts: string[]) => expectClean(where, texts, secrets);
    clean("HTTP response", answers(seen));
    clean("app log", stack.appLog);
    clean("worker log", stack.workerLog.raw);
    clean("Redis", await redisDump(stack.env.config.REDIS_URL, stack.env.config.QUEUE_PREFIX));
    clean(
      "a row, in plaintext",
      rows.map((row) => row.row),
    );
    clean(
      "a row after disconnecting",
      (await databaseDump()).map((row) => row.row),
    );
    // The code and state came in a query string: the request log writes the path alone.
    expect(stack.appLog.some((line) => line.includes(back.searchParams.get("code")!))).toBe(false);
  }, 90_000);
});
