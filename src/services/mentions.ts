// @handle mentions in markdown, ignoring code spans and code blocks: `@scout` in
// backticks is talking about the agent, not to it.
import type { Token, Tokens } from "marked";
import { boundedMarked } from "./registry/bounded-marked.ts";

// The renderer's bounds: any text a page can show, this can read.
const marked = boundedMarked({ gfm: true });
const MENTION = /(?<![\w@.])@([a-z0-9][a-z0-9_-]{1,31})\b/gi;

export function parseMentions(markdown: string): string[] {
  const found = new Set<string>();
  const walk = (tokens: Token[]) => {
    for (const token of tokens) {
      if (token.type === "code" || token.type === "codespan") continue;
      if (token.type === "table") {
        // Cells are not in `tokens`: walk the header and every row.
        const table = token as Tokens.Table;
        for (const cell of [...table.header, ...table.rows.flat()]) walk(cell.tokens);
        continue;
      }
      const children = (token as { tokens?: Token[] }).tokens;
      const items = (token as { items?: Token[] }).items;
      if (children?.length) walk(children);
      else if (items?.length) walk(items);
      else if (token.type === "text" || token.type === "escape")
        for (const match of token.raw.matchAll(MENTION)) found.add(match[1]!.toLowerCase());
    }
  };
  walk(marked.lex(markdown));
  return [...found];
}
