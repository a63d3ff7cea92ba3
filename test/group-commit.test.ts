// The group commit's own rules, with a write function that records what it was given
// (the ledger's and the steps' real statements are tested in money-ledger.test.ts): what
// goes together, what waits, and how a failed batch fails.
import { describe, expect, it } from "vitest";
import { groupCommit } from "../src/db/group-commit.ts";

class RolledBack extends Error {}

interface Item {
  key: string;
  n: number;
  bad?: boolean;
}

/** A group commit over a write that takes a tick, fails any batch holding a bad item, and records every batch. */
function harness(o: { max?: number; failure?: () => Error } = {}) {
  const batches: number[][] = [];
  const submit = groupCommit<Item, string>({
    key: (t) => t.key,
    max: o.max ?? 10,
    rolledBack: (e) => e instanceof RolledBack,
    async write(items) {
      batches.push(items.map((t) => t.n));
      await new Promise((r) => setTimeout(r, 5));
      if (items.some((t) => t.bad)) throw (o.failure ?? (() => new RolledBack("bad item")))();
      return items.map((t) => `ok ${t.n}`);
    },
  });
  return { batches, submit };
}

const item = (n: number, key = `k${n}`, bad = false): Item => ({ key, n, bad });

describe("group commit", () => {
  it("writes a lone item at once, and what arrives meanwhile as the next batch", async () => {
    const { batches, submit } = harness();
    const results = await Promise.all([1, 2, 3, 4].map((n) => submit(item(n))));
    expect(results).toEqual(["ok 1", "ok 2", "ok 3", "ok 4"]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
    expect(await submit(item(5))).toBe("ok 5");
    expect(batches.at(-1)).toEqual([5]);
  });

  it("never puts two items of one key in a batch, and keeps each key's order", async () => {
    const { batches, submit } = harness();
    await Promise.all([
      submit(item(0)),
      submit(item(1, "a")),
      submit(item(2, "a")),
      submit(item(3, "b")),
      submit(item(4, "a")),
      submit(item(5, "c")),
    ]);
    expect(batches).toEqual([[0], [1, 3, 5], [2], [4]]);
  });

  it("holds at most `max` items a batch", async () => {
    const { batches, submit } = harness({ max: 3 });
    await Promise.all(Array.from({ length: 8 }, (_, n) => submit(item(n))));
    expect(batches).toEqual([[0], [1, 2, 3], [4, 5, 6], [7]]);
  });

  it("a batch that was rolled back is written again item by item: a bad item fails alone", async () => {
    const { batches, submit } = harness();
    const settled = await Promise.allSettled([0, 1, 2, 3].map((n) => submit(item(n, `k${n}`, n === 2))));
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(RolledBack);
    expect(batches).toEqual([[0], [1, 2, 3], [1], [2], [3]]);
  });

  it("a batch that may have committed (a lost connection) fails whole, and is not written twice", async () => {
    const { batches, submit } = harness({ failure: () => new Error("Connection terminated") });
    const settled = await Promise.allSettled([0, 1, 2].map((n) => submit(item(n, `k${n}`, n === 2))));
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "rejected"]);
    expect(batches).toEqual([[0], [1, 2]]);
    // The next batch goes out as usual.
    expect(await submit(item(9))).toBe("ok 9");
  });
});
