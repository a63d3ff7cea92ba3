// The Content-Security-Policy, enforced by a real Chromium on real served pages: markup
// injected into a page (an inline script, an image and a fetch to another host, which a
// receiver we run would see) runs and loads nothing, and the browser reports each refusal;
// meanwhile the pages themselves work under it: a form posts, a live page shows an agent's
// reply without a reload (live.js over SSE), a Copy button copies, the usage page draws. A
// link the agent wrote opens nothing silently: it carries rel="noopener noreferrer nofollow"
// and shows its whole destination, query included, before a click.
import type { ConsoleMessage, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { respondScript } from "./helpers/agent-scripts.ts";
import { makeAgent } from "./helpers/agents.ts";
import { makeWorld } from "./helpers/app.ts";
import { logIn, watchErrors } from "./helpers/browser.ts";
import { browserWithAgents } from "./helpers/browser-suite.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

const suite = browserWithAgents("browser-csp");

// Another host than the app's: anything the page loads from it arrives here.
let outside: Receiver;
beforeAll(async () => {
  outside = await startReceiver("127.0.0.2");
});
afterAll(() => outside?.close());

/** What the browser refused on the policy's account, as its console says it. */
function watchRefusals(page: Page): string[] {
  const refused: string[] = [];
  page.on("console", (m: ConsoleMessage) => {
    if (m.type() === "error" && /Content Security Policy/i.test(m.text())) refused.push(m.text());
  });
  return refused;
}

/** Polls the page from outside (no script of ours runs in it) until `check` holds. */
async function until(page: Page, check: string, timeoutMs = 15_000) {
  const end = Date.now() + timeoutMs;
  while (!(await page.evaluate(check))) {
    if (Date.now() > end) throw new Error("until: timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the Content-Security-Policy in a browser", () => {
  it("an injected inline script, image and fetch to another host: none runs or loads, each is reported", async () => {
    const w = await makeWorld("csp");
    const context = await suite.browser.newContext();
    const page = await context.newPage();
    const errors = watchErrors(page);
    const base = suite.baseOf(w);
    await logIn(page, base, w.alice);
    await page.goto(`${base}/studios/general`);
    const origin = new URL(outside.url).origin;
    // As a string: the test's types know no DOM; it runs in the page as written.
    await page.evaluate(`(() => {
      const from = ${JSON.stringify(origin)};
      window.__violations = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.__violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI }),
      );
      const script = document.createElement("script");
      script.textContent = "window.__injected = true";
      document.body.append(script);
      const image = document.createElement("img");
      image.src = from + "/x.png";
      document.body.append(image);
      void fetch(from + "/fetched").catch(() => undefined);
    })()`);
    // The browser reports each refusal; what it refused never left it.
    await until(page, "window.__violations.length >= 3");
    const violations = (await page.evaluate("window.__violations")) as {
      directive: string;
      blocked: string;
    }[];
    expect(violations).toEqual(
      expect.arrayContaining([
        { directive: "script-src-elem", blocked: "inline" },
        { directive: "img-src", blocked: `${origin}/x.png` },
        { directive: "connect-src", blocked: `${origin}/fetched` },
      ]),
    );
    expect(await page.evaluate("window.__injected")).toBeUndefined();
    expect(outside.hits).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("the pages work under it: a form, a live reply with the agent's link, a Copy button, the usage page", async () => {
    const w = await makeWorld("csp");
    await makeAgent(w, w.alice);
    const leak = `${new URL(outside.url).origin}/report?key=s3cret-in-the-query`;
    suite.env.llm.setScript(respondScript(() => `Here is [the report](${leak}).`));
    const context = await suite.browser.newContext();
    const page = await context.newPage();
    const errors = watchErrors(page);
    const refused = watchRefusals(page);
    const base = suite.baseOf(w);
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    await logIn(page, base, w.alice);

    // A form posts (form-action 'self'), and the note's page updates itself (live.js, SSE).
    await page.goto(`${base}/studios/general`);
    await page.evaluate("window.__notReloaded = true");
    const form = page.locator('form[data-action="create_note"]');
    await form.locator('[name="title"]').fill("Numbers");
    await form.locator('[name="text"]').fill("Where is the report, @scout?");
    await form.getByRole("button").click();
    await page.waitForURL(/\/studios\/general\/notes\/\w+$/);
    await page.evaluate("window.__notReloaded = true");
    const link = page.locator("article.content a.external", { hasText: "the report" });
    await link.waitFor({ timeout: 20_000 });
    expect(await page.evaluate("window.__notReloaded === true")).toBe(true);
    // The agent's link: no referrer, no opener, no endorsement, and its whole destination in sight.
    expect(await link.getAttribute("rel")).toBe("noopener noreferrer nofollow");
    expect(await link.getAttribute("href")).toBe(leak);
    const destination = page.locator("article.content .link-destination", { hasText: "s3cret-in-the-query" });
    expect(await destination.textContent()).toBe(`(${leak})`);
    expect(await destination.isVisible()).toBe(true);

    // A Copy button copies a new token (forms.js, a file the policy allows).
    await page.goto(`${base}/u/alice/settings/tokens`);
    const mint = page.locator('form[data-action="create_api_token"]');
    await mint.getByLabel("Name").fill("laptop");
    await mint.getByRole("button").click();
    await page.locator(".secret code.token").waitFor();
    const secret = (await page.locator(".secret code.token").textContent())!;
    await page.locator(".secret button.copy").first().click();
    await page.locator(".secret button.copy", { hasText: "Copied" }).waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(secret);

    // The usage page and its charts draw with nothing refused.
    await page.goto(`${base}/usage`);
    expect(await page.locator("svg.chart").first().isVisible()).toBe(true);

    expect(refused).toEqual([]);
    expect(outside.hits).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);
});
