// Amounts shown together add up as shown: one precision per table, parts rounded so their
// sum is the total on the page (the usage header said $0.03 over rows of $0.01 + $0.01 + $0.00).
import { describe, expect, it } from "vitest";
import { moneyDigits, usdShares } from "../src/services/money/pricing.ts";
import { monthLine, sliceTable } from "../src/services/pages/usage-views.ts";

const dollars = (shown: string) => Math.round(Number(shown.replace("$", "")) * 10_000);

describe("money shown together", () => {
  it("uses hundredths of a cent for all when any part is under a cent, and the parts sum to the total", () => {
    const shares = usdShares([9_000, 9_000, 8_000]);
    expect(shares).toEqual({ parts: ["$0.0090", "$0.0090", "$0.0080"], total: "$0.0260", digits: 4 });
  });

  it("rounds by largest remainder, so cents add up where each rounded alone would not", () => {
    // 1.4¢ + 1.4¢ + 1.4¢ = 4.2¢: rounded alone 1¢ + 1¢ + 1¢ = 3¢ under a total of 4¢.
    const shares = usdShares([14_000, 14_000, 14_000]);
    expect(shares.total).toBe("$0.04");
    expect(shares.parts.map(dollars).reduce((sum, part) => sum + part, 0)).toBe(dollars(shares.total));
    expect([...shares.parts].sort()).toEqual(["$0.01", "$0.01", "$0.02"]);
  });

  it("adds up for any amounts", () => {
    for (let round = 0; round < 200; round++) {
      const parts = Array.from(
        { length: 1 + (round % 7) },
        (_, i) => ((round * 7919 + i * 104_729) % 90_000) + 10_000,
      );
      const shares = usdShares(parts);
      expect(shares.parts.map(dollars).reduce((sum, part) => sum + part, 0)).toBe(dollars(shares.total));
    }
  });

  it("rounds a total that is more than its rows on its own, in the rows' precision", () => {
    const shares = usdShares([12_000, 13_000], 40_000);
    expect(shares).toEqual({ parts: ["$0.01", "$0.01"], total: "$0.04", digits: 2 });
    expect(moneyDigits([0, 0])).toBe(2);
  });

  it("the usage page's header and tables use the shared precision", () => {
    expect(monthLine(26_000, new Date("2026-12-10T00:00:00Z"), undefined, 4)).toContain("so far: $0.0260");
    const table = sliceTable("By model", "model", [
      { label: "gpt-a", calls: 1, input: 10, cached: 0, output: 1, costMicros: 20_000, unpriced: false },
      { label: "gpt-b", calls: 1, input: 10, cached: 0, output: 1, costMicros: 6_000, unpriced: false },
    ] as Parameters<typeof sliceTable>[2]);
    expect(table).toContain("| $0.0200 |");
    expect(table).toContain("| $0.0060 |");
  });
});
