// Where a prompt can be cut into content blocks so that a provider's prompt cache finds what
// the step before wrote: the stable part (the task and the memory, prompt.ts buildPrompt) is
// cut at its memory lines, so the previous step's end, one line back, is a block boundary of
// this step's request too. Anthropic's body (llm-anthropic-body.ts) and OpenAI's
// (llm-openai-cache.ts) put their breakpoints on these blocks.

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

/** A user message's text as blocks: its first `stableChars` at memory lines, then the rest whole. */
export function stableBlocks(text: string, stableChars: number | undefined): string[] {
  if (stableChars === undefined) return [text];
  return [...memoryBlocks(text.slice(0, stableChars)), text.slice(stableChars)];
}
