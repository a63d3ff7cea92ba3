// The sign-in's second step through the real stack: the policy forcing enrolment (and the
// half session reaching nothing else), a code after the password, a replayed code refused,
// one step of clock drift either side accepted and two refused, a recovery code working
// once, wrong codes throttled like passwords, and a mail for each change.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, makeWorld, testPrisma } from "./helpers/app.ts";
import { signedIn } from "./helpers/sessions.ts";
import { codeAt, enrolAtSignIn, halfSignIn, securityMails } from "./helpers/two-factor.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp({ LOGIN_ACCOUNT_MAX_FAILURES: "3", LOGIN_ADDRESS_MAX_FAILURES: "50" });
});
afterAll(async () => {
  await app?.close();
});
const db = () => testPrisma();
const STEP = 30_000;

describe("the workspace policy at sign-in", () => {
  it("sends a person without a second factor to enrol, and the half session reaches nothing else", async () => {
    const world = await makeWorld("tfp");
    await db().tenant.update({ where: { id: world.tenant.id }, data: { twoFactorPolicy: "everyone" } });
    const half = await halfSignIn(app, world, world.bob, { next: "/u/bob/settings" });
    expect(half.signIn.statusCode).toBe(303);
    expect(half.step).toBe(`/login/enrol?next=${encodeURIComponent("/u/bob/settings")}`);
    expect(await signedIn(half, "bob")).toBe(false);
    expect((await half.get("/login")).headers.location).toMatch(/^\/login\/enrol/);
    expect((await half.get("/login/verify")).headers.location).toMatch(/^\/login\/enrol/);
    const row = await db().session.findFirstOrThrow({ where: { userId: world.bob.id } });
    expect(row.stage).toBe("enrol");
    expect(row.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 10 * 60_000 + 5_000);

    expect((await half.post("/login/enrol", { code: "" })).statusCode).toBe(400);
    const { secret, codes, done } = await enrolAtSignIn(app, world, world.bob);
    expect(done.statusCode).toBe(200);
    expect(codes).toHaveLength(10);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(await securityMails(world.bob, "two_factor_enabled")).toHaveLength(1);
    // The mail tells, and holds no secret.
    const [mail] = await securityMails(world.bob, "two_factor_enabled");
    for (const secretText of [secret, ...codes]) expect(mail!.text + mail!.html).not.toContain(secretText);
  });

  it("asks admins only when the policy says admins", async () => {
    const world = await makeWorld("tfa");
    await db().user.update({ where: { id: world.alice.id }, data: { tenantAdmin: true } });
    await db().tenant.update({ where: { id: world.tenant.id }, data: { twoFactorPolicy: "admins" } });
    expect((await halfSignIn(app, world, world.alice)).step).toBe("/login/enrol");
    expect((await halfSignIn(app, world, world.bob)).step).toBe("/");
  });
});

describe("a code after the password", () => {
  it("signs in with the current code, and refuses the same code again", async () => {
    const world = await makeWorld("tfc");
    const { secret } = await enrolAtSignIn(app, world, world.carol);
    // The enrolment spent this step: a later one is the next code the app shows.
    const code = codeAt(secret, Date.now() + STEP);
    const half = await halfSignIn(app, world, world.carol, { next: "/u/carol/settings" });
    expect(half.step).toBe(`/login/verify?next=${encodeURIComponent("/u/carol/settings")}`);
    expect((await half.get(half.step)).body).toContain("Code from your authenticator app");
    expect(await signedIn(half, "carol")).toBe(false);
    const wrongEmpty = await half.post("/login/verify", { method: "totp", code: "" });
    expect(wrongEmpty.statusCode).toBe(400);
    expect(wrongEmpty.body).toContain("Code: required");
    const before = half.cookies.cadre_session;
    const ok = await half.post("/login/verify", { method: "totp", code, next: "/u/carol/settings" });
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe("/u/carol/settings");
    // A new token for the full session: the half one's cookie is worth nothing now.
    expect(half.cookies.cadre_session).not.toBe(before);
    expect(await signedIn(half, "carol")).toBe(true);

    const replay = await halfSignIn(app, world, world.carol);
    const refused = await replay.post("/login/verify", { method: "totp", code });
    expect(refused.statusCode).toBe(401);
    expect(await signedIn(replay, "carol")).toBe(false);
  });

  it("accepts a code from one step either side and refuses two", async () => {
    const world = await makeWorld("tfw");
    const { secret } = await enrolAtSignIn(app, world, world.bob);
    const now = Date.now();
    const fresh = async () => {
      // Each try starts from no accepted step, so only the window decides.
      await db().totpFactor.update({ where: { userId: world.bob.id }, data: { lastStep: 0 } });
      return halfSignIn(app, world, world.bob);
    };
    for (const offset of [-2, 2]) {
      const half = await fresh();
      expect(
        (await half.post("/login/verify", { code: codeAt(secret, now + offset * STEP) })).statusCode,
      ).toBe(401);
    }
    for (const offset of [-1, 1]) {
      const half = await fresh();
      expect(
        (await half.post("/login/verify", { code: codeAt(secret, now + offset * STEP) })).statusCode,
      ).toBe(303);
    }
  });

  it("takes a recovery code once, and tells the person", async () => {
    const world = await makeWorld("tfr");
    const { codes } = await enrolAtSignIn(app, world, world.alice);
    const first = await halfSignIn(app, world, world.alice);
    expect(
      (await first.post("/login/verify", { method: "recovery", code: codes[3]!.toUpperCase() })).statusCode,
    ).toBe(303);
    expect(await signedIn(first, "alice")).toBe(true);
    expect(await securityMails(world.alice, "recovery_code_used")).toHaveLength(1);
    const again = await halfSignIn(app, world, world.alice);
    expect((await again.get(again.step)).body).toContain("9 left");
    expect((await again.post("/login/verify", { method: "recovery", code: codes[3]! })).statusCode).toBe(401);
  });

  it("throttles wrong codes like wrong passwords", async () => {
    const world = await makeWorld("tft");
    const { secret } = await enrolAtSignIn(app, world, world.bob);
    const half = await halfSignIn(app, world, world.bob);
    const wrong = codeAt(secret, Date.now() + 10 * STEP);
    expect((await half.post("/login/verify", { code: wrong })).statusCode).toBe(401);
    expect((await half.post("/login/verify", { code: wrong })).statusCode).toBe(401);
    const locked = await half.post("/login/verify", { code: wrong });
    expect(locked.statusCode).toBe(429);
    expect(locked.body).toContain("Too many wrong codes");
    // Locked: even the right code waits.
    const right = await half.post("/login/verify", { code: codeAt(secret, Date.now() + STEP) });
    expect(right.statusCode).toBe(429);
    expect(Number(right.headers["retry-after"])).toBeGreaterThan(0);
  });
});
