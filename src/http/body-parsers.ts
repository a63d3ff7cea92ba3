// Request bodies become text in one place, and strictly: bytes that are not UTF-8 are
// refused with a 400, where a lenient decoder would have stored U+FFFD in their place
// without anyone noticing. What the text may contain is the registry's concern
// (src/services/registry/params.ts), which every caller goes through, HTTP or not.
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { AppError, type Issue, ValidationError } from "../lib/errors.ts";

/** The most a request's body may hold (app.ts gives it to Fastify). */
export const BODY_LIMIT = 256 * 1024;
/**
 * A browser form past BODY_LIMIT is still read, up to this, but never acted on: the page
 * shows the person's form again with what fits and the limits named, instead of a bare 413
 * that loses what they wrote (a 340 KB paste into a note).
 */
export const FORM_READ_LIMIT = 1024 * 1024;

export const kb = (bytes: number) => `${Math.ceil(bytes / 1024).toLocaleString("en-US")} KB`;

declare module "fastify" {
  interface FastifyRequest {
    /** The bytes of a form body past BODY_LIMIT, read only to show it again; null for every other body. */
    formOverLimit: number | null;
  }
  interface FastifyContextConfig {
    /** The route shows an over-limit form again itself (routes/pages.ts); every other route refuses it with 413. */
    reshowsOverLimitForms?: boolean;
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function decode(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

function hex(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** `+` is a space and `%XX` a byte; a `%` not followed by two hex digits stays as it is (WHATWG). */
function percentDecode(raw: Buffer): Uint8Array {
  const out = Buffer.allocUnsafe(raw.length);
  let count = 0;
  for (let index = 0; index < raw.length; index++) {
    const b = raw[index]!;
    const hi = b === 0x25 ? hex(raw[index + 1]) : -1;
    const lo = hi >= 0 ? hex(raw[index + 2]) : -1;
    if (lo >= 0) {
      out[count++] = hi * 16 + lo;
      index += 2;
    } else out[count++] = b === 0x2b ? 0x20 : b;
  }
  return out.subarray(0, count);
}

/**
 * `application/x-www-form-urlencoded` as the WHATWG URL standard parses it, except that a
 * name or value that is not UTF-8 is an issue naming the field. A repeated name gives an
 * array; the registry decides whether that param may take several values.
 */
export function parseForm(body: Buffer): Record<string, string | string[]> {
  // No prototype: a field called `__proto__` is just an unknown param.
  const out: Record<string, string | string[]> = Object.create(null);
  const issues: Issue[] = [];
  let start = 0;
  while (start <= body.length) {
    let end = body.indexOf(0x26, start);
    if (end < 0) end = body.length;
    const pair = body.subarray(start, end);
    start = end + 1;
    if (!pair.length) continue;
    const eq = pair.indexOf(0x3d);
    const rawName = percentDecode(eq < 0 ? pair : pair.subarray(0, eq));
    const rawValue = percentDecode(eq < 0 ? Buffer.alloc(0) : pair.subarray(eq + 1));
    const name = decode(rawName);
    const value = decode(rawValue);
    if (name === null || value === null) {
      const shown = name ?? Buffer.from(rawName).toString("utf8");
      issues.push({ field: shown, message: `${name === null ? "its name " : ""}is not valid UTF-8 text` });
      continue;
    }
    const before = out[name];
    out[name] = before === undefined ? value : [...(Array.isArray(before) ? before : [before]), value];
  }
  if (issues.length) throw new ValidationError(issues);
  return out;
}

export default fp(
  async (app: FastifyInstance) => {
    app.decorateRequest("formOverLimit", null);
    app.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "buffer", bodyLimit: FORM_READ_LIMIT },
      (req, body, done) => {
        const bytes = (body as Buffer).length;
        if (bytes > BODY_LIMIT) req.formOverLimit = bytes;
        try {
          done(null, parseForm(body as Buffer));
        } catch (err) {
          done(err as Error);
        }
      },
    );
    // Read past the limit only for the route that shows it again; a login form must never take a megabyte.
    app.addHook("preHandler", async (req) => {
      if (req.formOverLimit !== null && !req.routeOptions.config.reshowsOverLimitForms)
        throw new AppError(413, tooLarge(req.formOverLimit));
    });
    // Fastify's own JSON parser, given text decoded strictly instead of leniently.
    const json = app.getDefaultJsonParser("error", "error");
    app.removeContentTypeParser("application/json");
    app.addContentTypeParser("application/json", { parseAs: "buffer" }, (req, body, done) => {
      const text = decode(body as Buffer);
      if (text === null)
        return done(new ValidationError([{ field: "", message: "the body is not valid UTF-8 text" }]));
      // The default parser answers through `done` and returns nothing: there is no promise to await.
      void json(req, text, done);
    });
  },
  { name: "body-parsers" },
);

/** Names the limit a body went past: what the person can do about it starts there. */
export function tooLarge(bytes: number | null, limit = BODY_LIMIT): string {
  return `${bytes ? `This request sent ${kb(bytes)}; ` : "This request is larger than "}Cadre takes at most ${kb(limit)} at once. Nothing was saved.`;
}
