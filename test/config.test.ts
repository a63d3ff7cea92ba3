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
