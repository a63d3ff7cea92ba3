// Single sign-on against a real OpenID Provider (oidc-provider, started here): the admin's
// settings (a bad issuer is a 400 on its field), who gets in (a domain allowed, an invited
// address, a person already here by verified address; a foreign domain, an unverified address
// and a deactivated person refused), the flow's checks (a tampered state or nonce, a flow
// used twice or from another browser), SSO only refusing passwords and password reset, and
// sign-out ending the Cadre session.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { act, buildTestApp, csrfOf, makeWorld, PASSWORD, testPrisma, type World } from "./helpers/app.ts";
import {
  finishFlow,
  loginAtProvider,
  providerParams,
  ssoSignIn,
  startFlow,
  startOidcProvider,
  type TestProvider,
} from "./helpers/oidc-provider.ts";
import { freePort } from "./helpers/ports.ts";
import { signedIn, signInAs } from "./helpers/sessions.ts";

let app: FastifyInstance;
let provider: TestProvider;
const db = () => testPrisma();

beforeAll(async () => {
  [app, provider] = await Promise.all([buildTestApp(), startOidcProvider()]);
});
afterAll(async () => {
  await app?.close();
  await provider?.close();
});

/** A world whose alice is a workspace admin and has set up SSO with `extra` settings. */
async function ssoWorld(extra: Record<string, unknown> = {}): Promise<World> {
  const world = await makeWorld("sso");
  await db().user.update({ where: { id: world.alice.id }, data: { tenantAdmin: true } });
  await act(world, world.alice, "/settings/sso", "set_sso_provider", providerParams(provider, extra));
  return world;
}

/** A login at the provider unique to this test, with that address. */
function account(email: string, extra: { emailVerified?: boolean; name?: string } = {}): string {
  const login = `user-${Math.random().toString(36).slice(2, 10)}`;
  provider.addAccount(login, { email, ...extra });
  return login;
}

const noSession = (cookies: Record<string, string>) =>
  !Object.keys(cookies).some((name) => /session/.test(name));

describe("the admin's settings", () => {
  it("refuses an issuer that is no OpenID Provider with a 400 naming the field", async () => {
    const world = await ssoWorld();
    const browser = await signInAs(app, world, world.alice);
    const deadPort = await freePort();
    for (const issuer of [`http://127.0.0.1:${deadPort}`, "http://idp.example.com", "not a url"]) {
      const res = await app.inject({
        method: "POST",
        url: "/settings/sso/actions/set_sso_provider",
        headers: { host: world.host, accept: "text/markdown", authorization: `Bearer ${world.alice.token}` },
        payload: { ...providerParams(provider), issuer },
      });
      expect(res.statusCode, issuer).toBe(400);
      // Markdown names the param an agent sends; HTML its label (below).
      expect(res.body, issuer).toContain("`issuer`");
    }
    // And in HTML, the form comes back with the field named.
    const html = await browser.post("/settings/sso/actions/set_sso_provider", {
      ...providerParams(provider),
      issuer: `http://127.0.0.1:${deadPort}`,
    });
    expect(html.statusCode).toBe(400);
    expect(html.body).toContain("Issuer URL");
    const saved = await db().ssoProvider.findUniqueOrThrow({ where: { tenantId: world.tenant.id } });
    expect(saved.issuer).toBe(provider.issuer);
  });

  it("shows the redirect URI, never the secret; members read it without forms; agents never reach it", async () => {
    const world = await ssoWorld();
    const admin = await signInAs(app, world, world.alice);
    const page = await admin.get("/settings/sso");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`http://${world.host}/login/sso/callback`);
    expect(page.body).not.toContain(provider.clientSecret);
    const member = await signInAs(app, world, world.bob);
    const read = await member.get("/settings/sso");
    expect(read.body).toContain("Only workspace admins change single sign-on");
    const refused = await app.inject({
      method: "POST",
      url: "/settings/sso/actions/remove_sso_provider",
      headers: { host: world.host, accept: "text/markdown", authorization: `Bearer ${world.bob.token}` },
      payload: {},
    });
    expect(refused.statusCode).toBe(403);
    const row = await db().ssoProvider.findUniqueOrThrow({ where: { tenantId: world.tenant.id } });
    expect(Buffer.from(row.encryptedSecret).toString("utf8")).not.toContain(provider.clientSecret);
  });
});

describe("who gets in", () => {
  it("a first sign-in joins by an allowed domain: a member with a working session", async () => {
    const world = await ssoWorld({ allowed_domains: "example.org, Other.Example" });
    const login = account("dana.doe@example.org", { name: "Dana Doe" });
    const { res, browser } = await ssoSignIn(app, world, login);
    expect(res.statusCode).toBe(303);
    const dana = await db().user.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: world.tenant.id, email: "dana.doe@example.org" } },
    });
    expect(dana).toMatchObject({
      handle: "dana-doe",
      name: "Dana Doe",
      tenantAdmin: false,
      passwordHash: null,
    });
    expect(await signedIn(browser, "dana-doe")).toBe(true);
    const events = await db().securityEvent.findMany({ where: { userId: dana.id } });
    expect(events.map((event) => event.kind)).toContain("sso_joined");
    // The second time finds the same person by their identity, not a new one.
    const again = await ssoSignIn(app, world, login);
    expect(again.res.statusCode).toBe(303);
    expect(
      await db().user.count({ where: { tenantId: world.tenant.id, email: "dana.doe@example.org" } }),
    ).toBe(1);
    expect(await db().userIdentity.count({ where: { userId: dana.id } })).toBe(1);
  });

  it("refuses a foreign domain with a clear page", async () => {
    const world = await ssoWorld({ allowed_domains: "example.org" });
    const { res, browser } = await ssoSignIn(app, world, account("eve@elsewhere.net"));
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain(
      "elsewhere.net addresses may not join this workspace; ask an admin to invite you",
    );
    expect(noSession(browser.cookies)).toBe(true);
    expect(await db().user.count({ where: { tenantId: world.tenant.id, email: "eve@elsewhere.net" } })).toBe(
      0,
    );
  });

  it("an invited address joins with the invited role", async () => {
    const world = await ssoWorld();
    await act(world, world.alice, "/settings/invitations", "invite_people", {
      emails: "ivy@invited.net",
      role: "admin",
    });
    const { res } = await ssoSignIn(app, world, account("ivy@invited.net"));
    expect(res.statusCode).toBe(303);
    const ivy = await db().user.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: world.tenant.id, email: "ivy@invited.net" } },
    });
    expect(ivy.tenantAdmin).toBe(true);
    const link = await db().oneTimeLink.findFirstOrThrow({
      where: { tenantId: world.tenant.id, email: "ivy@invited.net" },
    });
    expect(link.usedAt).not.toBeNull();
  });

  it("links a person already here by a verified address, refuses an unverified one and a deactivated person", async () => {
    const world = await ssoWorld();
    const unverified = await ssoSignIn(app, world, account(world.bob.email, { emailVerified: false }));
    expect(unverified.res.statusCode).toBe(403);
    expect(unverified.res.body).toContain("did not confirm your email address");
    const { res, browser } = await ssoSignIn(app, world, account(world.bob.email));
    expect(res.statusCode).toBe(303);
    expect(await signedIn(browser, "bob")).toBe(true);
    expect(await db().userIdentity.count({ where: { userId: world.bob.id } })).toBe(1);
    await db().user.update({ where: { id: world.carol.id }, data: { deactivatedAt: new Date() } });
    const closed = await ssoSignIn(app, world, account(world.carol.email));
    expect(closed.res.statusCode).toBe(403);
    expect(closed.res.body).toContain("deactivated");
  });
});

describe("the flow's checks", () => {
  it("refuses a tampered state", async () => {
    const world = await ssoWorld();
    const flow = await startFlow(app, world);
    const callback = await loginAtProvider(flow.authorizeUrl, account(world.bob.email));
    callback.searchParams.set("state", `${callback.searchParams.get("state")}x`);
    const res = await finishFlow(app, world, flow, callback);
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("did not check out");
    expect(noSession(flow.cookies)).toBe(true);
  });

  it("refuses a tampered nonce", async () => {
    const world = await ssoWorld();
    const flow = await startFlow(app, world);
    const callback = await loginAtProvider(flow.authorizeUrl, account(world.bob.email));
    await db().ssoLogin.updateMany({
      where: { tenantId: world.tenant.id },
      data: { nonce: "not-the-nonce-sent" },
    });
    const res = await finishFlow(app, world, flow, callback);
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("did not check out");
    expect(noSession(flow.cookies)).toBe(true);
  });

  it("refuses a callback in another browser, and a flow used twice", async () => {
    const world = await ssoWorld();
    const flow = await startFlow(app, world);
    const callback = await loginAtProvider(flow.authorizeUrl, account(world.bob.email));
    const elsewhere = await finishFlow(app, world, { cookies: {}, authorizeUrl: "" }, callback);
    expect(elsewhere.statusCode).toBe(403);
    expect(elsewhere.body).toContain("expired or was already used");
    const kept = { ...flow.cookies };
    expect((await finishFlow(app, world, flow, callback)).statusCode).toBe(303);
    const replay = await finishFlow(app, world, { cookies: kept, authorizeUrl: "" }, callback);
    expect(replay.statusCode).toBe(403);
  });
});

describe("SSO only", () => {
  it("refuses passwords at log-in and password reset with the reason, once an admin signed in with it", async () => {
    const world = await ssoWorld();
    const notYet = await app.inject({
      method: "POST",
      url: "/settings/sso/actions/set_sso_provider",
      headers: { host: world.host, accept: "text/markdown", authorization: `Bearer ${world.alice.token}` },
      payload: { ...providerParams(provider), client_secret: "", sso_only: true },
    });
    expect(notYet.statusCode).toBe(403);
    expect(notYet.body).toContain("Sign in with the provider yourself once");
    expect((await ssoSignIn(app, world, account(world.alice.email))).res.statusCode).toBe(303);
    // A log-in tab opened before the switch: its form still posts a password.
    const tab = await app.inject({ method: "GET", url: "/login", headers: { host: world.host } });
    const tabCookies = Object.fromEntries(tab.cookies.map((cookie) => [cookie.name, cookie.value]));
    await act(world, world.alice, "/settings/sso", "set_sso_provider", {
      ...providerParams(provider),
      client_secret: "",
      sso_only: true,
    });
    const reason = "This workspace signs in with Test IdP only";
    const password = await app.inject({
      method: "POST",
      url: "/login",
      headers: { host: world.host },
      cookies: tabCookies,
      payload: { email: world.bob.email, password: PASSWORD, _csrf: csrfOf(tab) ?? "" },
    });
    expect(password.statusCode).toBe(401);
    expect(password.body).toContain(reason);
    expect(noSession(Object.fromEntries(password.cookies.map((cookie) => [cookie.name, cookie.value])))).toBe(
      true,
    );
    const loginPage = await app.inject({ method: "GET", url: "/login", headers: { host: world.host } });
    expect(loginPage.body).toContain("Sign in with Test IdP");
    expect(loginPage.body).not.toContain('name="password"');
    const forgot = await app.inject({
      method: "GET",
      url: "/forgot-password",
      headers: { host: world.host },
    });
    expect(forgot.statusCode).toBe(403);
    const asked = await app.inject({
      method: "POST",
      url: "/forgot-password",
      headers: { host: world.host },
      cookies: tabCookies,
      payload: { email: world.bob.email, _csrf: csrfOf(tab) ?? "" },
    });
    expect(asked.statusCode).toBe(403);
    expect(asked.body).toContain(reason);
    expect(await db().oneTimeLink.count({ where: { tenantId: world.tenant.id, purpose: "reset" } })).toBe(0);
    // Removing the provider turns SSO only off: the password works again.
    await act(world, world.alice, "/settings/sso", "remove_sso_provider", {});
    expect((await signInAs(app, world, world.bob)).signIn.statusCode).toBe(303);
  });
});

describe("sign-out", () => {
  it("ends the Cadre session", async () => {
    const world = await ssoWorld();
    const { browser } = await ssoSignIn(app, world, account(world.bob.email));
    expect(await signedIn(browser, "bob")).toBe(true);
    const sessionCookies = { ...browser.cookies };
    expect((await browser.post("/logout", {})).statusCode).toBe(303);
    const stale = await app.inject({
      method: "GET",
      url: "/u/bob/settings/security",
      headers: { host: world.host },
      cookies: sessionCookies,
    });
    expect(stale.statusCode).not.toBe(200);
    expect(await db().session.count({ where: { userId: world.bob.id } })).toBe(0);
  });
});
