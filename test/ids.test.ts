// Ids come from a pool of random bytes: still the right length and alphabet, unique,
// and every letter equally likely (bytes past the alphabet's last multiple are skipped).
import { describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";

describe("newId", () => {
  it("gives ids of the asked length in the read-aloud alphabet, unique across pool refills", () => {
    const ids = Array.from({ length: 20_000 }, () => newId());
    expect(ids.every((id) => /^[0-9a-kmnp-z]{12}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(newId(6)).toHaveLength(6);
  });

  it("uses every letter about equally often", () => {
    const counts = new Map<string, number>();
    for (const ch of Array.from({ length: 20_000 }, () => newId()).join(""))
      counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(34);
    const mean = (20_000 * 12) / 34;
    // With `byte % 34` on every byte the first 18 letters came out ~12 % more often.
    for (const n of counts.values()) expect(Math.abs(n - mean) / mean).toBeLessThan(0.05);
  });
});
