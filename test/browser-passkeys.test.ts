// Passkeys in a real browser (issue 44): Chromium with a virtual authenticator (DevTools'
// WebAuthn domain: ctap2, internal, discoverable, user verified) at a laptop's width and a
// phone's. Bob adds a passkey on his security page, signs out, and signs in again with it
// alone ("Sign in with a passkey"); the passkey's last use shows on his page. Screenshots:
// tmp/walk/<width>-passkeys-*.png.
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, makeWorld, testPrisma } from "./helpers/app.ts";
import { contentText, launchChromium, listen, logIn } from "./helpers/browser.ts";
import { addVirtualAuthenticator } from "./helpers/virtual-authenticator.ts";
import { look, WIDTHS, walking } from "./helpers/walk.ts";

let app: FastifyInstance;
let browser: Browser;
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

describe.each(WIDTHS)("passkeys in Chromium at %i px", (width) => {
  it("bob adds a passkey on his security page, signs out, signs in with it", async () => {
    const w = await makeWorld("pk");
    const base = baseOf(w);
    await walking(browser, width, async (walk) => {
      const { page } = walk;
      const authenticator = await addVirtualAuthenticator(page);
      await logIn(page, base, w.bob);
      await page.goto(`${base}/u/bob/settings/security`);
      expect(await contentText(page)).toContain("You have no passkey yet.");
      const add = page.locator('form[data-passkey="register"]');
      await add.getByLabel("Name").fill("Laptop");
      await look(walk, "passkeys-security-empty");
      await add.getByRole("button", { name: "Add a passkey" }).click();
      await page.getByText("Passkey “Laptop” added.").waitFor();
      expect(await contentText(page)).toMatch(/\| ?Laptop|Laptop this device only|Laptop synced/);
      expect(await authenticator.credentials()).toHaveLength(1);
      await look(walk, "passkeys-security-added");

      // On a phone the menu holding it is folded.
      if (width === 390) await page.locator("details.menu > summary").click();
      await page.locator("form.logout button").click();
      await page.waitForURL((url) => url.pathname === "/login");
      await look(walk, "passkeys-login");
      await page.getByRole("button", { name: "Sign in with a passkey" }).click();
      await page.locator("a.me", { hasText: "@bob" }).waitFor({ state: "attached" });
      await page.goto(`${base}/u/bob/settings/security`);
      expect(await contentText(page)).not.toContain("never");
      await look(walk, "passkeys-security-used");
    });
    const kinds = await testPrisma().securityEvent.findMany({
      where: { tenantId: w.tenant.id, userId: w.bob.id },
      select: { kind: true },
    });
    expect(kinds.map((event) => event.kind)).toContain("passkey_added");
  }, 120_000);
});
