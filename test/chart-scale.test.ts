// The usage charts at their edges: tiny spend under a large budget, token counts of one, and
// nothing at all. Each chart must show its data, not the scale of something else.
import { describe, expect, it } from "vitest";
import { barChartSvg } from "../src/services/money/chart.ts";

const base = {
  title: "Spend per day",
  labels: ["2026-11-01", "2026-11-02", "2026-11-03"],
  series: [{ name: "cost", color: "#3b5bdb" }],
  format: (v: number) => `$${v}`,
  axis: (v: number) => String(v),
  empty: "Nothing spent yet.",
};

/** The heights of the bars drawn, in SVG units. */
const heights = (svg: string) => [...svg.matchAll(/<rect[^>]* height="([\d.]+)"/g)].map((m) => Number(m[1]));
const ticks = (svg: string) =>
  [...svg.matchAll(/<text[^>]*text-anchor="end"[^>]*>([^<]*)</g)].map((m) => m[1]);

describe("usage charts", () => {
  it("scales to the data when the budget is far above it, and names the budget instead of drawing it", () => {
    const svg = barChartSvg({
      ...base,
      values: [[0.002], [0], [0.004]],
      marker: { value: 3.33, label: "daily budget ($3.33/day)" },
    });
    expect(Math.max(...heights(svg))).toBeGreaterThan(100);
    expect(svg).toContain("daily budget ($3.33/day): far above this scale");
    expect(svg).not.toContain('stroke-dasharray="5 4"/><line');
  });

  it("draws the budget line when it is near the data", () => {
    const svg = barChartSvg({
      ...base,
      values: [[2], [1], [3]],
      marker: { value: 4, label: "daily budget" },
    });
    expect(svg).toContain('stroke="#c92a2a" stroke-width="1.5" stroke-dasharray="5 4"');
    expect(svg).not.toContain("far above");
  });

  it("counts in whole numbers: a single token never makes an axis of 1, 1, 1, 0, 0", () => {
    const svg = barChartSvg({ ...base, values: [[1], [0], [0]], whole: true, axis: (v) => v.toFixed(0) });
    expect(ticks(svg)).toEqual(["0", "1", "2", "3", "4"]);
  });

  it("says there is nothing yet instead of drawing empty axes", () => {
    expect(barChartSvg({ ...base, values: [[0], [0], [0]] })).toBe(
      '<p class="chart-empty">Nothing spent yet.</p>',
    );
  });
});
