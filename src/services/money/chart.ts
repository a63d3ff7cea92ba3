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

/** A chart's canvas: a laptop's, or a phone's where each label still reads at 11 px. */
export interface ChartSize {
  w: number;
  h: number;
  /** At most this many day labels under the bars. */
  labels: number;
  cls: string;
}
const WIDE: ChartSize = { w: 720, h: 240, labels: 8, cls: "wide" };
const NARROW: ChartSize = { w: 340, h: 230, labels: 4, cls: "narrow" };
const PAD = { right: 12, bottom: 36, left: 60 };
/** Per character of legend text at 11 px, generously: an item never runs into the next. */
const CHAR = 6.5;

/** The axis top: 1, 2, 4, 6 or 8 × 10^n, so each of the four gridlines lands on a round number. */
function niceCeil(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 4, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

const shortDay = (label: string) => {
  const date = new Date(`${label}T00:00:00Z`);
  return Number.isNaN(date.getTime())
    ? label
    : date.toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
};

/**
 * The chart twice, drawn for a wide screen and for a phone, the page's CSS showing the one
 * that fits (public/app.css): a 720-unit chart shrunk to a phone's 340 px had 5 px labels.
 */
export function responsiveChart(barChart: BarChart): string {
  const wide = barChartSvg(barChart, WIDE);
  return wide.startsWith("<svg") ? `${wide}${barChartSvg(barChart, NARROW)}` : wide;
}

interface LegendItem {
  width: number;
  draw: (x: number, y: number) => string;
}

/** The legend's items in rows that fit the canvas, and how tall they make its top. */
function legend(items: LegendItem[], size: ChartSize): { svg: string[]; top: number } {
  const svg: string[] = [];
  let x = PAD.left;
  let row = 0;
  for (const item of items) {
    if (x > PAD.left && x + item.width > size.w - PAD.right) {
      row += 1;
      x = PAD.left;
    }
    svg.push(item.draw(x, 8 + row * 16));
    x += item.width + 14;
  }
  return { svg, top: 28 + (items.length ? row * 16 : 0) };
}

/** What the legend names: each series of a stacked chart, and the marker (drawn, or too far above to draw). */
function legendItems(c: BarChart, drawMarker: BarChart["marker"]): LegendItem[] {
  const items: LegendItem[] = [];
  if (c.series.length > 1)
    for (const s of c.series)
      items.push({
        width: 15 + s.name.length * CHAR,
        draw: (x, y) =>
          `<rect x="${x}" y="${y}" width="10" height="10" fill="${s.color}" rx="2"/><text x="${x + 15}" y="${y + 9}" fill="#1d2330">${escapeHtml(s.name)}</text>`,
      });
  if (c.marker && !drawMarker && c.marker.value > 0) {
    const text = `${c.marker.label}: far above this scale`;
    items.push({
      width: text.length * CHAR,
      draw: (x, y) => `<text x="${x}" y="${y + 9}" fill="#c92a2a">${escapeHtml(text)}</text>`,
    });
  }
  if (drawMarker)
    items.push({
      width: 24 + drawMarker.label.length * CHAR,
      draw: (x, y) =>
        `<line x1="${x}" x2="${x + 18}" y1="${y + 5}" y2="${y + 5}" stroke="#c92a2a" stroke-width="1.5" stroke-dasharray="5 4"/><text x="${x + 24}" y="${y + 9}" fill="#c92a2a">${escapeHtml(drawMarker.label)}</text>`,
    });
  return items;
}

export function barChartSvg(c: BarChart, size: ChartSize = WIDE): string {
  const totals = c.values.map((v) => v.reduce((a, b) => a + b, 0));
  const most = Math.max(0, ...totals);
  if (most <= 0) return `<p class="chart-empty">${escapeHtml(c.empty)}</p>`;
  // The scale shows the data: a budget far above it would flatten every bar to a hairline, so
  // then the budget is only named in the legend, not drawn.
  const drawMarker = c.marker && c.marker.value > 0 && c.marker.value <= most * 2 ? c.marker : undefined;
  const top = Math.max(niceCeil(Math.max(most, drawMarker?.value ?? 0)), c.whole ? 4 : 0);
  const key = legend(legendItems(c, drawMarker), size);
  const W = size.w;
  const H = size.h + key.top - 28;
  const pad = { ...PAD, top: key.top };
  const plotW = W - pad.left - pad.right;
  const plotH = H - pad.top - pad.bottom;
  const slot = plotW / Math.max(1, c.labels.length);
  const barW = Math.max(2, slot * 0.72);
  const y = (v: number) => pad.top + plotH - (v / top) * plotH;
  const out: string[] = [];
  out.push(
    `<svg class="chart ${size.cls}" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="${escapeHtml(c.title)}" xmlns="http://www.w3.org/2000/svg" font-family="inherit" font-size="11">`,
    `<title>${escapeHtml(c.title)}</title>`,
  );
  for (let index = 0; index <= 4; index++) {
    const v = (top * index) / 4;
    const yy = y(v).toFixed(1);
    out.push(
      `<line x1="${pad.left}" x2="${W - pad.right}" y1="${yy}" y2="${yy}" stroke="#e3e7ee"${index === 0 ? ' stroke-width="1.5"' : ""}/>`,
      `<text x="${pad.left - 8}" y="${yy}" dy="4" text-anchor="end" fill="#5f6b7a">${escapeHtml(c.axis(v, top / 4))}</text>`,
    );
  }
  // Counted from the end, so the newest day (today) always has its label and spacing stays even.
  const every = Math.ceil(c.labels.length / size.labels);
  c.labels.forEach((label, i) => {
    const x = pad.left + i * slot + (slot - barW) / 2;
    let base = 0;
    const tip = `${shortDay(label)}: ${c.format(totals[i]!)}${c.series.length > 1 ? ` (${c.series.map((s, j) => `${s.name} ${c.format(c.values[i]![j]!)}`).join(", ")})` : ""}`;
    out.push(`<g><title>${escapeHtml(tip)}</title>`);
    c.series.forEach((s, innerIndex) => {
      const v = c.values[i]![innerIndex]!;
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
      `<rect x="${(pad.left + i * slot).toFixed(1)}" y="${pad.top}" width="${slot.toFixed(1)}" height="${plotH}" fill="transparent"/></g>`,
    );
    if ((c.labels.length - 1 - i) % every === 0)
      out.push(
        `<text x="${(pad.left + i * slot + slot / 2).toFixed(1)}" y="${H - pad.bottom + 16}" text-anchor="middle" fill="#5f6b7a">${escapeHtml(shortDay(label))}</text>`,
      );
  });
  if (drawMarker) {
    // The line spans the plot; its name is in the legend, never over the bars.
    const yy = y(drawMarker.value).toFixed(1);
    out.push(
      `<line x1="${pad.left}" x2="${W - pad.right}" y1="${yy}" y2="${yy}" stroke="#c92a2a" stroke-width="1.5" stroke-dasharray="5 4"/>`,
    );
  }
  out.push(...key.svg);
  out.push("</svg>");
  return out.join("");
}
