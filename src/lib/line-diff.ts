// A line diff for showing two versions side by side in one block (a tool's pinned definition
// against what its server says now): the longest common subsequence of lines, each line of
// the answer marked kept (" "), removed ("-") or added ("+"), as `diff -u` marks them.

export type DiffLine = { mark: " " | "-" | "+"; text: string };

/** Quadratic in lines: fine for a tool's definition; over `maxLines` each side it gives all-removed, all-added. */
export function lineDiff(before: string, after: string, maxLines = 2000): DiffLine[] {
  const a = before.split("\n");
  const b = after.split("\n");
  if (a.length > maxLines || b.length > maxLines)
    return [
      ...a.map((text) => ({ mark: "-" as const, text })),
      ...b.map((text) => ({ mark: "+" as const, text })),
    ];
  // common[i][j]: length of the LCS of a[i..] and b[j..].
  const common = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      common[i]![j] =
        a[i] === b[j] ? common[i + 1]![j + 1]! + 1 : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ mark: " ", text: a[i]! });
      i++;
      j++;
    } else if (j < b.length && (i === a.length || common[i]![j + 1]! >= common[i + 1]![j]!)) {
      lines.push({ mark: "+", text: b[j]! });
      j++;
    } else {
      lines.push({ mark: "-", text: a[i]! });
      i++;
    }
  }
  return lines;
}

export const diffText = (lines: DiffLine[]) => lines.map((line) => `${line.mark} ${line.text}`).join("\n");
