// A conservative count of the tokens a text costs a model, in one pass over its characters.
// A real tokenizer costs ~0.1 ms per kilobyte, per model family, on every step; this costs a
// few microseconds, and never counts fewer tokens than o200k (GPT-4o and later) or cl100k
// (GPT-4, and close to Llama 3's) on the texts in test/token-estimate.test.ts: prose, ids,
// paths, JSON, base64, digits, CJK, emoji, Cyrillic, Arabic, Hindi. On English prose it counts
// 1.7–2× too many, so a prompt held to a budget by it is held to the budget by the provider too.

const VOWEL = new Uint8Array(128);
for (const vowel of "aeiouyAEIOUY") VOWEL[vowel.charCodeAt(0)] = 1;

/** Random letters (hex, keys) pass the word rule often enough to be under-counted by up to ~20%; this covers it. */
const SAFETY = 1.3;

const isUpper = (code: number) => code >= 65 && code <= 90;

function letterRunTokens(letters: number, vowels: number, beyondHex: boolean): number {
  // A word as people write it (a third of it vowels, a letter past f) is a token, two if
  // long; a run of letters from an id, a key or a hash is a token per two letters.
  if (beyondHex && vowels * 3 >= letters && letters <= 12) return letters <= 6 ? 1 : 2;
  return Math.ceil((letters + 1) / 2);
}

function otherCharTokens(code: number): number {
  if (code === 32) return 0; // a space joins the word after it
  if (code < 0x800) return 1; // ASCII punctuation, and two-byte scripts (Latin, Cyrillic, Arabic…)
  if (code >= 0xd800 && code <= 0xdfff) return 2; // each half of an emoji or rare character
  return 1.5; // CJK, Indic and the rest of the basic plane
}

// One loop and no closure: it runs over every prompt part a few times a step, and under tsx
// an inner function is also renamed (esbuild's __name, a defineProperty) on every call.
export function estimateTokens(text: string): number {
  let tokens = 0;
  let letters = 0;
  let vowels = 0;
  let beyondHex = false;
  let digits = 0;
  // A run of letters or of digits ends where another kind of character starts (the two
  // never run at once), and a capital after a small letter starts a word (camelCase).
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    const lower = code >= 97 && code <= 122;
    const upper = !lower && isUpper(code);
    const digit = code >= 48 && code <= 57;
    if (digits && !digit) {
      tokens += Math.ceil(digits / 3); // digits go in threes
      digits = 0;
    } else if (letters && (digit || !(lower || upper) || (upper && !isUpper(text.charCodeAt(index - 1))))) {
      tokens += letterRunTokens(letters, vowels, beyondHex);
      letters = 0;
      vowels = 0;
      beyondHex = false;
    }
    if (lower || upper) {
      letters++;
      vowels += VOWEL[code]!;
      beyondHex ||= lower ? code > 102 : code > 70;
    } else if (digit) digits++;
    else tokens += otherCharTokens(code);
  }
  if (letters) tokens += letterRunTokens(letters, vowels, beyondHex);
  if (digits) tokens += Math.ceil(digits / 3);
  return Math.ceil(tokens * SAFETY);
}

/** The longest start of `text` (cut at a character) that costs at most `tokens`. */
export function prefixWithin(text: string, tokens: number): string {
  if (tokens <= 0) return "";
  const total = estimateTokens(text);
  if (total <= tokens) return text;
  let cut = Math.floor((text.length * tokens) / total);
  // A surrogate pair is not cut in half: half an emoji is text Postgres and models refuse.
  const whole = (count: number) =>
    count > 0 && (text.charCodeAt(count - 1) & 0xfc00) === 0xd800 ? count - 1 : count;
  cut = whole(cut);
  while (cut > 0 && estimateTokens(text.slice(0, cut)) > tokens) cut = whole(Math.floor(cut * 0.9));
  return text.slice(0, cut);
}
