// What changed between two versions of an agent's settings (versions.ts): in words, one line
// per setting, and as a line diff of the settings written out. Pure: the version pages and the
// writer of a version call these with two snapshots.
import { lineCounts, lineDiff } from "../../../lib/line-diff.ts";
import type { Rule } from "./settings.ts";

export type Snapshot = Record<string, unknown>;

/** A setting's key as a person reads it: `cost_limit_usd` → "Cost limit (USD)". */
export function settingLabel(key: string): string {
  const words = key.split("_");
  const unit = words.at(-1);
  const units: Record<string, string> = { usd: "USD", hours: "hours", seconds: "seconds" };
  const named = unit && units[unit] && words.length > 1 ? words.slice(0, -1) : words;
  const head = named.join(" ");
  const label = head.charAt(0).toUpperCase() + head.slice(1);
  return named === words ? label : `${label} (${units[unit!]})`;
}

const shown = (value: unknown): string =>
  value === undefined || value === null || value === "" ? "(none)" : String(value);

/** A rule in one line: its name, what it looks at, what it decides. */
export function ruleLine(rule: Rule): string {
  const patterns = Object.entries(rule.params ?? {}).map(([param, pattern]) => `${param} ~ ${pattern}`);
  const where = rule.studio ? ` in ${rule.studio}` : "";
  return `“${rule.name}”: ${rule.action}${where}${patterns.length ? ` when ${patterns.join(", ")}` : ""} → ${rule.decision}`;
}

function listWords(label: string, before: unknown[], after: unknown[]): string {
  const was = before.map(String);
  const now = after.map(String);
  const added = now.filter((item) => !was.includes(item));
  const removed = was.filter((item) => !now.includes(item));
  const parts = [
    ...(added.length ? [`added ${added.join(", ")}`] : []),
    ...(removed.length ? [`removed ${removed.join(", ")}`] : []),
  ];
  return `${label}: ${parts.length ? parts.join("; ") : "reordered"}`;
}

function rulesWords(before: Rule[], after: Rule[]): string {
  const byName = (rules: Rule[]) => new Map(rules.map((rule) => [rule.name, ruleLine(rule)]));
  const was = byName(before);
  const now = byName(after);
  const parts = [
    ...[...now.keys()].filter((name) => !was.has(name)).map((name) => `added ${now.get(name)}`),
    ...[...was.keys()].filter((name) => !now.has(name)).map((name) => `removed “${name}”`),
    ...[...now.keys()]
      .filter((name) => was.has(name) && was.get(name) !== now.get(name))
      .map((name) => `changed ${now.get(name)}`),
  ];
  return `Rules: ${parts.length ? parts.join("; ") : "reordered"}`;
}

function textWords(label: string, before: string, after: string): string {
  if (!before.includes("\n") && !after.includes("\n") && before.length <= 80 && after.length <= 80)
    return `${label}: ${before ? `“${before}”` : "(empty)"} → ${after ? `“${after}”` : "(empty)"}`;
  const { added, removed } = lineCounts(lineDiff(before, after));
  return `${label}: rewritten (${added} line${added === 1 ? "" : "s"} added, ${removed} removed)`;
}

/** What changed from `before` to `after`, in words: one line per setting that differs, in the settings' order. */
export function changeWords(before: Snapshot, after: Snapshot): string[] {
  const words: string[] = [];
  for (const key of Object.keys(after)) {
    const was = before[key];
    const now = after[key];
    if (JSON.stringify(was) === JSON.stringify(now)) continue;
    const label = settingLabel(key);
    if (key === "rules") words.push(rulesWords((was as Rule[]) ?? [], (now as Rule[]) ?? []));
    else if (Array.isArray(now) || Array.isArray(was))
      words.push(listWords(label, (was as unknown[]) ?? [], (now as unknown[]) ?? []));
    else if (typeof now === "string" && (typeof was === "string" || was === undefined) && key !== "model")
      words.push(textWords(label, (was as string | undefined) ?? "", now));
    else words.push(`${label}: ${shown(was)} → ${shown(now)}`);
  }
  return words;
}

/** The settings written out, a line each (a text's lines indented under it), for the diff. */
export function settingsLines(settings: Snapshot): string[] {
  const lines: string[] = [];
  for (const [key, value] of Object.entries(settings)) {
    if (key === "rules") {
      const rules = (value as Rule[]) ?? [];
      lines.push(`rules:${rules.length ? "" : " (none)"}`);
      rules.forEach((rule, index) => {
        lines.push(`  ${index + 1}. ${ruleLine(rule)}`);
      });
    } else if (Array.isArray(value)) lines.push(`${key}: ${value.length ? value.join(", ") : "(none)"}`);
    else if (typeof value === "string" && value.includes("\n"))
      lines.push(`${key}:`, ...value.split("\n").map((line) => `  ${line}`));
    else lines.push(`${key}: ${shown(value)}`);
  }
  return lines;
}
