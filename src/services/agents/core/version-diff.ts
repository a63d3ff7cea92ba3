// What changed between two versions of an agent's settings (versions.ts): in words, one line
// per setting, and as a line diff of the settings written out. Pure: the version pages and the
// writer of a version call these with two snapshots.
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
  const { added, removed } = lineCounts(diffLines(before.split("\n"), after.split("\n")));
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

export interface DiffLine {
  kind: "same" | "added" | "removed";
  text: string;
}

// A prompt of 10,000 one-character lines would be 10^8 cells: past this, the changed middle
// shows as all removed then all added, which is still true.
const MAX_CELLS = 4_000_000;

/** A line diff (longest common subsequence), the common start and end trimmed first. */
export function diffLines(before: string[], after: string[]): DiffLine[] {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) start++;
  let end = 0;
  while (
    end < before.length - start &&
    end < after.length - start &&
    before[before.length - 1 - end] === after[after.length - 1 - end]
  )
    end++;
  const was = before.slice(start, before.length - end);
  const now = after.slice(start, after.length - end);
  const same = (lines: string[]): DiffLine[] => lines.map((text) => ({ kind: "same", text }));
  return [...same(before.slice(0, start)), ...middle(was, now), ...same(before.slice(before.length - end))];
}

function middle(was: string[], now: string[]): DiffLine[] {
  const removed = (text: string): DiffLine => ({ kind: "removed", text });
  const added = (text: string): DiffLine => ({ kind: "added", text });
  if (!was.length || !now.length || was.length * now.length > MAX_CELLS)
    return [...was.map(removed), ...now.map(added)];
  // lengths[i][j]: the longest common subsequence of was[i..] and now[j..].
  const lengths = Array.from({ length: was.length + 1 }, () => new Uint32Array(now.length + 1));
  for (let i = was.length - 1; i >= 0; i--)
    for (let j = now.length - 1; j >= 0; j--)
      lengths[i]![j] =
        was[i] === now[j] ? lengths[i + 1]![j + 1]! + 1 : Math.max(lengths[i + 1]![j]!, lengths[i]![j + 1]!);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < was.length && j < now.length) {
    if (was[i] === now[j]) {
      out.push({ kind: "same", text: was[i]! });
      i++;
      j++;
    } else if (lengths[i + 1]![j]! >= lengths[i]![j + 1]!) out.push(removed(was[i++]!));
    else out.push(added(now[j++]!));
  }
  return [...out, ...was.slice(i).map(removed), ...now.slice(j).map(added)];
}

export function lineCounts(diff: DiffLine[]): { added: number; removed: number } {
  return {
    added: diff.filter((line) => line.kind === "added").length,
    removed: diff.filter((line) => line.kind === "removed").length,
  };
}

/** A diff as `diff` text: `+` added, `-` removed, a space for a line both have. */
export function diffText(diff: DiffLine[]): string {
  const sign = { same: " ", added: "+", removed: "-" } as const;
  return diff.map((line) => `${sign[line.kind]} ${line.text}`).join("\n");
}
