// Limits named before they bite (issue 30, item 10): every text field whose schema has a
// maximum carries it as `maxlength` with a line naming it, and a body past the server's cap
// shows the person's form again with what fits and the limits named, never a bare 413.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BODY_LIMIT, FORM_READ_LIMIT } from "../src/http/body-parsers.ts";
import { actions } from "../src/services/catalog/catalog.ts";
import { actionForm } from "../src/services/registry/html.ts";
import { fields } from "../src/services/registry/params.ts";
import { buildTestApp, login, makeWorld, testPrisma, type World } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
let w: World;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("fl");
});
afterAll(async () => app.close());

const notes = () => testPrisma().note.count({ where: { tenantId: w.tenant.id } });
/** The text of the textarea called `name` in a page. */
const textareaOf = (html: string, name: string) =>
  new RegExp(`<textarea [^>]*name="${name}"[^>]*>([^<]*)</textarea>`).exec(html)?.[1];

describe("limits in the form", () => {
  it("every text param with a maximum in the catalog is a field with that maxlength (secrets aside)", () => {
    let limited = 0;
    for (const a of actions) {
      const html = actionForm(a, { path: "/x", csrf: "c", only: fields(a.params).map((f) => f.name) });
      for (const f of fields(a.params)) {
        if (!f.maxLength || f.secret || f.type !== "string") continue;
        limited += 1;
        expect(html, `${a.name}.${f.name}`).toMatch(
          new RegExp(`name="${f.name}"[^>]* maxlength="${f.maxLength}"`),
        );
      }
    }
    // The sweep saw the catalog's text fields, not an empty list.
    expect(limited).toBeGreaterThan(40);
  });

  it("the note form says its limits: maxlength, and a line the page script counts against", async () => {
    const b = await login(app, w, w.alice);
    const html = (await b.get("/studios/general")).body;
    const text = /<textarea id="([^"]+)" name="text"[^>]*>/.exec(html);
    expect(text?.[0]).toContain('maxlength="20000"');
    expect(text?.[0]).toContain(`aria-describedby="${text?.[1]}-count"`);
    expect(html).toContain(
      `<small class="count" id="${text?.[1]}-count" data-count-for="${text?.[1]}" data-max="20000">Up to 20,000 characters</small>`,
    );
    expect(html).toMatch(/name="title" value=""[^>]* maxlength="200"/);
    expect(html).toContain('<script src="/assets/forms.js" defer></script>');
    const script = await app.inject({ method: "GET", url: "/assets/forms.js", headers: { host: w.host } });
    expect(script.statusCode).toBe(200);
  });
});

describe("a body past the server's cap", () => {
  // Regression (issue 30): a 340 KB note got a bare "Too large" page and the text was lost.
  it("a browser's 340 KB note: its form again, the text cut at 20,000 with the limits named; nothing saved", async () => {
    const b = await login(app, w, w.alice);
    const text = `Start. ${"0123456789".repeat(34_000)}`;
    const res = await b.post("/studios/general", { _action: "create_note", title: "Huge", text });
    expect(res.statusCode).toBe(413);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    // The page is long (it holds the 20,000 characters): matched, not printed, when it fails.
    const alert = /<div class="form-errors alert" role="alert">([^<]*)<\/div>/.exec(res.body)?.[1];
    expect(alert).toMatch(
      /^This request sent 33\d KB; Cadre takes at most 256 KB at once\. Nothing was saved\. What fits is below, each field cut at its own limit\.$/,
    );
    expect(issuesOf(res.body).text).toBe(
      `${text.length.toLocaleString("en-US")} characters sent; it holds at most 20,000. The first 20,000 are below; nothing was saved.`,
    );
    expect(textareaOf(res.body, "text") === text.slice(0, 20_000)).toBe(true);
    expect(/name="title" value="Huge"/.test(res.body)).toBe(true);
    expect(await notes()).toBe(0);
  });

  it("any other client hears 413 naming the limit; a form past the read limit too; nothing saved", async () => {
    const big = "x".repeat(BODY_LIMIT + 10);
    const asMarkdown = await app.inject({
      method: "POST",
      url: "/studios/general/actions/create_note",
      headers: {
        host: w.host,
        authorization: `Bearer ${w.alice.token}`,
        accept: "text/markdown",
        "content-type": "application/x-www-form-urlencoded",
      },
      payload: new URLSearchParams({ text: big }).toString(),
    });
    expect(asMarkdown.statusCode).toBe(413);
    expect(asMarkdown.body).toContain("Cadre takes at most 256 KB at once. Nothing was saved.");
    const json = await app.inject({
      method: "POST",
      url: "/studios/general/actions/create_note",
      headers: { host: w.host, authorization: `Bearer ${w.alice.token}`, accept: "text/markdown" },
      payload: { text: big },
    });
    expect(json.statusCode).toBe(413);
    expect(json.body).toContain("This request is larger than Cadre takes at most 256 KB");
    const b = await login(app, w, w.alice);
    const huge = await b.post("/studios/general", {
      _action: "create_note",
      text: "y".repeat(FORM_READ_LIMIT),
    });
    expect(huge.statusCode).toBe(413);
    expect(huge.body).toContain("at most 1,024 KB");
    expect(await notes()).toBe(0);
  });

  it("only the page route reads a form past the cap: a login form that big is refused unread", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/login",
      headers: { host: w.host, "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ email: w.alice.email, password: "p".repeat(BODY_LIMIT) }).toString(),
    });
    expect(res.statusCode).toBe(413);
    expect(res.body).toContain("Cadre takes at most 256 KB");
  });
});
