// Two master-key versions for the keys:reencrypt tests (test/secret-rotation-*.test.ts): the
// old one alone, both (the newest encrypts), and the new one alone (proves nothing old is left).
import { randomBytes } from "node:crypto";
import { parseMasterKeys } from "../../src/lib/secrets.ts";

const a = randomBytes(32).toString("base64");
const b = randomBytes(32).toString("base64");
export const v1 = parseMasterKeys(`1:${a}`);
export const both = parseMasterKeys(`1:${a}, 2:${b}`);
export const v2 = parseMasterKeys(`2:${b}`);

/** A stored ciphertext column and its version, as `open` takes them. */
export const sealedOf = (ciphertext: Uint8Array, keyVersion: number) => ({
  ciphertext: Buffer.from(ciphertext),
  keyVersion,
});
