// Where a prompt can be cut into content blocks so that a provider's prompt cache finds what
// the steps before wrote: the stable part (the task and the log, prompt.ts buildPrompt) is
// cut where buildPrompt says (`cuts`): where the page window began for the step before (the
// bytes before it last as long as the window's start: a step that moves it reads up to
// there), and where the step before ended. Without cuts, at its memory lines, so the previous
// step's end, one line back, is a block boundary of this step's request too. Anthropic's body
// (llm-anthropic-body.ts) and OpenAI's (llm-openai-cache.ts) put their breakpoints on these blocks.

/** A user message's stable part: its first `chars` characters, where its blocks start (ascending), the page window's cut. */
export interface StablePart {
  chars: number;
  cuts?: readonly number[];
  window?: number;
  /** A chunk before the window: where it began before it last moved (OpenAI reads only at a breakpoint). */
  before?: number;
}

/**
 * Which of the stable part's blocks (stableBlocks, by index) end where a cache entry is
 * worth writing or reading: with buildPrompt's cuts, the page window's start, the previous
 * step's end and this step's; without, the last three.
 */
export function markedBlocks(text: string, stable: StablePart): Set<number> {
  const blocks = stableBlocks(text, stable).slice(0, -1);
  if (!stable.cuts) return new Set(blocks.map((_, index) => index).slice(-3));
  const at = new Set([stable.before, stable.window, stable.cuts.at(-1), stable.chars]);
  const marked = new Set<number>();
  let end = 0;
  blocks.forEach((block, index) => {
    end += block.length;
    if (at.has(end)) marked.add(index);
  });
  return marked;
}

/** A newline before a memory line (`N. ` at the start of a line). */
const MEMORY_LINE = /\n(?=\d+\. )/g;

/**
 * `text` in blocks, one a memory line; joined, they are `text` exactly. The cut falls where
 * the next step's text goes on from this one's, so that this step's last block boundary is
 * a boundary of the next step's too: after the newline when lines end with one (the next
 * step appends `N. …\n`), before it when they are joined by one (it appends `\nN. …`).
 * A cut one character off would leave no boundary in common, and no cache hit.
 */
export function memoryBlocks(text: string): string[] {
  const shift = text.endsWith("\n") ? 1 : 0;
  const cuts = [0, ...[...text.matchAll(MEMORY_LINE)].map((m) => m.index + shift), text.length];
  const blocks: string[] = [];
  for (let index = 0; index + 1 < cuts.length; index++) {
    const block = text.slice(cuts[index], cuts[index + 1]);
    if (block) blocks.push(block);
  }
  return blocks;
}

/** A user message's text as blocks: its stable part at its cuts (or memory lines), then the rest whole. */
export function stableBlocks(text: string, stable: StablePart | undefined): string[] {
  if (stable === undefined) return [text];
  const part = text.slice(0, stable.chars);
  const blocks = stable.cuts ? cutAt(part, stable.cuts) : memoryBlocks(part);
  return [...blocks, text.slice(stable.chars)];
}

/** `text` cut at `cuts` (within it, ascending), empty pieces left out. */
function cutAt(text: string, cuts: readonly number[]): string[] {
  const ends = [0, ...cuts.filter((at) => at > 0 && at < text.length), text.length];
  return ends.slice(1).flatMap((end, index) => (end > ends[index]! ? [text.slice(ends[index], end)] : []));
}
