// What a browser may do with our answers (plugins/security-headers.ts): every HTML answer,
// errors and the login page included, carries the strict Content-Security-Policy; every
// answer says nosniff and keeps its Referer home; a markdown answer needs no policy. A link
// out of the workspace in rendered markdown opens with rel="noopener noreferrer nofollow"
// and shows its whole destination; a path a browser would read as another host is no link.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, login, makeWorld, md, type World } from "./helpers/app.ts";

let app: FastifyInstance;
let w: World;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("hdr");
});
afterAll(() => app?.close());

const DIRECTIVES = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
];

/** The policy's directives, one each. */
const directivesOf = (header: unknown) =>
  String(header)
    .split(";")
    .map((d) => d.trim());

describe("the answers' security headers", () => {
  it("every HTML answer carries the strict policy: a page, the login form, a 404, a refused form", async () => {
    const browser = await login(app, w, w.alice);
    const page = await browser.get("/studios/general");
    const loginPage = await app.inject({ method: "GET", url: "/login", headers: { host: w.host } });
    const missing = await browser.get("/studios/nowhere");
    const refused = await app.inject({
      method: "POST",
      url: "/studios/general/actions/create_note",
      headers: { host: w.host },
      payload: { text: "x" },
    });
    expect([page.statusCode, loginPage.statusCode, missing.statusCode]).toEqual([200, 200, 404]);
    for (const res of [page, loginPage, missing, refused]) {
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
      expect(directivesOf(res.headers["content-security-policy"])).toEqual(
        expect.arrayContaining(DIRECTIVES),
      );
      // Nothing loosens it: no inline script, no eval, nothing from another host.
      expect(res.headers["content-security-policy"]).not.toMatch(/unsafe-inline|unsafe-eval|\*|https?:/);
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["referrer-policy"]).toBe("same-origin");
      expect(res.headers["x-frame-options"]).toBe("DENY");
      // The pages keep no inline script or style that the policy would have to allow.
      expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\sstyle="|\son[a-z]+="/i);
    }
  });

  it("a markdown answer and a script say nosniff and same-origin, and carry no page policy", async () => {
    const page = await md(app, w, w.alice, "GET", "/studios/general");
    expect(page.headers["content-type"]).toMatch(/^text\/markdown/);
    const script = await app.inject({ method: "GET", url: "/assets/live.js", headers: { host: w.host } });
    expect(script.statusCode).toBe(200);
    for (const res of [page, script]) {
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.headers["referrer-policy"]).toBe("same-origin");
      expect(res.headers["content-security-policy"]).toBeUndefined();
    }
  });

  it("a link out shows its destination, query included, with rel noopener noreferrer nofollow; `/\\host` is no link", async () => {
    const text = [
      "Read [the report](https://reports.example.net/q3?token=abc123&who=alice).",
      "Also https://docs.example.org/guide and [our studio](/studios/general).",
      "And [a trick](/\\evil.example.com/x).",
    ].join("\n\n");
    const made = await md(app, w, w.alice, "POST", "/studios/general/actions/create_note", {
      title: "Links",
      text,
    });
    expect(made.statusCode).toBe(201);
    const html = (await (await login(app, w, w.alice)).get(made.headers.location as string)).body;
    expect(html).toContain(
      '<a href="https://reports.example.net/q3?token=abc123&amp;who=alice" rel="noopener noreferrer nofollow" class="external">the report</a> <span class="link-destination">(https://reports.example.net/q3?token=abc123&amp;who=alice)</span>',
    );
    // An address written out says where it goes already: not twice.
    expect(html).toContain(
      '<a href="https://docs.example.org/guide" rel="noopener noreferrer nofollow" class="external">https://docs.example.org/guide</a> and',
    );
    expect(html).toContain('<a href="/studios/general">our studio</a>');
    expect(html).not.toContain('evil.example.com/x"');
    expect(html).toContain("a trick");
    // The markdown keeps the link as written: an agent reads the whole destination there.
    const markdown = (await md(app, w, w.alice, "GET", made.headers.location as string)).body;
    expect(markdown).toContain("[the report](https://reports.example.net/q3?token=abc123&who=alice)");
  });
});
