// Rate limits on calls made with an API token: per token and per workspace, counted in
// Redis so two app instances share the count, answered 429 with Retry-After in the request's
// format; people with a session are not counted; with Redis gone, calls are served and the
// log says so once.
import type { FastifyInstance } from "fastify";
import { afterAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.ts";
import { newId } from "../src/lib/ids.ts";
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
import { privateRedis } from "./helpers/faults.ts";

const apps: FastifyInstance[] = [];
afterAll(async () => {
  for (const a of apps) await a.close();
});

/** An app whose limits count under a prefix of this test's own, so no other test's calls add up. */
async function appWith(limits: Record<string, string>, prefix = `rl-${newId(6)}`) {
  const app = await buildTestApp({ QUEUE_PREFIX: prefix, ...limits });
  apps.push(app);
  return { app, prefix };
}

describe("per token", () => {
  it("the call past the limit is a 429 with Retry-After, in markdown and in HTML; another token is not held back", async () => {
    const { app } = await appWith({ API_RATE_LIMIT_PER_TOKEN: "3", API_RATE_LIMIT_PER_TENANT: "0" });
    const w = await makeWorld();
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await md(app, w, w.alice, "GET", "/whoami");
      expect(res.statusCode).toBe(200);
      remaining.push(String(res.headers["x-ratelimit-remaining"]));
    }
    expect(remaining).toEqual(["2", "1", "0"]);

    const over = await md(app, w, w.alice, "GET", "/whoami");
    expect(over.statusCode).toBe(429);
    expect(over.headers["content-type"]).toMatch(/^text\/markdown/);
    const wait = Number(over.headers["retry-after"]);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(over.body).toMatch(/Too many requests: this API token may make 3 calls every 60 s/);

    const html = await app.inject({
      method: "POST",
      url: "/studios/general/actions/create_note",
      headers: { host: w.host, authorization: `Bearer ${w.alice.token}`, "content-type": "application/json" },
      payload: { text: "refused" },
    });
    expect(html.statusCode).toBe(429);
    expect(html.headers["content-type"]).toMatch(/^text\/html/);
    expect(html.headers["retry-after"]).toBeDefined();
    expect(html.body).toContain("Too many requests");
    // An MCP client asks for JSON (or a stream), and hears JSON.
    const mcp = await app.inject({
      method: "POST",
      url: "/mcp",
      headers: {
        host: w.host,
        authorization: `Bearer ${w.alice.token}`,
        accept: "application/json, text/event-stream",
      },
      payload: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    expect(mcp.statusCode).toBe(429);
    expect(mcp.headers["retry-after"]).toBeDefined();
    // /mcp answers in JSON-RPC, as an MCP client parses it.
    expect(mcp.json()).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32000, message: expect.stringMatching(/^Too many requests/) },
    });
    // Refused before it ran: nothing was written.
    expect(await testPrisma().note.count({ where: { tenantId: w.tenant.id } })).toBe(0);

    expect((await md(app, w, w.bob, "GET", "/whoami")).statusCode).toBe(200);
  });

  it("people browsing with a session are not counted", async () => {
    const { app } = await appWith({ API_RATE_LIMIT_PER_TOKEN: "2", API_RATE_LIMIT_PER_TENANT: "2" });
    const w = await makeWorld();
    const browser = await login(app, w, w.alice);
    for (let i = 0; i < 6; i++) expect((await browser.get("/studios/general")).statusCode).toBe(200);
    expect((await md(app, w, w.alice, "GET", "/whoami")).statusCode).toBe(200);
  });
});

describe("per workspace", () => {
  it("all of a workspace's tokens share its limit; another workspace has its own", async () => {
    const { app } = await appWith({ API_RATE_LIMIT_PER_TOKEN: "0", API_RATE_LIMIT_PER_TENANT: "4" });
    const w = await makeWorld();
    for (const who of [w.alice, w.alice, w.bob, w.carol])
      expect((await md(app, w, who, "GET", "/whoami")).statusCode).toBe(200);
    const over = await md(app, w, w.bob, "GET", "/whoami");
    expect(over.statusCode).toBe(429);
    expect(over.body).toContain("this workspace's API tokens together may make 4 calls");
    const other = await makeWorld();
    expect((await md(app, other, other.alice, "GET", "/whoami")).statusCode).toBe(200);
  });
});

describe("both limits on at once", () => {
  // Both are on by default: with both registered, neither may stop the other from counting.
  const sixth = async (limits: Record<string, string>, who: (w: World) => Person[]) => {
    const { app } = await appWith({ ...limits, API_RATE_LIMIT_WINDOW_SECONDS: "60" });
    const w = await makeWorld();
    const people = who(w);
    const codes: number[] = [];
    let last: Awaited<ReturnType<typeof md>> | undefined;
    for (let i = 0; i < 6; i++) {
      last = await md(app, w, people[i % people.length]!, "GET", "/whoami");
      codes.push(last.statusCode);
    }
    return { codes, last: last! };
  };

  it("with both at 5, one token's 6th call is a 429 with Retry-After", async () => {
    const { codes, last } = await sixth(
      { API_RATE_LIMIT_PER_TOKEN: "5", API_RATE_LIMIT_PER_TENANT: "5" },
      (w) => [w.alice],
    );
    expect(codes).toEqual([200, 200, 200, 200, 200, 429]);
    expect(Number(last.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(last.headers["x-ratelimit-remaining"]).toBe("0");
  });

  it("with both on, the workspace's limit holds across its tokens (token limit out of reach)", async () => {
    const { codes, last } = await sixth(
      { API_RATE_LIMIT_PER_TOKEN: "5", API_RATE_LIMIT_PER_TENANT: "5" },
      (w) => [w.alice, w.bob, w.carol],
    );
    expect(codes).toEqual([200, 200, 200, 200, 200, 429]);
    expect(last.body).toContain("this workspace's API tokens together may make 5 calls");
    expect(Number(last.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  });

  it("each alone at 5: the 6th call is a 429", async () => {
    const token = await sixth({ API_RATE_LIMIT_PER_TOKEN: "5", API_RATE_LIMIT_PER_TENANT: "0" }, (w) => [
      w.alice,
    ]);
    expect(token.codes).toEqual([200, 200, 200, 200, 200, 429]);
    const tenant = await sixth({ API_RATE_LIMIT_PER_TOKEN: "0", API_RATE_LIMIT_PER_TENANT: "5" }, (w) => [
      w.alice,
      w.bob,
    ]);
    expect(tenant.codes).toEqual([200, 200, 200, 200, 200, 429]);
    expect(Number(tenant.last.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  });
});

describe("shared across web processes", () => {
  it("two app instances on one Redis count one limit", async () => {
    const limits = { API_RATE_LIMIT_PER_TOKEN: "3", API_RATE_LIMIT_PER_TENANT: "0" };
    const one = await appWith(limits);
    const two = await appWith(limits, one.prefix);
    const w = await makeWorld();
    expect((await md(one.app, w, w.alice, "GET", "/whoami")).statusCode).toBe(200);
    expect((await md(two.app, w, w.alice, "GET", "/whoami")).statusCode).toBe(200);
    expect((await md(one.app, w, w.alice, "GET", "/whoami")).statusCode).toBe(200);
    expect((await md(two.app, w, w.alice, "GET", "/whoami")).statusCode).toBe(429);
    expect((await md(one.app, w, w.alice, "GET", "/whoami")).statusCode).toBe(429);
  });
});

describe("Redis away", () => {
  it("under token traffic with both limits on, the web stays up, answers reads, and logs the outage once", async () => {
    const redis = await privateRedis();
    const lines: { msg: string }[] = [];
    const rejections: unknown[] = [];
    const onRejection = (err: unknown) => rejections.push(err);
    process.on("unhandledRejection", onRejection);
    const app = await buildApp({
      config: testConfig({
        REDIS_URL: redis.url,
        LOG_LEVEL: "info",
        API_RATE_LIMIT_PER_TOKEN: "1000",
        API_RATE_LIMIT_PER_TENANT: "1000",
      }),
      prisma: testPrisma(),
      logger: { stream: { write: (l: string) => void lines.push(JSON.parse(l)) } },
    });
    apps.push(app);
    let stop = false;
    let traffic: Promise<unknown> = Promise.resolve();
    try {
      const w = await makeWorld();
      const codes: number[] = [];
      // Four clients calling without pause, as a busy integration would, while Redis goes away
      // and comes back: until told to stop (a fixed count could run out before ioredis's
      // reconnect, up to 2 s, leaving no call to notice Redis is back).
      traffic = Promise.all(
        [w.alice, w.bob, w.alice, w.bob].map(async (who) => {
          while (!stop) codes.push((await md(app, w, who, "GET", "/whoami")).statusCode);
        }),
      );
      await waitFor(async () => codes.length >= 20);
      redis.kill();
      const killedAt = codes.length;
      await waitFor(async () => codes.length >= killedAt + 40, 10_000);
      await redis.start();
      await waitFor(
        async () => lines.some((l) => l.msg.startsWith("rate limiter: Redis answers again")),
        10_000,
      );
      stop = true;
      await traffic;
      // Every call answered, none refused or failed, before, during and after the outage.
      expect(codes.filter((c) => c !== 200)).toEqual([]);
      expect(lines.map((l) => l.msg).filter((m) => m.startsWith("rate limiter"))).toEqual([
        expect.stringMatching(/Redis is unavailable; API calls are not limited/),
        expect.stringMatching(/Redis answers again; API calls are limited/),
      ]);
      expect(rejections).toEqual([]);
      // And the app still answers after it all.
      expect((await md(app, w, w.alice, "GET", "/studios/general")).statusCode).toBe(200);
    } finally {
      stop = true;
      await traffic;
      process.off("unhandledRejection", onRejection);
      redis.kill();
    }
  });

  it("every call is served, the log says so once, and limits apply again once Redis is back", async () => {
    const redis = await privateRedis();
    const lines: { msg: string }[] = [];
    const app = await buildApp({
      config: testConfig({
        REDIS_URL: redis.url,
        LOG_LEVEL: "info",
        API_RATE_LIMIT_PER_TOKEN: "2",
        API_RATE_LIMIT_PER_TENANT: "0",
      }),
      prisma: testPrisma(),
      logger: { stream: { write: (l: string) => void lines.push(JSON.parse(l)) } },
    });
    apps.push(app);
    const limiterLines = () => lines.map((l) => l.msg).filter((m) => m.startsWith("rate limiter"));
    try {
      const w = await makeWorld();
      const whoami = () => md(app, w, w.alice, "GET", "/whoami").then((r) => r.statusCode);
      expect([await whoami(), await whoami(), await whoami()]).toEqual([200, 200, 429]);

      redis.kill();
      const served = [];
      for (let i = 0; i < 8; i++) served.push(await whoami());
      expect(served).toEqual(Array(8).fill(200));
      expect(limiterLines()).toEqual([
        expect.stringMatching(/Redis is unavailable; API calls are not limited/),
      ]);

      await redis.start();
      // Redis is asked again a moment after it failed; a fresh Redis counts from zero.
      await waitFor(async () => (await whoami()) === 429, 10_000);
      expect(limiterLines()).toEqual([
        expect.stringMatching(/Redis is unavailable/),
        expect.stringMatching(/Redis answers again; API calls are limited/),
      ]);
    } finally {
      redis.kill();
    }
  });
});
