// Sessions through the real stack: each sign-in is listed on the person's security page with
// its browser, address and last use; one can be ended, or all the others; idle and absolute
// limits end them; last use is written at most once a minute.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserName } from "../src/services/sessions.ts";
import { buildTestApp, makeWorld, testPrisma } from "./helpers/app.ts";
import { FIREFOX, SAFARI_IOS, signedIn, signInAs } from "./helpers/sessions.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app?.close();
});
const db = () => testPrisma();

describe("browser names", () => {
  it("names the browser and system a person recognises", () => {
    expect(browserName(FIREFOX)).toBe("Firefox on Linux");
    expect(browserName(SAFARI_IOS)).toBe("Safari on iOS");
    expect(
      browserName(
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
      ),
    ).toBe("Edge on Windows");
    expect(
      browserName(
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
      ),
    ).toBe("Chrome on macOS");
    expect(browserName("")).toBe("Unknown browser");
  });
});

describe("the security page", () => {
  it("lists each session with its browser, and ends one or all the others", async () => {
    const w = await makeWorld("sec");
    const laptop = await signInAs(app, w, w.alice, { userAgent: FIREFOX });
    const phone = await signInAs(app, w, w.alice, { userAgent: SAFARI_IOS });
    const third = await signInAs(app, w, w.alice, { userAgent: FIREFOX });
    const page = await laptop.get("/u/alice/settings/security.md");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Firefox on Linux (this session)");
    expect(page.body).toContain("Safari on iOS");
    expect(page.body).toMatch(/\| 127\.0\.0\.1 \|/);
    expect(page.body).toContain("`end_session`");

    // Another person's security page is the same 404 as none.
    const bob = await signInAs(app, w, w.bob);
    expect((await bob.get("/u/alice/settings/security")).statusCode).toBe(404);

    const phoneRow = await db().session.findFirstOrThrow({
      where: { userId: w.alice.id, userAgent: SAFARI_IOS },
    });
    const ended = await laptop.post("/u/alice/settings/security/actions/end_session", {
      id: phoneRow.id,
      _confirm: "yes",
    });
    expect(ended.statusCode).toBe(303);
    expect(await signedIn(phone, "alice")).toBe(false);
    expect(await signedIn(laptop, "alice")).toBe(true);
    expect(await signedIn(third, "alice")).toBe(true);

    const others = await laptop.post("/u/alice/settings/security/actions/end_other_sessions", {
      _confirm: "yes",
    });
    expect(others.statusCode).toBe(303);
    expect(await signedIn(third, "alice")).toBe(false);
    expect(await signedIn(laptop, "alice")).toBe(true);
    expect(await db().session.count({ where: { userId: w.alice.id } })).toBe(1);
    expect(await signedIn(bob, "bob")).toBe(true);
  });

  it("refuses to end another person's session, naming none of it", async () => {
    const w = await makeWorld("sec");
    const alice = await signInAs(app, w, w.alice);
    await signInAs(app, w, w.bob);
    const bobs = await db().session.findFirstOrThrow({ where: { userId: w.bob.id } });
    const res = await alice.post("/u/alice/settings/security/actions/end_session", {
      id: bobs.id,
      _confirm: "yes",
    });
    expect(res.statusCode).toBe(404);
    expect(await db().session.count({ where: { id: bobs.id } })).toBe(1);
  });
});

describe("limits", () => {
  it("ends a session unused past the idle limit, and any past its absolute limit", async () => {
    const w = await makeWorld("sec");
    const idle = await signInAs(app, w, w.alice);
    const old = await signInAs(app, w, w.alice, { userAgent: SAFARI_IOS });
    await db().session.updateMany({
      where: { userId: w.alice.id, userAgent: FIREFOX },
      data: { lastSeenAt: new Date(Date.now() - 15 * 86_400_000) },
    });
    await db().session.updateMany({
      where: { userId: w.alice.id, userAgent: SAFARI_IOS },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect(await signedIn(idle, "alice")).toBe(false);
    expect(await signedIn(old, "alice")).toBe(false);
  });

  it("ends within thirty days of sign-in, and the cookie says so", async () => {
    const w = await makeWorld("sec");
    const browser = await signInAs(app, w, w.alice);
    const row = await db().session.findFirstOrThrow({ where: { userId: w.alice.id } });
    const days = (row.expiresAt.getTime() - row.createdAt.getTime()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);
    const cookie = browser.signIn.cookies.find((c) => c.name === "cadre_session");
    expect(cookie?.expires?.getTime()).toBe(Math.floor(row.expiresAt.getTime() / 1000) * 1000);
  });

  it("writes last use at most once a minute", async () => {
    const w = await makeWorld("sec");
    const browser = await signInAs(app, w, w.alice);
    const earlier = new Date(Date.now() - 5 * 60_000);
    await db().session.updateMany({ where: { userId: w.alice.id }, data: { lastSeenAt: earlier } });
    await browser.get("/u/alice/settings");
    const touched = await db().session.findFirstOrThrow({ where: { userId: w.alice.id } });
    expect(touched.lastSeenAt.getTime()).toBeGreaterThan(earlier.getTime() + 60_000);
    await browser.get("/u/alice/settings");
    const again = await db().session.findFirstOrThrow({ where: { userId: w.alice.id } });
    expect(again.lastSeenAt.getTime()).toBe(touched.lastSeenAt.getTime());
  });
});
