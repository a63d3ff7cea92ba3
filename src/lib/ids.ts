import { createHash, randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghijkmnpqrstuvwxyz"; // no l/o: ids are read aloud and typed by agents

// Random bytes are drawn a pool at a time: an agent step makes a dozen ids, and one
// randomBytes call per id showed in the worker's profile (a syscall each, here).
const POOL_SIZE = 4096;
let pool = Buffer.alloc(0);
let next = 0;
// The largest multiple of the alphabet's size in a byte: bytes above it are skipped, so
// every letter is equally likely.
const UNBIASED = 256 - (256 % ALPHABET.length);

/** Short random id: 12 chars of a 34-letter alphabet (~61 bits), URL- and prompt-friendly. */
export function newId(length = 12): string {
  let out = "";
  while (out.length < length) {
    if (next >= pool.length) {
      pool = randomBytes(POOL_SIZE);
      next = 0;
    }
    const byte = pool[next++]!;
    if (byte < UNBIASED) out += ALPHABET[byte % ALPHABET.length];
  }
  return out;
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
