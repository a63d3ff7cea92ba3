// Server-rendered SVG charts: no script, no CDN, readable without JavaScript, and the
// same numbers are in the markdown table beside them.
import { escapeHtml } from "../registry/html.ts";

export interface Series {
  name: string;
  color: string;
}

export interface BarChart {
  title: string;
  /** One label per bar (a day, `2026-11-03`). */
  labels: string[];
  series: Series[];
  /** values[bar][series], stacked bottom-up in series order. */
  values: number[][];
  format: (v: number) => string;
  /** Axis tick text, given the tick step (so a $0.50 step reads $0, $0.50, $1.00). */
  axis: (v: number, step: number) => string;
  /** A dashed horizontal line (a daily budget), if any. */
  marker?: { value: number; label: string };
  /** Counts (tokens): the axis never splits one into quarters ("1, 1, 1, 0, 0"). */
  whole?: boolean;
  /** Said instead of a chart when every value is zero. */
  empty: string;
}

const W = 720;
const H = 240;
const PAD = { top: 28, right: 16, bottom: 36, left: 64 };

/** The axis top: 1, 2, 4, 6 or 8 × 10^n, so each of the four gridlines lands on a round number. */
function niceCeil(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 4, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const shortDay = (label: string) => {
  const d = new Date(`${label}T00:00:00Z`);
  return Number.isNaN(d.getTime())
    ? label
    : d.toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
};

export function barChartSvg(c: BarChart): string {
  const totals = c.values.map((v) => v.reduce((a, b) => a + b, 0));
  const most = Math.max(0, ...totals);
  if (most <= 0) return `<p class="chart-empty">${escapeHtml(c.empty)}</p>`;
  // The scale shows the data: a budget far above it would flatten every bar to a hairline, so
  // then the budget is only named in the legend, not drawn.
  const drawMarker = c.marker && c.marker.value > 0 && c.marker.value <= most * 2 ? c.marker : undefined;
  const top = Math.max(niceCeil(Math.max(most, drawMarker?.value ?? 0)), c.whole ? 4 : 0);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, c.labels.length);
  const barW = Math.max(2, slot * 0.72);
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const out: string[] = [];
  out.push(
    `<svg class="chart" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="${escapeHtml(c.title)}" xmlns="http://www.w3.org/2000/svg" font-family="inherit" font-size="11">`,
    `<title>${escapeHtml(c.title)}</title>`,
  );
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    const yy = y(v).toFixed(1);
    out.push(
      `<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${yy}" y2="${yy}" stroke="#e3e7ee"${i === 0 ? ' stroke-width="1.5"' : ""}/>`,
      `<text x="${PAD.left - 8}" y="${yy}" dy="4" text-anchor="end" fill="#5f6b7a">${escapeHtml(c.axis(v, top / 4))}</text>`,
    );
  }
  // Counted from the end, so the newest day (today) always has its label and spacing stays even.
  const every = Math.ceil(c.labels.length / 8);
  c.labels.forEach((label, i) => {
    const x = PAD.left + i * slot + (slot - barW) / 2;
    let base = 0;
    const tip = `${shortDay(label)}: ${c.format(totals[i]!)}${c.series.length > 1 ? ` (${c.series.map((s, j) => `${s.name} ${c.format(c.values[i]![j]!)}`).join(", ")})` : ""}`;
    out.push(`<g><title>${escapeHtml(tip)}</title>`);
    c.series.forEach((s, j) => {
      const v = c.values[i]![j]!;
      if (v <= 0) return;
      const y1 = y(base + v);
      const h = Math.max(1, y(base) - y1);
      out.push(
        `<rect x="${x.toFixed(1)}" y="${y1.toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}" fill="${s.color}" rx="1.5"/>`,
      );
      base += v;
    });
    // An invisible full-height target, so a tiny bar still shows its tooltip.
    out.push(
      `<rect x="${(PAD.left + i * slot).toFixed(1)}" y="${PAD.top}" width="${slot.toFixed(1)}" height="${plotH}" fill="transparent"/></g>`,
    );
    if ((c.labels.length - 1 - i) % every === 0)
      out.push(
        `<text x="${(PAD.left + i * slot + slot / 2).toFixed(1)}" y="${H - PAD.bottom + 16}" text-anchor="middle" fill="#5f6b7a">${escapeHtml(shortDay(label))}</text>`,
      );
  });
  let legendX = PAD.left;
  if (c.series.length > 1)
    for (const s of c.series) {
      out.push(
        `<rect x="${legendX}" y="8" width="10" height="10" fill="${s.color}" rx="2"/>`,
        `<text x="${legendX + 15}" y="17" fill="#1d2330">${escapeHtml(s.name)}</text>`,
      );
      legendX += 40 + s.name.length * 6.5;
    }
  if (c.marker && !drawMarker && c.marker.value > 0)
    out.push(
      `<text x="${legendX}" y="17" fill="#c92a2a">${escapeHtml(c.marker.label)}: far above this scale</text>`,
    );
  if (drawMarker) {
    // The line spans the plot; its name goes in the legend row, never over the bars.
    const yy = y(drawMarker.value).toFixed(1);
    out.push(
      `<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${yy}" y2="${yy}" stroke="#c92a2a" stroke-width="1.5" stroke-dasharray="5 4"/>`,
      `<line x1="${legendX}" x2="${legendX + 18}" y1="13" y2="13" stroke="#c92a2a" stroke-width="1.5" stroke-dasharray="5 4"/>`,
      `<text x="${legendX + 24}" y="17" fill="#c92a2a">${escapeHtml(drawMarker.label)}</text>`,
    );
  }
  out.push("</svg>");
  return out.join("");
}
