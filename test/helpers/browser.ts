// A real browser for the UI tests: playwright-core driving Debian's Chromium at
// /usr/bin/chromium, headless (bin/test installs it; no browser is ever downloaded), against
// the app listening on a real port. Tenants resolve from `<subdomain>.localhost`, which
// Chromium maps to loopback by itself.
import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { type Browser, chromium, type Page } from "playwright-core";
import { PASSWORD, type Person, type World } from "./app.ts";

export const CHROMIUM_PATH = "/usr/bin/chromium";

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(
      `The browser tests need Chromium at ${CHROMIUM_PATH}, which is missing. Run the tests with bin/test ` +
        "(it installs Debian's chromium), or: sudo apt-get update && sudo apt-get install -y chromium",
    );
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      // Small /dev/shm in containers crashes tabs; Debian's wrapper means to add this but its check breaks
      // when findmnt lists more than one mount.
      "--disable-dev-shm-usage",
      // Straight to 127.0.0.1, whatever proxy the environment names.
      "--no-proxy-server",
    ],
  });
}

/** Starts the app on a random loopback port; returns the tenant's base URL for a world. */
export async function listen(app: FastifyInstance): Promise<(w: World) => string> {
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as AddressInfo;
  return (w) => `http://${w.tenant.subdomain}.localhost:${port}`;
}

/**
 * Server errors the page ran into (any response ≥ 500, or a page crash): a test asserts
 * this stays empty, so a 500 behind a redirect cannot pass unnoticed.
 */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("response", (r) => {
    if (r.status() >= 500) errors.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("crash", () => errors.push("page crashed"));
  return errors;
}

/** Logs in through the real /login form; resolves once the app has redirected away and shows who is in. */
export async function logIn(page: Page, base: string, who: Person): Promise<void> {
  await page.goto(`${base}/login`);
  const form = page.locator('form[action="/login"]');
  await form.locator("#email").fill(who.email);
  await form.locator("#password").fill(PASSWORD);
  await form.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL((u) => u.pathname !== "/login");
  // Attached, not visible: on a phone the menu holding it is folded.
  await page.locator("a.me", { hasText: `@${who.handle}` }).waitFor({ state: "attached" });
}

/** The page's main text (the rendered markdown blocks), whitespace collapsed. */
export async function contentText(page: Page): Promise<string> {
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the rendered text a reader sees, block by block
  return (await page.locator("article.content").innerText()).replace(/\s+/g, " ").trim();
}
