import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { createApiToken } from "../src/services/tokens.ts";
import {
  buildTestApp,
  csrfOf,
  login,
  makeWorld,
  md,
  PASSWORD,
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";

const db = testPrisma();
let app: FastifyInstance;
let w: World;
let other: World;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("auth");
  other = await makeWorld("auth");
});
afterAll(async () => app.close());

const cookieMap = (res: LightMyRequestResponse) =>
  Object.fromEntries(res.cookies.map((c) => [c.name, c.value]));

/** A GET /login to obtain the CSRF cookie and token, then the login POST with `form`. */
async function postLogin(world: World, form: Record<string, string>, csrf?: string) {
  const first = await app.inject({ method: "GET", url: "/login", headers: { host: world.host } });
  const token = /name="_csrf" value="([^"]+)"/.exec(first.body)![1]!;
  return app.inject({
    method: "POST",
    url: "/login",
    headers: { host: world.host },
    cookies: cookieMap(first),
    payload: { _csrf: csrf ?? token, ...form },
  });
}

const whoami = (world: World, cookies: Record<string, string>, accept = "text/markdown") =>
  app.inject({ method: "GET", url: "/whoami", headers: { host: world.host, accept }, cookies });
const whoamiOn = (other: FastifyInstance, cookies: Record<string, string>) =>
  other.inject({
    method: "GET",
    url: "/whoami",
    headers: { host: w.host, accept: "text/markdown" },
    cookies,
  });
const sessions = (p: Person) => db.session.count({ where: { userId: p.id } });

describe("login", () => {
  it("logs in with the right password: session row, signed httpOnly cookie, redirect", async () => {
    const before = await sessions(w.alice);
    const res = await postLogin(w, {
      email: w.alice.email.toUpperCase(),
      password: PASSWORD,
      next: "/studios",
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/studios");
    const cookie = res.cookies.find((c) => c.name === "cadre_session")!;
    expect(cookie).toMatchObject({ httpOnly: true, path: "/", sameSite: "Lax" });
    expect(await sessions(w.alice)).toBe(before + 1);
    const me = await whoami(w, { cadre_session: cookie.value });
    expect(me.statusCode).toBe(200);
    expect(me.body).toContain("You are Alice Adams ([@alice](/u/alice))");
  });

  it("answers a wrong password or an unknown email with the same 401 page", async () => {
    const before = await db.session.count({ where: { tenantId: w.tenant.id } });
    for (const form of [
      { email: w.bob.email, password: "wrong" },
      { email: `nobody@${w.tenant.subdomain}.test`, password: PASSWORD },
      { email: other.bob.email, password: PASSWORD },
      { email: "", password: "" },
    ]) {
      const res = await postLogin(w, form);
      expect(res.statusCode).toBe(401);
      expect(res.headers["content-type"]).toContain("text/html");
      expect(res.body).toContain("Wrong email or password.");
      expect(res.body).toContain('name="password"');
      expect(res.cookies.find((c) => c.name === "cadre_session")).toBeUndefined();
    }
    const kept = await postLogin(w, { email: w.bob.email, password: "nope" });
    expect(kept.body).toContain(`value="${w.bob.email}"`);
    expect(await db.session.count({ where: { tenantId: w.tenant.id } })).toBe(before);
  });

  it("refuses archived people and subagents", async () => {
    const world = await makeWorld("auth");
    await db.user.update({ where: { id: world.carol.id }, data: { archivedAt: new Date() } });
    await db.user.update({
      where: { id: world.bob.id },
      data: { kind: "subagent", parentId: world.alice.id },
    });
    for (const p of [world.carol, world.bob])
      expect((await postLogin(world, { email: p.email, password: PASSWORD })).statusCode).toBe(401);
    expect((await md(app, world, world.carol, "GET", "/whoami")).statusCode).toBe(401);
  });

  it("rejects open redirects in `next`", async () => {
    const cases: [string, string][] = [
      ["//evil.example", "/"],
      ["https://evil.example/", "/"],
      ["/\\evil.example", "/"],
      ["/\t/evil.example", "/"],
      ["/\n/evil.example", "/"],
      ["javascript:alert(1)", "/"],
      ["/login?next=//evil.example", "/"],
      ["/studios/general?page=2", "/studios/general?page=2"],
      ["/search?q=caf%C3%A9", "/search?q=caf%C3%A9"],
    ];
    for (const [next, expected] of cases) {
      const res = await postLogin(w, { email: w.alice.email, password: PASSWORD, next });
      expect(res.statusCode, JSON.stringify(next)).toBe(303);
      expect(res.headers.location, JSON.stringify(next)).toBe(expected);
    }
    const b = await login(app, w, w.alice);
    const again = await b.get(`/login?next=${encodeURIComponent("//evil.example")}`);
    expect(again.statusCode).toBe(303);
    expect(again.headers.location).toBe("/");
  });

  it("explains itself in markdown", async () => {
    const res = await app.inject({
      method: "GET",
      url: "/login",
      headers: { host: w.host, accept: "text/markdown" },
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Authorization: Bearer <token>");
  });
});

describe("CSRF", () => {
  it("requires the token on cookie-authenticated POSTs, by field or header", async () => {
    const b = await login(app, w, w.bob);
    const url = "/studios/general/actions/create_note";
    const notes = () => db.note.count({ where: { tenantId: w.tenant.id } });
    const before = await notes();
    const form = (csrf?: string) =>
      app.inject({
        method: "POST",
        url,
        headers: { host: w.host, "content-type": "application/x-www-form-urlencoded" },
        cookies: b.cookies,
        payload: new URLSearchParams({
          text: "csrf?",
          ...(csrf !== undefined && { _csrf: csrf }),
        }).toString(),
      });
    for (const res of [await form(), await form("x".repeat(b.csrf.length)), await form("")]) {
      expect(res.statusCode).toBe(403);
      expect(res.body).toContain("CSRF");
    }
    const json = (headers: Record<string, string>) =>
      app.inject({
        method: "POST",
        url,
        headers: { host: w.host, accept: "text/markdown", ...headers },
        cookies: b.cookies,
        payload: { text: "via header" },
      });
    expect((await json({})).statusCode).toBe(403);
    expect((await json({ "x-csrf-token": "wrong" })).statusCode).toBe(403);
    expect(await notes()).toBe(before);
    expect((await json({ "x-csrf-token": b.csrf })).statusCode).toBe(201);
    expect((await form(b.csrf)).statusCode).toBe(303);
    expect(await notes()).toBe(before + 2);
  });

  it("refuses a cookie and a token the sender chose together, before and after login", async () => {
    const forged = "A".repeat(32);
    const res = await app.inject({
      method: "POST",
      url: "/login",
      headers: { host: w.host },
      cookies: { cadre_csrf: forged },
      payload: { email: w.alice.email, password: PASSWORD, _csrf: forged },
    });
    expect(res.statusCode).toBe(403);
    expect(res.cookies.find((c) => c.name === "cadre_session")).toBeUndefined();
    const b = await login(app, w, w.bob);
    const note = await app.inject({
      method: "POST",
      url: "/studios/general/actions/create_note",
      headers: { host: w.host, accept: "text/markdown", "x-csrf-token": forged },
      cookies: { ...b.cookies, cadre_csrf: forged },
      payload: { text: "forged" },
    });
    expect(note.statusCode).toBe(403);
    expect(await db.note.count({ where: { text: "forged" } })).toBe(0);
  });

  it("binds the token to its session: not another session's, not the login form's", async () => {
    const url = "/studios/general/actions/create_note";
    const b = await login(app, w, w.alice);
    const elsewhere = await login(app, w, w.alice);
    expect(elsewhere.csrf).not.toBe(b.csrf);
    expect((await b.post(url, { text: "other", _csrf: elsewhere.csrf })).statusCode).toBe(403);
    // The same browser after logging out and in as someone else: the old token is spent.
    const old = b.csrf;
    expect((await b.post("/logout", {})).statusCode).toBe(303);
    const page = await b.get("/login");
    const preSession = csrfOf(page)!;
    expect(
      (await b.post("/login", { email: w.bob.email, password: PASSWORD, _csrf: preSession })).statusCode,
    ).toBe(303);
    expect((await b.post(url, { text: "stale", _csrf: old })).statusCode).toBe(403);
    expect((await b.post(url, { text: "stale", _csrf: preSession })).statusCode).toBe(403);
    expect(await db.note.count({ where: { tenantId: w.tenant.id, text: { in: ["other", "stale"] } } })).toBe(
      0,
    );
    const fresh = csrfOf(await b.get("/"))!;
    expect((await b.post(url, { text: "bob again", _csrf: fresh })).statusCode).toBe(303);
  });

  it("names its cookies __Host- over https, and ignores them without the prefix", async () => {
    const https = await buildTestApp({ PUBLIC_SCHEME: "https" });
    try {
      const page = await https.inject({ method: "GET", url: "/login", headers: { host: w.host } });
      expect(page.cookies.map((c) => c.name)).toEqual(["__Host-cadre_csrf"]);
      expect(page.cookies[0]).toMatchObject({ secure: true, path: "/", httpOnly: true });
      expect(page.cookies[0]!.domain).toBeUndefined();
      const b = await login(https, w, w.bob);
      // The browser's long-lived id (new sign-ins are told by it) is __Host- too.
      expect(Object.keys(b.cookies).sort()).toEqual(["__Host-cadre_browser", "__Host-cadre_session"]);
      const posted = await b.post("/studios/general/actions/create_note", { text: "over https" });
      expect(posted.statusCode).toBe(303);
      expect(posted.cookies.find((c) => c.name === "__Host-cadre_flash")).toMatchObject({ secure: true });
      const session = b.cookies["__Host-cadre_session"]!;
      expect((await whoamiOn(https, { "__Host-cadre_session": session })).statusCode).toBe(200);
      expect((await whoamiOn(https, { cadre_session: session })).statusCode).toBe(401);
      const out = await b.post("/logout", {});
      expect(out.cookies.find((c) => c.name === "__Host-cadre_session")).toMatchObject({
        secure: true,
        value: "",
      });
    } finally {
      await https.close();
    }
  });

  it("is not needed with a Bearer token", async () => {
    const res = await md(app, w, w.bob, "POST", "/studios/general/actions/create_note", { text: "bearer" });
    expect(res.statusCode).toBe(201);
  });

  it("protects the login and logout forms too", async () => {
    expect((await postLogin(w, { email: w.alice.email, password: PASSWORD }, "bad")).statusCode).toBe(403);
    const b = await login(app, w, w.alice);
    const res = await app.inject({
      method: "POST",
      url: "/logout",
      headers: { host: w.host },
      cookies: b.cookies,
    });
    expect(res.statusCode).toBe(403);
    expect((await whoami(w, b.cookies)).statusCode).toBe(200);
  });
});

describe("sessions", () => {
  it("logout deletes the session server-side; the old cookie no longer works", async () => {
    const b = await login(app, w, w.carol);
    const stolen = { ...b.cookies };
    const before = await sessions(w.carol);
    const res = await b.post("/logout", {});
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/login");
    expect(b.cookies.cadre_session).toBeUndefined();
    expect(await sessions(w.carol)).toBe(before - 1);
    expect((await whoami(w, stolen)).statusCode).toBe(401);
  });

  it("ignores a session cookie of tenant A on tenant B's host", async () => {
    const b = await login(app, w, w.alice);
    const res = await whoami(other, b.cookies);
    expect(res.statusCode).toBe(401);
    const html = await whoami(other, b.cookies, "text/html");
    expect(html.statusCode).toBe(303);
  });

  it("ignores tampered, unsigned and expired session cookies", async () => {
    const b = await login(app, w, w.bob);
    const signed = b.cookies.cadre_session!;
    const raw = signed.slice(0, signed.lastIndexOf("."));
    expect((await whoami(w, { cadre_session: raw })).statusCode).toBe(401);
    expect((await whoami(w, { cadre_session: `${raw}.forged` })).statusCode).toBe(401);
    await db.session.updateMany({
      where: { userId: w.bob.id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect((await whoami(w, b.cookies)).statusCode).toBe(401);
  });
});

describe("API tokens", () => {
  it("sets last_used_at on use, at most once a minute", async () => {
    const { token, row } = await createApiToken(db, w.tenant.id, w.bob.id, "ticker");
    expect(row.lastUsedAt).toBeNull();
    const me = { ...w.bob, token };
    expect((await md(app, w, me, "GET", "/whoami")).statusCode).toBe(200);
    const first = (await db.apiToken.findUniqueOrThrow({ where: { id: row.id } })).lastUsedAt!;
    expect(Date.now() - first.getTime()).toBeLessThan(10_000);
    await md(app, w, me, "GET", "/whoami");
    expect((await db.apiToken.findUniqueOrThrow({ where: { id: row.id } })).lastUsedAt).toEqual(first);
    const old = new Date(Date.now() - 5 * 60_000);
    await db.apiToken.update({ where: { id: row.id }, data: { lastUsedAt: old } });
    await md(app, w, me, "GET", "/whoami");
    const later = (await db.apiToken.findUniqueOrThrow({ where: { id: row.id } })).lastUsedAt!;
    expect(later.getTime()).toBeGreaterThan(old.getTime() + 60_000);
  });

  it("rejects revoked, foreign-tenant, unknown and malformed tokens with 401", async () => {
    const { token, row } = await createApiToken(db, w.tenant.id, w.bob.id, "to revoke");
    await db.apiToken.update({ where: { id: row.id }, data: { revokedAt: new Date() } });
    const bearer = (world: World, value: string) =>
      app.inject({
        method: "GET",
        url: "/whoami",
        headers: { host: world.host, accept: "text/markdown", authorization: value },
      });
    expect((await bearer(w, `Bearer ${token}`)).statusCode).toBe(401);
    expect((await bearer(other, `Bearer ${w.alice.token}`)).statusCode).toBe(401);
    expect((await bearer(w, `Bearer cadre_${newId(8)}_${"a".repeat(32)}`)).statusCode).toBe(401);
    expect((await bearer(w, `Bearer ${w.alice.token}x`)).statusCode).toBe(401);
    expect((await bearer(w, `Basic ${w.alice.token}`)).statusCode).toBe(401);
    const ok = await bearer(w, `Bearer ${w.alice.token}`);
    expect(ok.statusCode).toBe(200);
    const post = await app.inject({
      method: "POST",
      url: "/studios/general/actions/create_note",
      headers: { host: other.host, accept: "text/markdown", authorization: `Bearer ${w.alice.token}` },
      payload: { text: "cross-tenant" },
    });
    expect(post.statusCode).toBe(401);
    expect(await db.note.count({ where: { text: "cross-tenant" } })).toBe(0);
  });
});

describe("unauthenticated and unknown hosts", () => {
  it("redirects HTML GETs to the login page and answers markdown with 401", async () => {
    const html = await app.inject({
      method: "GET",
      url: "/studios/general?page=2",
      headers: { host: w.host },
    });
    expect(html.statusCode).toBe(303);
    expect(html.headers.location).toBe(`/login?next=${encodeURIComponent("/studios/general?page=2")}`);
    const mdRes = await app.inject({
      method: "GET",
      url: "/studios/general",
      headers: { host: w.host, accept: "text/markdown" },
    });
    expect(mdRes.statusCode).toBe(401);
    expect(mdRes.body).toContain("# Error 401");
    const suffix = await app.inject({ method: "GET", url: "/studios/general.md", headers: { host: w.host } });
    expect(suffix.statusCode).toBe(401);
    expect(suffix.headers["content-type"]).toContain("text/markdown");
  });

  it("answers 404 for an unknown tenant or a bare host", async () => {
    for (const host of ["nosuchtenant.localhost", "localhost", "a.b.localhost"]) {
      const res = await app.inject({
        method: "GET",
        url: "/whoami",
        headers: { host, accept: "text/markdown", authorization: `Bearer ${w.alice.token}` },
      });
      expect(res.statusCode, host).toBe(404);
    }
    const html = await app.inject({
      method: "GET",
      url: "/login",
      headers: { host: "nosuchtenant.localhost" },
    });
    expect(html.statusCode).toBe(404);
  });
});
