// Input that must never reach the database, and how a refusal names the field: shared
// by test/input-sweep.test.ts (every action of the catalog) and test/input-encoding.test.ts.
import type { FastifyInstance } from "fastify";
import type { Person, World } from "./app.ts";

export interface BadText {
  label: string;
  value: string;
  /** Part of the message the refusal gives for it. */
  message: string;
}

const NUL = "must not contain NUL characters";
const SURROGATE = "unpaired UTF-16 surrogate";
const NOT_UTF8 = "is not valid UTF-8 text";

/** Strings a JSON body (or an agent's tool call) can carry. */
export const BAD_STRINGS: BadText[] = [
  { label: "NUL", value: "a\u0000b", message: NUL },
  { label: "lone high surrogate", value: "\ud800x", message: SURROGATE },
  { label: "lone low surrogate", value: "x\udc00", message: SURROGATE },
];

/** Percent-encoded form values: a NUL, and bytes that are not UTF-8. */
export const BAD_FORM_VALUES: BadText[] = [
  { label: "%00", value: "a%00b", message: NUL },
  { label: "byte FF", value: "%FF", message: NOT_UTF8 },
  { label: "a surrogate in UTF-8 form", value: "%ED%A0%80", message: NOT_UTF8 },
  { label: "an overlong slash", value: "%C0%AF", message: NOT_UTF8 },
  { label: "a cut-off euro sign", value: "x%E2%82", message: NOT_UTF8 },
];

export const LIST_FOR_SCALAR = { json: "must be a single value, not a list", form: "sent more than once" };

/** The issues of a 400 by field: `- \`field\`: message` in markdown, `<strong>field</strong>: message` in HTML. */
export function issuesOf(body: string): Record<string, string> {
  const md = [...body.matchAll(/^- `([^`]*)`: (.*)$/gm)];
  // HTML: a message at its form field, or an item of an error page's list.
  const atField = [...body.matchAll(/id="f-[^"]*?-([a-z0-9_]+)-error">([^<]*)</g)];
  const listed = [...body.matchAll(/data-field="([^"]*)"><strong>[^<]*<\/strong>: ([^<]*)</g)];
  return Object.fromEntries([...md, ...atField, ...listed].map((m) => [m[1]!, m[2]!]));
}

/** A form body: `fields` encoded as a browser would, then `name=raw` appended exactly as given. */
export function rawForm(fields: Record<string, string>, name: string, raw: string): string {
  const rest = new URLSearchParams(fields).toString();
  return `${rest ? `${rest}&` : ""}${encodeURIComponent(name)}=${raw}`;
}

/** A POST with a token (markdown) or a browser session (HTML, with its CSRF token in the body). */
export function postRaw(
  app: FastifyInstance,
  world: World,
  who: Person | { cookies: Record<string, string> },
  url: string,
  contentType: "application/json" | "application/x-www-form-urlencoded",
  payload: string | Buffer,
) {
  const session = "cookies" in who;
  return app.inject({
    method: "POST",
    url,
    headers: {
      host: world.host,
      "content-type": contentType,
      ...(session ? {} : { accept: "text/markdown", authorization: `Bearer ${who.token}` }),
    },
    ...(session && { cookies: { ...who.cookies } }),
    payload,
  });
}
