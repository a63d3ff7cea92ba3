// Nothing private comes back after logging out: every answer to a signed-in person (or a
// token) says `Cache-Control: no-store`, so neither the back/forward cache nor the HTTP cache
// keeps it. In Chromium (playwright-core, headless): alice reads a studio note, creates an API
// token (its secret on the page), logs out, and presses Back through both pages.
import type { FastifyInstance } from "fastify";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { act, buildTestApp, login, makeWorld, md } from "./helpers/app.ts";
import { launchChromium, listen, logIn, watchErrors } from "./helpers/browser.ts";

let app: FastifyInstance | undefined;
let browser: Browser | undefined;
let baseOf: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  app = await buildTestApp();
  baseOf = await listen(app);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const PRIVATE = "Quarterly numbers: only the studio may read this";

/** Back one page; a page that may not be kept has nothing to show (an error page, or a fresh load). */
async function back(page: Page): Promise<string> {
  await page.goBack({ waitUntil: "load" }).catch(() => undefined);
  // A page that is not kept is loaded again, and may redirect (to the login form) meanwhile.
  for (let i = 0; ; i++) {
    try {
      await page.waitForLoadState("load");
      return await page.content();
    } catch (err) {
      if (i >= 20) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe("Cache-Control: no-store", () => {
  it("on pages, actions, redirects and errors for a session or a token; not on the login page", async () => {
    const w = await makeWorld();
    const alice = await login(app!, w, w.alice);
    for (const res of [
      await alice.get("/studios/general"),
      await alice.get("/studios/general.md"),
      await alice.get("/studios/nowhere"),
      await alice.post("/studios/general/actions/create_note", { text: "hello" }),
      await md(app!, w, w.alice, "GET", "/whoami"),
      await md(app!, w, w.alice, "POST", "/studios/general/actions/create_note", { text: "hi" }),
    ])
      expect(res.headers["cache-control"], `${res.statusCode} ${res.body.slice(0, 60)}`).toBe("no-store");
    const anonymous = await app!.inject({ method: "GET", url: "/login", headers: { host: w.host } });
    expect(anonymous.headers["cache-control"]).toBeUndefined();
  });

  it("log out, press Back: neither the new token nor the private note is shown", async () => {
    const w = await makeWorld();
    const note = await act(w, w.alice, "/studios/general", "create_note", {
      title: "Numbers",
      text: PRIVATE,
    });
    const ctx = await browser!.newContext();
    const page = await ctx.newPage();
    const errors = watchErrors(page);
    try {
      const base = baseOf(w);
      await logIn(page, base, w.alice);
      await page.goto(`${base}${note.location}`);
      expect(await page.content()).toContain(PRIVATE);

      await page.goto(`${base}/u/alice/settings/tokens`);
      const create = page.locator('form[data-action="create_api_token"]');
      await create.getByLabel("Name").fill("laptop script");
      await create.getByRole("button").click();
      const secret = ((await page.locator(".secret code").textContent()) ?? "").trim();
      expect(secret).toMatch(/^cadre_/);

      await page.getByRole("button", { name: "Log out" }).click();
      await page.waitForURL((u) => u.pathname === "/login");

      // Back to the page that showed the secret, then to the note, then past them.
      const seen = [await back(page), await back(page), await back(page)];
      for (const html of seen) {
        expect(html).not.toContain(secret);
        expect(html).not.toContain(PRIVATE);
      }
      expect(errors).toEqual([]);
    } finally {
      await ctx.close();
    }
  });
});
