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
  format: (value: number) => string;
  /** Axis tick text, given the tick step (so a $0.50 step reads $0, $0.50, $1.00). */
  axis: (value: number, step: number) => string;
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
function niceCeil(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const multiple of [1, 2, 4, 6, 8, 10]) if (multiple * power >= value) return multiple * power;
  return 10 * power;
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
  draw: (left: number, top: number) => string;
}

/** The legend's items in rows that fit the canvas, and how tall they make its top. */
function legend(items: LegendItem[], size: ChartSize): { svg: string[]; top: number } {
  const svg: string[] = [];
  let left = PAD.left;
  let row = 0;
  for (const item of items) {
    if (left > PAD.left && left + item.width > size.w - PAD.right) {
      row += 1;
      left = PAD.left;
    }
    svg.push(item.draw(left, 8 + row * 16));
    left += item.width + 14;
  }
  return { svg, top: 28 + (items.length ? row * 16 : 0) };
}

/** What the legend names: each series of a stacked chart, and the marker (drawn, or too far above to draw). */
function legendItems(chart: BarChart, drawMarker: BarChart["marker"]): LegendItem[] {
  const items: LegendItem[] = [];
  if (chart.series.length > 1)
    for (const series of chart.series)
      items.push({
        width: 15 + series.name.length * CHAR,
        draw: (left, top) =>
          `<rect x="${left}" y="${top}" width="10" height="10" fill="${series.color}" rx="2"/><text x="${left + 15}" y="${top + 9}" fill="#1d2330">${escapeHtml(series.name)}</text>`,
      });
  if (chart.marker && !drawMarker && chart.marker.value > 0) {
    const text = `${chart.marker.label}: far above this scale`;
    items.push({
      width: text.length * CHAR,
      draw: (left, top) => `<text x="${left}" y="${top + 9}" fill="#c92a2a">${escapeHtml(text)}</text>`,
    });
  }
  if (drawMarker)
    items.push({
      width: 24 + drawMarker.label.length * CHAR,
      draw: (left, top) =>
        `<line x1="${left}" x2="${left + 18}" y1="${top + 5}" y2="${top + 5}" stroke="#c92a2a" stroke-width="1.5" stroke-dasharray="5 4"/><text x="${left + 24}" y="${top + 9}" fill="#c92a2a">${escapeHtml(drawMarker.label)}</text>`,
    });
  return items;
}

export function barChartSvg(chart: BarChart, size: ChartSize = WIDE): string {
  const totals = chart.values.map((v) => v.reduce((a, b) => a + b, 0));
  const most = Math.max(0, ...totals);
  if (most <= 0) return `<p class="chart-empty">${escapeHtml(chart.empty)}</p>`;
  // The scale shows the data: a budget far above it would flatten every bar to a hairline, so
  // then the budget is only named in the legend, not drawn.
  const drawMarker =
    chart.marker && chart.marker.value > 0 && chart.marker.value <= most * 2 ? chart.marker : undefined;
  const top = Math.max(niceCeil(Math.max(most, drawMarker?.value ?? 0)), chart.whole ? 4 : 0);
  const key = legend(legendItems(chart, drawMarker), size);
  const width = size.w;
  const height = size.h + key.top - 28;
  const pad = { ...PAD, top: key.top };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const slot = plotW / Math.max(1, chart.labels.length);
  const barW = Math.max(2, slot * 0.72);
  const yFor = (value: number) => pad.top + plotH - (value / top) * plotH;
  const out: string[] = [];
  out.push(
    `<svg class="chart ${size.cls}" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="${escapeHtml(chart.title)}" xmlns="http://www.w3.org/2000/svg" font-family="inherit" font-size="11">`,
    `<title>${escapeHtml(chart.title)}</title>`,
  );
  for (let index = 0; index <= 4; index++) {
    const tickValue = (top * index) / 4;
    const tickY = yFor(tickValue).toFixed(1);
    out.push(
      `<line x1="${pad.left}" x2="${width - pad.right}" y1="${tickY}" y2="${tickY}" stroke="#e3e7ee"${index === 0 ? ' stroke-width="1.5"' : ""}/>`,
      `<text x="${pad.left - 8}" y="${tickY}" dy="4" text-anchor="end" fill="#5f6b7a">${escapeHtml(chart.axis(tickValue, top / 4))}</text>`,
    );
  }
  // Counted from the end, so the newest day (today) always has its label and spacing stays even.
  const every = Math.ceil(chart.labels.length / size.labels);
  chart.labels.forEach((label, barIndex) => {
    const barX = pad.left + barIndex * slot + (slot - barW) / 2;
    let base = 0;
    const tip = `${shortDay(label)}: ${chart.format(totals[barIndex]!)}${chart.series.length > 1 ? ` (${chart.series.map((s, j) => `${s.name} ${chart.format(chart.values[barIndex]![j]!)}`).join(", ")})` : ""}`;
    out.push(`<g><title>${escapeHtml(tip)}</title>`);
    chart.series.forEach((series, innerIndex) => {
      const value = chart.values[barIndex]![innerIndex]!;
      if (value <= 0) return;
      const barTop = yFor(base + value);
      const barHeight = Math.max(1, yFor(base) - barTop);
      out.push(
        `<rect x="${barX.toFixed(1)}" y="${barTop.toFixed(1)}" width="${barW.toFixed(1)}" height="${barHeight.toFixed(1)}" fill="${series.color}" rx="1.5"/>`,
      );
      base += value;
    });
    // An invisible full-height target, so a tiny bar still shows its tooltip.
    out.push(
      `<rect x="${(pad.left + barIndex * slot).toFixed(1)}" y="${pad.top}" width="${slot.toFixed(1)}" height="${plotH}" fill="transparent"/></g>`,
    );
    if ((chart.labels.length - 1 - barIndex) % every === 0)
      out.push(
        `<text x="${(pad.left + barIndex * slot + slot / 2).toFixed(1)}" y="${height - pad.bottom + 16}" text-anchor="middle" fill="#5f6b7a">${escapeHtml(shortDay(label))}</text>`,
      );
  });
  if (drawMarker) {
    // The line spans the plot; its name is in the legend, never over the bars.
    const markerY = yFor(drawMarker.value).toFixed(1);
    out.push(
      `<line x1="${pad.left}" x2="${width - pad.right}" y1="${markerY}" y2="${markerY}" stroke="#c92a2a" stroke-width="1.5" stroke-dasharray="5 4"/>`,
    );
  }
  out.push(...key.svg);
  out.push("</svg>");
  return out.join("");
}
