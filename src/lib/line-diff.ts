// A line diff for showing two versions in one block (a tool's pinned definition against what
// its server says now; an agent's settings against the version before): the longest common
// subsequence of lines, each line of the answer marked kept (" "), removed ("-") or added
// ("+"), as `diff -u` marks them. The common start and end are trimmed first, so a change in
// the middle of a long text costs only its middle.

export type DiffLine = { mark: " " | "-" | "+"; text: string };

// A text of 10,000 one-character lines would be 10^8 cells: past this, the changed middle
// shows as all removed then all added, which is still true.
const MAX_CELLS = 4_000_000;

/** The lines of `after` against those of `before`, each marked. */
export function lineDiff(before: string, after: string): DiffLine[] {
  // An empty text has no lines (a first version, a tool with no description).
  const a = before === "" ? [] : before.split("\n");
  const b = after === "" ? [] : after.split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end])
    end++;
  const kept = (lines: string[]) => lines.map((text): DiffLine => ({ mark: " ", text }));
  return [
    ...kept(a.slice(0, start)),
    ...middle(a.slice(start, a.length - end), b.slice(start, b.length - end)),
    ...kept(a.slice(a.length - end)),
  ];
}

function middle(was: string[], now: string[]): DiffLine[] {
  const removed = (text: string): DiffLine => ({ mark: "-", text });
  const added = (text: string): DiffLine => ({ mark: "+", text });
  if (!was.length || !now.length || was.length * now.length > MAX_CELLS)
    return [...was.map(removed), ...now.map(added)];
  // common[i][j]: the length of the longest common subsequence of was[i..] and now[j..].
  const common = Array.from({ length: was.length + 1 }, () => new Uint32Array(now.length + 1));
  for (let i = was.length - 1; i >= 0; i--)
    for (let j = now.length - 1; j >= 0; j--)
      common[i]![j] =
        was[i] === now[j] ? common[i + 1]![j + 1]! + 1 : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < was.length && j < now.length) {
    if (was[i] === now[j]) {
      out.push({ mark: " ", text: was[i]! });
      i++;
      j++;
    } else if (common[i + 1]![j]! >= common[i]![j + 1]!) out.push(removed(was[i++]!));
    else out.push(added(now[j++]!));
  }
  return [...out, ...was.slice(i).map(removed), ...now.slice(j).map(added)];
}

/** How many lines the diff adds and removes. */
export function lineCounts(diff: DiffLine[]): { added: number; removed: number } {
  return {
    added: diff.filter((line) => line.mark === "+").length,
    removed: diff.filter((line) => line.mark === "-").length,
  };
}

export const diffText = (lines: DiffLine[]) => lines.map((line) => `${line.mark} ${line.text}`).join("\n");
