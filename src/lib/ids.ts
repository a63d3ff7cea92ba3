import { createHash, randomBytes } from "node:crypto";

const ALPHABET = "0123456789abcdefghijkmnpqrstuvwxyz"; // no l/o: ids are read aloud and typed by agents

/** Short random id: 12 chars of a 34-letter alphabet (~61 bits), URL- and prompt-friendly. */
export function newId(length = 12): string {
  const bytes = randomBytes(length);
  let out = "";
  for (const b of bytes) out += ALPHABET[b % ALPHABET.length];
  return out;
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
