// One flow over a real socket: what `inject` cannot show (Host routing, real cookie
// headers, redirects as a client sees them).
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, makeWorld, PASSWORD, testPrisma, type World } from "./helpers/app.ts";

let app: FastifyInstance;
let port: number;
let w: World;
let dispatcher: { close(): Promise<void> };
beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ port: 0, host: "127.0.0.1" });
  port = (app.server.address() as AddressInfo).port;
  w = await makeWorld("http");
  // Node's fetch drops a `Host` request header, and `<sub>.localhost` does not resolve
  // here: so fetch `http://<sub>.localhost:<port>` (which sends exactly that Host) through
  // an agent of fetch's own undici whose DNS lookup answers 127.0.0.1 for every name.
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  expect(health.status).toBe(200);
  const Agent = (globalThis as Record<symbol, { constructor: new (o: object) => typeof dispatcher }>)[
    Symbol.for("undici.globalDispatcher.1")
  ]!.constructor;
  dispatcher = new Agent({
    connect: {
      lookup: (_host: string, opts: { all?: boolean }, cb: (...a: unknown[]) => void) =>
        opts.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4),
    },
  });
});
afterAll(async () => {
  await dispatcher.close();
  await app.close();
});

/** A tiny cookie jar over fetch, never following redirects by itself. */
function client(host: string) {
  const jar = new Map<string, string>();
  return {
    jar,
    async fetch(path: string, init: RequestInit = {}) {
      const headers = new Headers(init.headers);
      if (jar.size) headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
      const res = await fetch(`http://${host}:${port}${path}`, {
        ...init,
        headers,
        redirect: "manual",
        dispatcher,
      } as RequestInit);
      for (const c of res.headers.getSetCookie()) {
        const [pair, ...attrs] = c.split(";");
        const [name, ...value] = pair!.split("=");
        const expired = attrs.some((a) => /^\s*expires=/i.test(a) && new Date(a.split("=")[1]!) < new Date());
        if (expired || value.join("=") === "") jar.delete(name!.trim());
        else jar.set(name!.trim(), value.join("="));
      }
      return res;
    },
  };
}

const form = (fields: Record<string, string>): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});

describe("over a real HTTP listener", () => {
  it("logs in with the form, posts a note by form, and reads it back as markdown with a Bearer token", async () => {
    const browser = client(w.host);
    const loginPage = await browser.fetch("/login");
    expect(loginPage.status).toBe(200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await loginPage.text())?.[1];
    expect(csrf).toBeDefined();
    expect(browser.jar.has("cadre_csrf")).toBe(true);

    const loggedIn = await browser.fetch(
      "/login",
      form({ email: w.alice.email, password: PASSWORD, _csrf: csrf!, next: "/studios/general" }),
    );
    expect(loggedIn.status).toBe(303);
    expect(loggedIn.headers.get("location")).toBe("/studios/general");
    expect(browser.jar.has("cadre_session")).toBe(true);
    // Logged in, the forms carry a token bound to the session, not the login form's.
    const studio = await (await browser.fetch("/studios/general")).text();
    const sessionCsrf = /name="_csrf" value="([^"]+)"/.exec(studio)?.[1];
    expect(sessionCsrf).toBeDefined();
    expect(sessionCsrf).not.toBe(csrf);

    const posted = await browser.fetch(
      "/studios/general/actions/create_note",
      form({ _csrf: sessionCsrf!, title: "Over the wire", text: "Sent by a *real* socket" }),
    );
    expect(posted.status).toBe(303);
    const location = posted.headers.get("location")!;
    expect(location).toMatch(/^\/studios\/general\/notes\/[a-z0-9]{12}$/);

    const page = await browser.fetch(location);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).toContain("Note posted");
    expect(html).toContain("Sent by a <em>real</em> socket");
    expect(browser.jar.has("cadre_flash")).toBe(false);

    const id = location.split("/").pop()!;
    const note = await testPrisma().note.findUniqueOrThrow({ where: { id } });
    expect(note).toMatchObject({ authorId: w.alice.id, tenantId: w.tenant.id, title: "Over the wire" });

    const api = client(w.host);
    const asMarkdown = await api.fetch(location, {
      headers: { accept: "text/markdown", authorization: `Bearer ${w.bob.token}` },
    });
    expect(asMarkdown.status).toBe(200);
    expect(asMarkdown.headers.get("content-type")).toContain("text/markdown");
    expect(asMarkdown.headers.get("vary")).toContain("Accept");
    const text = await asMarkdown.text();
    expect(text).toContain("# Over the wire");
    expect(text).toContain("> Sent by a *real* socket");
    expect(text).toContain("## Actions");

    const suffix = await api.fetch(`${location}.md`, { headers: { authorization: `Bearer ${w.bob.token}` } });
    expect(suffix.status).toBe(200);
    expect(await suffix.text()).toBe(text);

    // The Host header alone picks the tenant: the same path on another host is not this note.
    const elsewhere = await client("nosuch.localhost").fetch(location, {
      headers: { accept: "text/markdown", authorization: `Bearer ${w.bob.token}` },
    });
    expect(elsewhere.status).toBe(404);

    const out = await browser.fetch("/logout", form({ _csrf: sessionCsrf! }));
    expect(out.status).toBe(303);
    expect(browser.jar.has("cadre_session")).toBe(false);
    const after = await browser.fetch(location);
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toBe(`/login?next=${encodeURIComponent(location)}`);
  });
});
