// The walk through securing an account (issue 44), in Chromium at a laptop's width and a
// phone's: bob sets up an authenticator app on his security page (the QR code, its secret, a
// code, the recovery codes shown once), signs out, signs in with his password and a code;
// later, his confirmation stale, he creates an API token behind re-confirmation; then he
// signs in through the workspace's single sign-on (a real OpenID Provider in this process).
// Screenshots: tmp/walk/ (look()) and /tmp/shots-two-factor/.
import { mkdirSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { act, buildTestApp, makeWorld, PASSWORD, testPrisma, type World } from "./helpers/app.ts";
import { contentText, launchChromium, listen, logIn } from "./helpers/browser.ts";
import {
  providerParams,
  ssoSignInPage,
  startOidcProvider,
  type TestProvider,
} from "./helpers/oidc-provider.ts";
import { codeAt } from "./helpers/two-factor.ts";
import { look, type Walker, WIDTHS, walking } from "./helpers/walk.ts";

const SHOTS = "/tmp/shots-two-factor/";
let app: FastifyInstance;
let browser: Browser;
let provider: TestProvider;
let baseOf: (w: World) => string;
beforeAll(async () => {
  app = await buildTestApp();
  baseOf = await listen(app);
  browser = await launchChromium();
  provider = await startOidcProvider();
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await provider?.close();
  await app?.close();
});

async function shot(walk: Walker, name: string) {
  await look(walk, name);
  await walk.page.screenshot({ path: `${SHOTS}${walk.width}-${name}.png`, fullPage: true });
}

async function signOut(walk: Walker) {
  if (walk.width === 390) await walk.page.locator("details.menu > summary").click();
  await walk.page.locator("form.logout button").click();
  await walk.page.waitForURL((url) => url.pathname === "/login");
}

describe.each(WIDTHS)("securing an account in Chromium at %i px", (width) => {
  it("bob turns on two-factor, signs in with a code, re-confirms for a token, signs in with SSO", async () => {
    const w = await makeWorld("w2f");
    await testPrisma().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
    await act(w, w.alice, "/settings/sso", "set_sso_provider", providerParams(provider));
    const base = baseOf(w);
    const login = `bob-${width}-${Math.random().toString(36).slice(2, 8)}`;
    provider.addAccount(login, { email: w.bob.email });

    await walking(browser, width, async (walk) => {
      const { page } = walk;
      await logIn(page, base, w.bob);
      await page.goto(`${base}/u/bob/settings/security`);
      await page.getByRole("button", { name: "Set up an authenticator app" }).click();
      await page.locator("svg.qr-code").waitFor();
      await shot(walk, "two-factor-scan");
      const secret = ((await page.locator("code.totp-secret").textContent()) ?? "").replace(/\s/g, "");
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      await page.getByLabel("Code from the app").fill(codeAt(secret));
      await page.getByRole("button", { name: "Turn on two-factor" }).click();
      await page.getByText("Your recovery codes: copy it now").waitFor();
      expect(await page.locator(".secret code.token").textContent()).toMatch(
        /^([a-z0-9]{5}-[a-z0-9]{5}\n?){10}$/,
      );
      await shot(walk, "two-factor-recovery-codes");
      await page.goto(`${base}/u/bob/settings/security`);
      expect(await contentText(page)).toContain("On: after your password");
      await shot(walk, "two-factor-on");

      // Signing in again: the password, then a code (the next one: the set-up spent this one).
      await signOut(walk);
      await page.locator("#email").fill(w.bob.email);
      await page.locator("#password").fill(PASSWORD);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.waitForURL((url) => url.pathname === "/login/verify");
      await shot(walk, "two-factor-verify");
      await page.getByLabel("Code", { exact: true }).fill(codeAt(secret, Date.now() + 30_000));
      await page.getByRole("button", { name: "Verify" }).first().click();
      await page.locator("a.me", { hasText: "@bob" }).waitFor({ state: "attached" });

      // A while later: the confirmation is stale, so the token form asks first.
      await testPrisma().session.updateMany({
        where: { userId: w.bob.id },
        data: { confirmedAt: new Date(Date.now() - 60 * 60_000) },
      });
      await page.goto(`${base}/u/bob/settings/tokens`);
      const form = page.locator('form[data-action="create_api_token"]');
      await form.getByLabel("Name").fill("laptop script");
      await form.getByLabel("Your password or a two-factor code").fill("not my password");
      await shot(walk, "token-reconfirm");
      await form.getByRole("button").click();
      await page.getByText("this is not your password or a current two-factor code").waitFor();
      const again = page.locator('form[data-action="create_api_token"]');
      await again.getByLabel("Your password or a two-factor code").fill(PASSWORD);
      await again.getByRole("button").click();
      await page.getByText("Your new token: copy it now").waitFor();
      await shot(walk, "token-created");

      // Single sign-on: the log-in page's button, the provider's form, back signed in.
      await signOut(walk);
      await shot(walk, "login-with-sso");
      await ssoSignInPage(page, base, login, "bob");
      await shot(walk, "signed-in-with-sso");
    });
    const tokens = await testPrisma().apiToken.findMany({
      where: { userId: w.bob.id, name: "laptop script" },
    });
    expect(tokens).toHaveLength(1);
  }, 180_000);
});
