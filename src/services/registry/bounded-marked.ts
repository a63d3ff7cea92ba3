// Every parse of user markdown (the HTML renderer, mention extraction) goes through
// here, because `marked` has no limits of its own:
// - it recurses once per level of nesting (a blockquote in a blockquote, a list in a
//   list item, emphasis in emphasis, a link's text): 2,000 `>` overflowed the stack
//   and took a note's page down;
// - it reads a nested blockquote again when a lazy line continues it, so a thread quoted
//   the way mail clients quote it, each reply one `>` shallower, cost 2^depth: twenty
//   lines of it took 15 s.
// Nesting deeper than MAX_NESTING is read as text, the deeper markers shown as typed, the
// way a plain-text mail reader shows a long thread's `>>>>>`; nothing the author wrote is
// lost. Within the bound, the output is marked's own.
import {
  type Lexer,
  Marked,
  type MarkedExtension,
  type Token,
  Tokenizer,
  type TokenizerObject,
  type Tokens,
} from "marked";

/** markdown-it's CommonMark preset stops at the same depth (its `maxNesting`). */
export const MAX_NESTING = 20;
/**
 * Blockquotes and lists one parse may build before it starts again without any (its `>`
 * and `-` then read as typed): far more than a 20,000-character note holds, and a bound
 * on any other way marked may find to read the same text over and over.
 */
export const MAX_CONTAINERS = 5000;

class TooManyContainers extends Error {}

type Kind = "block" | "inline";
interface Parse {
  block: number;
  inline: number;
  containers: number;
  /** Blockquotes already read in this parse, by depth and source length. */
  quotes: Map<string, { src: string; token: Tokens.Blockquote | undefined }[]>;
}
const parses = new WeakMap<Lexer, Parse>();

function parseOf(tokenizer: Tokenizer): Parse {
  const parse = parses.get(tokenizer.lexer) ?? { block: 0, inline: 0, containers: 0, quotes: new Map() };
  parses.set(tokenizer.lexer, parse);
  return parse;
}

/**
 * The tokenizer `original`, counting how deep the parse is inside tokens of its kind.
 * Past the bound it declines with `deeper`'s answer (undefined, not `false`, which would
 * fall back to the original), and marked reads the line or the delimiter as text.
 * Declining depends on depth alone: marked re-reads a blockquote it already built, at
 * the same depth, and expects a blockquote again.
 */
function bounded<A extends [string, ...unknown[]], R>(
  kind: Kind,
  original: (this: Tokenizer, ...args: A) => R,
  deeper: (src: string) => undefined = () => undefined,
) {
  return function (this: Tokenizer, ...args: A): R | undefined {
    const parse = parseOf(this);
    if (parse[kind] >= MAX_NESTING) return deeper(args[0]);
    if (kind === "block" && parse.containers >= MAX_CONTAINERS) throw new TooManyContainers();
    parse[kind]++;
    try {
      const token = original.apply(this, args);
      if (token && kind === "block") parse.containers++;
      return token;
    } finally {
      parse[kind]--;
    }
  };
}

/**
 * marked's blockquote, read once per depth and source. Reading a nested quote again with
 * its lazy continuation reads the quote nested in that one from the same source as the
 * first time, so remembering it turns 2^depth into depth. The token is shared, which
 * marked allows: nothing changes a blockquote token once built. Sources are found by
 * length, then compared, so a long text is never hashed again at every position.
 */
function blockquote(this: Tokenizer, src: string): Tokens.Blockquote | undefined {
  if (!QUOTE_START.test(src)) return undefined;
  const { quotes, block } = parseOf(this);
  const key = `${block}:${src.length}`;
  const seen = quotes.get(key) ?? [];
  const hit = seen.find((q) => q.src === src);
  if (hit) return hit.token;
  const token = Tokenizer.prototype.blockquote.call(this, src);
  quotes.set(key, [...seen, { src, token }]);
  return token;
}
const QUOTE_START = /^ {0,3}>/;

/**
 * A whole run of delimiters as one text token: declined one character at a time, marked
 * would look for each one's closer again, quadratic in the run. (marked keeps whatever
 * token a tokenizer returns; the types only know emphasis, hence the cast.)
 */
function run(pattern: RegExp) {
  return (src: string): undefined => {
    const raw = pattern.exec(src)?.[0];
    return raw ? ({ type: "text", raw, text: raw } as never) : undefined;
  };
}

const base = Tokenizer.prototype;
const inline: TokenizerObject = {
  emStrong: bounded("inline", base.emStrong, run(/^(?:\*+|_+)/)),
  del: bounded("inline", base.del, run(/^~+/)),
  link: bounded("inline", base.link),
  reflink: bounded("inline", base.reflink),
};
const nested: TokenizerObject = {
  ...inline,
  blockquote: bounded("block", blockquote),
  list: bounded("block", base.list),
};
const flat: TokenizerObject = { ...inline, blockquote: () => undefined, list: () => undefined };

/** `marked` configured by `options`, within the bounds above. */
export function boundedMarked(options: MarkedExtension) {
  const full = new Marked(options, { tokenizer: nested });
  const plain = new Marked(options, { tokenizer: flat });
  function attempt<T>(read: (instance: Marked) => T): T {
    try {
      return read(full);
    } catch (err) {
      if (err instanceof TooManyContainers) return read(plain);
      throw err;
    }
  }
  return {
    lex: (markdown: string): Token[] => attempt((m) => m.lexer(markdown)),
    parse: (markdown: string): string => attempt((m) => m.parse(markdown, { async: false })),
  };
}
