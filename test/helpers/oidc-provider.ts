// A real OpenID Provider (oidc-provider v9) on a free loopback port, for the SSO tests: one
// confidential client (client_secret_basic, PKCE required), accounts the test adds as it goes
// (the devInteractions login form takes any password for a known login), and consent granted
// by itself, so a sign-in is the login form and nothing else. Every test world is a new
// `<sub>.localhost` host, so the client accepts any workspace's /login/sso/callback on
// localhost; a real provider registers exactly the one the settings page shows.
import type { Server } from "node:http";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import Provider, { type KoaContextWithOIDC } from "oidc-provider";
import type { Page } from "playwright-core";
import type { Browser, World } from "./app.ts";
import { freePort } from "./ports.ts";

export interface TestAccount {
  email: string;
  emailVerified?: boolean;
  name?: string;
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Adds (or replaces) the account that logs in as `login`: its `sub`. */
  addAccount(login: string, account: TestAccount): void;
  close(): Promise<void>;
}

const CALLBACK = /^http:\/\/[a-z0-9-]+\.localhost(:\d+)?\/login\/sso\/callback$/;

/** Consent is the test's given: a grant for the scopes asked, so no consent page comes up. */
async function grantEverything(ctx: KoaContextWithOIDC) {
  const { provider, session, client, result } = ctx.oidc;
  const grantId = result?.consent?.grantId ?? session?.grantIdFor(client!.clientId);
  if (grantId) return provider.Grant.find(grantId);
  const grant = new provider.Grant({ clientId: client!.clientId, accountId: session!.accountId });
  grant.addOIDCScope("openid email profile");
  await grant.save();
  return grant;
}

export async function startOidcProvider(): Promise<TestProvider> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const clientId = "cadre-test";
  const clientSecret = `secret-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const accounts = new Map<string, Required<TestAccount>>();
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: ["http://placeholder.localhost/login/sso/callback"],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    cookies: { keys: ["cadre-test-cookie-key"] },
    features: { devInteractions: { enabled: true } },
    loadExistingGrant: grantEverything,
    async findAccount(_ctx, sub) {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          email: account.email,
          email_verified: account.emailVerified,
          name: account.name,
        }),
      };
    },
  });
  // Any workspace host on localhost, as the header above says.
  provider.Client.prototype.redirectUriAllowed = (uri: string) => CALLBACK.test(uri);
  const server: Server = await new Promise((resolve) => {
    const listening = provider.listen(port, "127.0.0.1", () => resolve(listening));
  });
  return {
    issuer,
    clientId,
    clientSecret,
    addAccount: (login, account) =>
      accounts.set(login, {
        email: account.email,
        emailVerified: account.emailVerified ?? true,
        name: account.name ?? login,
      }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The settings for /settings/sso that point at this provider. */
export const providerParams = (provider: TestProvider, extra: Record<string, unknown> = {}) => ({
  display_name: "Test IdP",
  issuer: provider.issuer,
  client_id: provider.clientId,
  client_secret: provider.clientSecret,
  ...extra,
});

/** Cookies as a browser keeps them, for the provider's answers (its paths ignored: one host). */
function cookieKeeper() {
  const jar = new Map<string, string>();
  return {
    header: () => [...jar].map(([name, value]) => `${name}=${value}`).join("; "),
    keep(res: Response) {
      for (const line of res.headers.getSetCookie()) {
        const [pair = ""] = line.split(";");
        const at = pair.indexOf("=");
        const value = pair.slice(at + 1);
        if (value && !/expires=Thu, 01 Jan 1970/i.test(line)) jar.set(pair.slice(0, at), value);
        else jar.delete(pair.slice(0, at));
      }
      return res;
    },
  };
}

/**
 * Logs in at the provider as `login` from its authorization URL, as a browser would (the
 * login form, then its redirects); returns the callback URL it sends the browser back to.
 */
export async function loginAtProvider(authorizeUrl: string, login: string): Promise<URL> {
  const cookies = cookieKeeper();
  let url = new URL(authorizeUrl);
  for (let hop = 0; hop < 10; hop++) {
    if (CALLBACK.test(url.origin + url.pathname)) return url;
    const interaction = /^\/interaction\/([^/]+)$/.exec(url.pathname);
    const res = cookies.keep(
      interaction
        ? await fetch(url, {
            method: "POST",
            redirect: "manual",
            headers: { cookie: cookies.header(), "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ prompt: "login", login, password: "any" }),
          })
        : await fetch(url, { redirect: "manual", headers: { cookie: cookies.header() } }),
    );
    const location = res.headers.get("location");
    if (!location)
      throw new Error(`the provider stopped at ${url.pathname}: ${res.status} ${await res.text()}`);
    url = new URL(location, url);
  }
  throw new Error("the provider redirected too often");
}

export interface SsoFlow {
  /** The app's cookies in this browser (the flow's own among them). */
  cookies: Record<string, string>;
  /** Where /login/sso sent the browser. */
  authorizeUrl: string;
}

function keepInto(cookies: Record<string, string>, res: LightMyRequestResponse) {
  for (const c of res.cookies) {
    if (c.value === "" || (c.expires && c.expires.getTime() < Date.now())) delete cookies[c.name];
    else cookies[c.name] = c.value;
  }
  return res;
}

/** Presses "Sign in with …": the app's flow cookie and the provider's authorization URL. */
export async function startFlow(app: FastifyInstance, world: World, cookies: Record<string, string> = {}) {
  const res = keepInto(
    cookies,
    await app.inject({ method: "GET", url: "/login/sso", headers: { host: world.host }, cookies }),
  );
  if (res.statusCode !== 303) throw new Error(`/login/sso answered ${res.statusCode}: ${res.body}`);
  return { cookies, authorizeUrl: String(res.headers.location) } satisfies SsoFlow;
}

/** The provider sends the browser back: the app's answer to its callback, cookies kept. */
export async function finishFlow(app: FastifyInstance, world: World, flow: SsoFlow, callback: URL) {
  return keepInto(
    flow.cookies,
    await app.inject({
      method: "GET",
      url: callback.pathname + callback.search,
      headers: { host: world.host },
      cookies: flow.cookies,
    }),
  );
}

/** A whole SSO sign-in as `login`; the callback's answer and a browser holding its cookies. */
export async function ssoSignIn(
  app: FastifyInstance,
  world: World,
  login: string,
): Promise<{ res: LightMyRequestResponse; browser: Browser }> {
  const flow = await startFlow(app, world);
  const res = await finishFlow(app, world, flow, await loginAtProvider(flow.authorizeUrl, login));
  const { cookies } = flow;
  const get = async (url: string) =>
    keepInto(cookies, await app.inject({ method: "GET", url, headers: { host: world.host }, cookies }));
  const home = await get("/");
  const csrf = /name="_csrf" value="([^"]+)"/.exec(home.body)?.[1] ?? "";
  const browser: Browser = {
    cookies,
    csrf,
    get,
    post: async (url, form) =>
      keepInto(
        cookies,
        await app.inject({
          method: "POST",
          url,
          headers: { host: world.host, "content-type": "application/x-www-form-urlencoded" },
          cookies,
          payload: new URLSearchParams({ _csrf: csrf, ...form }).toString(),
        }),
      ),
  };
  return { res, browser };
}

/**
 * Signs in through SSO in a real browser page (for the combined Chromium walk): the log-in
 * page's button, the provider's login form, back to the workspace signed in as `handle`.
 */
export async function ssoSignInPage(page: Page, base: string, login: string, handle: string): Promise<void> {
  await page.goto(`${base}/login`);
  await page.locator("a.sso").click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any");
  await page.locator('button[type="submit"]').click();
  await page.waitForURL((url) => url.origin === base && !url.pathname.startsWith("/login"));
  await page.locator("a.me", { hasText: `@${handle}` }).waitFor({ state: "attached" });
}
