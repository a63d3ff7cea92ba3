// Failed logins are throttled per account and per client address, in PostgreSQL, so two
// web processes share the count; a lock always ends, and a success resets the account.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressKey, tidyLoginThrottles } from "../src/services/login-throttle.ts";
import {
  buildTestApp,
  csrfOf,
  makeWorld,
  PASSWORD,
  testConfig,
  testPrisma,
  type World,
} from "./helpers/app.ts";

const db = testPrisma();
const WINDOW = 60;
const SETTINGS = {
  LOGIN_ACCOUNT_MAX_FAILURES: "3",
  LOGIN_ADDRESS_MAX_FAILURES: "5",
  LOGIN_WINDOW_SECONDS: String(WINDOW),
  LOGIN_ADDRESS_MAX_LOCK_SECONDS: String(10 * WINDOW),
};
let app: FastifyInstance;
let twin: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp(SETTINGS);
  twin = await buildTestApp(SETTINGS);
});
afterAll(async () => Promise.all([app.close(), twin.close()]));

let lastIp = 0;
/** A client address of its own (TEST-NET-3, not a trusted proxy): the address limit stays out of the way. */
const freshIp = () => `203.0.113.${++lastIp}`;

interface Try {
  ip?: string;
  accept?: string;
  via?: FastifyInstance;
  headers?: Record<string, string>;
}

/** One login through the real form: GET /login for its CSRF cookie and token, then the POST. */
async function tryLogin(w: World, email: string, password: string, o: Try = {}) {
  const via = o.via ?? app;
  const remoteAddress = o.ip ?? freshIp();
  const page = await via.inject({ method: "GET", url: "/login", headers: { host: w.host }, remoteAddress });
  return via.inject({
    method: "POST",
    url: "/login",
    remoteAddress,
    headers: { host: w.host, ...(o.accept && { accept: o.accept }), ...o.headers },
    cookies: Object.fromEntries(page.cookies.map((c) => [c.name, c.value])),
    payload: { email, password, _csrf: csrfOf(page)! },
  });
}

const wrong = (w: World, o: Try = {}) => tryLogin(w, w.alice.email, "wrong", o);
const right = (w: World, o: Try = {}) => tryLogin(w, w.alice.email, PASSWORD, o);
const retryAfter = (res: { headers: Record<string, unknown> }) => Number(res.headers["retry-after"]);

/** Moves a workspace's login windows into the past, as if `seconds` had gone by. */
const elapse = (w: World, seconds: number) =>
  db.$executeRaw`UPDATE login_throttles SET window_start = window_start - make_interval(secs => ${seconds}::float8)
    WHERE tenant_id = ${w.tenant.id}`;

describe("per account", () => {
  it("the Nth failure answers 429 with Retry-After, in the form; then even the right password waits", async () => {
    const w = await makeWorld("thr");
    expect((await wrong(w)).statusCode).toBe(401);
    expect((await wrong(w)).statusCode).toBe(401);
    const third = await wrong(w);
    expect(third.statusCode).toBe(429);
    expect(retryAfter(third)).toBeGreaterThan(WINDOW - 5);
    expect(retryAfter(third)).toBeLessThanOrEqual(WINDOW);
    expect(third.headers["content-type"]).toContain("text/html");
    expect(third.body).toContain("Too many failed logins: try again in");
    expect(third.body).toContain('name="password"');
    const refused = await right(w);
    expect(refused.statusCode).toBe(429);
    expect(refused.cookies.find((c) => c.name === "cadre_session")).toBeUndefined();
    // Other people in the workspace are not affected.
    expect((await tryLogin(w, w.bob.email, PASSWORD)).statusCode).toBe(303);
  });

  it("answers markdown clients in markdown, with Retry-After", async () => {
    const w = await makeWorld("thr");
    const md = { accept: "text/markdown" };
    const first = await wrong(w, md);
    expect(first.statusCode).toBe(401);
    expect(first.headers["content-type"]).toContain("text/markdown");
    expect(first.body).toContain("Wrong email or password.");
    await wrong(w, md);
    const locked = await wrong(w, md);
    expect(locked.statusCode).toBe(429);
    expect(locked.headers["content-type"]).toContain("text/markdown");
    expect(locked.body).toMatch(
      /^# Error 429: Too many requests\n\nToo many failed logins: try again in \d+ seconds\./,
    );
    expect(retryAfter(locked)).toBeGreaterThan(0);
  });

  it("keeps no email as typed (people type passwords into the wrong field)", async () => {
    const w = await makeWorld("thr");
    await tryLogin(w, "correct horse battery", "oops");
    await wrong(w);
    const keys = await db.loginThrottle.findMany({ where: { tenantId: w.tenant.id, scope: "account" } });
    expect(keys).toHaveLength(2);
    for (const { key } of keys) expect(key).toMatch(/^[0-9a-f]{64}$/);
  });

  it("a success resets the account's count, not the address's", async () => {
    const w = await makeWorld("thr");
    const ip = freshIp();
    await wrong(w, { ip });
    await wrong(w, { ip });
    expect((await right(w, { ip })).statusCode).toBe(303);
    expect((await wrong(w)).statusCode).toBe(401);
    expect((await wrong(w)).statusCode).toBe(401);
    const rows = await db.loginThrottle.findMany({ where: { tenantId: w.tenant.id, key: ip } });
    expect(rows.map((r) => r.failures)).toEqual([2]);
  });

  it("unlocks when the window is over, and an account's lock never grows past one window", async () => {
    const w = await makeWorld("thr");
    for (let i = 0; i < 3; i++) await wrong(w);
    expect((await right(w)).statusCode).toBe(429);
    await elapse(w, WINDOW);
    // Locked again at once, twice over: still no longer than one window.
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 2; i++) expect((await wrong(w)).statusCode).toBe(401);
      const again = await wrong(w);
      expect(again.statusCode).toBe(429);
      expect(retryAfter(again)).toBeLessThanOrEqual(WINDOW);
      await elapse(w, WINDOW);
    }
    expect((await right(w)).statusCode).toBe(303);
  });

  it("loses no count to parallel guesses: only the limit's worth are answered 401", async () => {
    const w = await makeWorld("thr");
    const results = await Promise.all(Array.from({ length: 12 }, () => wrong(w)));
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes.filter((c) => c === 401)).toHaveLength(2);
    expect(codes.filter((c) => c === 429)).toHaveLength(10);
  });

  it("is shared by two web processes on the same database", async () => {
    const w = await makeWorld("thr");
    expect((await wrong(w, { via: app })).statusCode).toBe(401);
    expect((await wrong(w, { via: twin })).statusCode).toBe(401);
    expect((await wrong(w, { via: app })).statusCode).toBe(429);
    expect((await right(w, { via: twin })).statusCode).toBe(429);
  });
});

describe("per address", () => {
  it("the Nth failure from one address answers 429, whichever accounts it tries", async () => {
    const w = await makeWorld("thr");
    const ip = freshIp();
    const people = [w.alice, w.bob, w.carol, w.alice, w.bob];
    const codes = [];
    for (const p of people) codes.push((await tryLogin(w, p.email, "wrong", { ip })).statusCode);
    expect(codes).toEqual([401, 401, 401, 401, 429]);
    const refused = await tryLogin(w, w.carol.email, PASSWORD, { ip });
    expect(refused.statusCode).toBe(429);
    expect(retryAfter(refused)).toBeGreaterThan(0);
    // From elsewhere, carol (never locked) still gets in.
    expect((await tryLogin(w, w.carol.email, PASSWORD)).statusCode).toBe(303);
    // Another workspace counts its own.
    const other = await makeWorld("thr");
    expect((await tryLogin(other, other.carol.email, PASSWORD, { ip })).statusCode).toBe(303);
  });

  it("backs off: a window filled again right after a lock lasts twice as long", async () => {
    const w = await makeWorld("thr");
    const ip = freshIp();
    const fill = async () => {
      const codes = [];
      for (let i = 0; i < 5; i++) codes.push(await tryLogin(w, `nobody${i}@example.test`, "x", { ip }));
      return codes.at(-1)!;
    };
    const first = await fill();
    expect(first.statusCode).toBe(429);
    expect(retryAfter(first)).toBeLessThanOrEqual(WINDOW);
    await elapse(w, WINDOW);
    const second = await fill();
    expect(second.statusCode).toBe(429);
    expect(retryAfter(second)).toBeGreaterThan(WINDOW);
    expect(retryAfter(second)).toBeLessThanOrEqual(2 * WINDOW);
    // After a quiet window past the lock the backoff is forgotten.
    await elapse(w, 4 * WINDOW);
    expect((await tryLogin(w, w.bob.email, PASSWORD, { ip })).statusCode).toBe(303);
    const row = await db.loginThrottle.findFirstOrThrow({ where: { tenantId: w.tenant.id, key: ip } });
    expect(row.strikes).toBe(0);
  });

  it("believes X-Forwarded-For only from a trusted proxy", async () => {
    const w = await makeWorld("thr");
    const spoof = { "x-forwarded-for": "198.51.100.1" };
    await wrong(w, { ip: "203.0.113.250", headers: spoof });
    await wrong(w, { ip: "127.0.0.1", headers: { "x-forwarded-for": "198.51.100.2" } });
    const keys = await db.loginThrottle.findMany({
      where: { tenantId: w.tenant.id, scope: "address" },
      orderBy: { key: "asc" },
    });
    expect(keys.map((k) => k.key)).toEqual(["198.51.100.2", "203.0.113.250"]);
  });

  it("counts an IPv6 client by its /64", () => {
    expect(addressKey("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(addressKey("2001:0db8:0001:0002:ffff:0:0:9")).toBe("2001:db8:1:2::/64");
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(addressKey("192.0.2.7")).toBe("192.0.2.7");
  });
});

describe("tidying", () => {
  it("deletes rows that no longer change anything, and keeps the rest", async () => {
    const w = await makeWorld("thr");
    for (let i = 0; i < 3; i++) await wrong(w);
    await tryLogin(w, w.bob.email, "wrong");
    const rows = () => db.loginThrottle.count({ where: { tenantId: w.tenant.id } });
    const config = testConfig(SETTINGS);
    // Two accounts, four addresses.
    expect(await rows()).toBe(6);
    await tidyLoginThrottles(db, config);
    expect(await rows()).toBe(6);
    await elapse(w, 2 * WINDOW + 1);
    await tidyLoginThrottles(db, config);
    expect(await rows()).toBe(0);
  });
});
