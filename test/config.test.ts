// The database pool's size: Prisma's rule by default (two connections a core, plus one),
// the operator's number when given, and a clear error for a bad one.
import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../src/config.ts";

describe("DATABASE_POOL_SIZE", () => {
  it("defaults to two connections per core plus one", () => {
    expect(parseConfig({}).DATABASE_POOL_SIZE).toBe(2 * availableParallelism() + 1);
  });

  it("takes the operator's number, and names the variable when it is not one", () => {
    expect(parseConfig({ DATABASE_POOL_SIZE: "12" }).DATABASE_POOL_SIZE).toBe(12);
    expect(() => parseConfig({ DATABASE_POOL_SIZE: "0" })).toThrow(/DATABASE_POOL_SIZE/);
  });
});

describe("login throttle and TRUST_PROXY", () => {
  it("defaults to 10 per account, 30 per address in 15 minutes, trusting only local proxies", () => {
    const c = parseConfig({});
    expect(c.LOGIN_ACCOUNT_MAX_FAILURES).toBe(10);
    expect(c.LOGIN_ADDRESS_MAX_FAILURES).toBe(30);
    expect(c.LOGIN_WINDOW_SECONDS).toBe(900);
    expect(c.TRUST_PROXY).toBe("loopback,linklocal,uniquelocal");
  });

  it("reads true, false and a list of proxies, and names a bad number", () => {
    expect(parseConfig({ TRUST_PROXY: "true" }).TRUST_PROXY).toBe(true);
    expect(parseConfig({ TRUST_PROXY: "false" }).TRUST_PROXY).toBe(false);
    expect(parseConfig({ TRUST_PROXY: "10.0.0.5,10.0.0.6" }).TRUST_PROXY).toBe("10.0.0.5,10.0.0.6");
    expect(() => parseConfig({ LOGIN_WINDOW_SECONDS: "0" })).toThrow(/LOGIN_WINDOW_SECONDS/);
  });
});
