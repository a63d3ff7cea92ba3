// Two-factor from a signed-in person's security page, and the workspace's requirement set by an
// admin on /settings/sign-in (issue 44), through the real stack: set up an authenticator (its
// secret only while pending, a wrong code a 400 naming the field, the recovery codes shown once),
// the next sign-in asking for a code, new recovery codes killing the old, turning it off (refused
// while the workspace requires it), the requirement mailing the people it newly asks and
// sending them to enrol; and a passkey answering the sign-in's second step.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiToken } from "../src/services/tokens.ts";
import { type Browser, buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { addPasskey, originOf, postJson, refusal } from "./helpers/passkeys.ts";
import { signedIn } from "./helpers/sessions.ts";
import { assertion } from "./helpers/soft-authenticator.ts";
import { codeAt, enrolAtSignIn, halfSignIn, secretOn, securityMails } from "./helpers/two-factor.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app?.close();
});
const db = () => testPrisma();
const STEP = 30_000;
const SECURITY = "/u/bob/settings/security";
const action = (name: string) => `${SECURITY}/actions/${name}`;

/** A browser's form answer followed, as a browser does (Post/Redirect/Get; a secret waits at /secrets/…). */
async function followed(browser: Browser, res: LightMyRequestResponse) {
  expect(res.statusCode).toBe(303);
  return browser.get(String(res.headers.location));
}

/** The recovery codes shown once in an action's answer (the secret box, one per line). */
const codesIn = (body: string) => [...body.matchAll(/\b([a-z0-9]{5}-[a-z0-9]{5})\b/g)].map((m) => m[1]!);

async function enrolOnSecurityPage(world: World) {
  const bob = await login(app, world, world.bob);
  const page = await followed(bob, await bob.post(action("start_two_factor"), {}));
  expect(page.body).toContain("Scan the QR code");
  const secret = secretOn(page);
  return { bob, secret, page };
}

describe("setting up an authenticator on the security page", () => {
  it("shows the secret while pending, refuses a wrong code by its label, shows the codes once", async () => {
    const world = await makeWorld("tfs");
    const { bob, secret, page } = await enrolOnSecurityPage(world);
    expect(page.body).toContain('class="qr-code"');
    expect(page.body).toContain("otpauth://totp/");

    const wrong = await bob.post(action("confirm_two_factor"), { code: "000000" });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toContain("Code from the app");
    const done = await followed(bob, await bob.post(action("confirm_two_factor"), { code: codeAt(secret) }));
    const codes = [...new Set(codesIn(done.body))];
    expect(codes).toHaveLength(10);
    expect(done.body).toContain("Your recovery codes");

    // After: on, no secret, no code on the page again; the person mailed without a secret.
    const after = await bob.get(SECURITY);
    expect(after.body).toContain("<strong>On</strong>");
    expect(after.body).not.toContain(secret);
    for (const code of codes) expect(after.body).not.toContain(code);
    const [mail] = await securityMails(world.bob, "two_factor_enabled");
    for (const text of [secret, ...codes]) expect(mail!.text + mail!.html).not.toContain(text);

    // The next sign-in asks for a code, and takes a later one.
    const half = await halfSignIn(app, world, world.bob);
    expect(half.step).toBe("/login/verify");
    await half.post("/login/verify", { code: codeAt(secret, Date.now() + STEP) });
    expect(await signedIn(half, "bob")).toBe(true);
  });

  it("a token needs the manage scope; an act token is refused", async () => {
    const world = await makeWorld("tft");
    const { token } = await createApiToken(db(), world.tenant.id, world.bob.id, "script", { scope: "act" });
    const res = await md(app, world, { ...world.bob, token }, "POST", action("start_two_factor"), {});
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("manage");
    expect(await db().totpFactor.count({ where: { userId: world.bob.id } })).toBe(0);
  });

  it("new recovery codes kill the old ones", async () => {
    const world = await makeWorld("tfr");
    const { browser: bob, codes: first } = await enrolAtSignIn(app, world, world.bob);
    const renewed = await followed(bob, await bob.post(action("renew_recovery_codes"), {}));
    const fresh = [...new Set(codesIn(renewed.body))].filter((code) => !first.includes(code));
    expect(fresh).toHaveLength(10);
    expect(await securityMails(world.bob, "recovery_codes_regenerated")).toHaveLength(1);

    const old = await halfSignIn(app, world, world.bob);
    expect((await old.post("/login/verify", { method: "recovery", code: first[0]! })).statusCode).toBe(401);
    const ok = await halfSignIn(app, world, world.bob);
    await ok.post("/login/verify", { method: "recovery", code: fresh[0]! });
    expect(await signedIn(ok, "bob")).toBe(true);
  });

  it("turns off, mailed; refused while the workspace requires it and no passkey stands in", async () => {
    const world = await makeWorld("tfo");
    const { browser: bob } = await enrolAtSignIn(app, world, world.bob);
    await db().tenant.update({ where: { id: world.tenant.id }, data: { twoFactorPolicy: "everyone" } });
    const refused = await bob.post(action("turn_off_two_factor"), {});
    expect(refused.statusCode).toBe(409);
    expect(refused.body).toContain("requires two-factor sign-in");
    expect(await db().totpFactor.count({ where: { userId: world.bob.id } })).toBe(1);

    await db().tenant.update({ where: { id: world.tenant.id }, data: { twoFactorPolicy: "off" } });
    await followed(bob, await bob.post(action("turn_off_two_factor"), {}));
    expect(await db().totpFactor.count({ where: { userId: world.bob.id } })).toBe(0);
    expect(await db().recoveryCode.count({ where: { userId: world.bob.id } })).toBe(0);
    expect(await securityMails(world.bob, "two_factor_disabled")).toHaveLength(1);
    expect((await halfSignIn(app, world, world.bob)).step).toBe("/");
  });
});

describe("the workspace's requirement (/settings/sign-in)", () => {
  it("an admin requires it of everyone: those without a factor are mailed and enrol at sign-in", async () => {
    const world = await makeWorld("tfw");
    await db().user.update({ where: { id: world.alice.id }, data: { tenantAdmin: true } });
    const { browser: carol } = await enrolAtSignIn(app, world, world.carol);
    const alice = await login(app, world, world.alice);

    const bad = await alice.post("/settings/sign-in/actions/set_two_factor_policy", { policy: "sometimes" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("Two-factor sign-in");

    const set = await followed(
      alice,
      await alice.post("/settings/sign-in/actions/set_two_factor_policy", { policy: "everyone" }),
    );
    expect(set.body).toContain("Required for everyone");
    expect((await db().tenant.findUniqueOrThrow({ where: { id: world.tenant.id } })).twoFactorPolicy).toBe(
      "everyone",
    );
    // Bob and alice have no second factor: mailed. Carol has one: not.
    expect(await securityMails(world.bob, "two_factor_policy_changed")).toHaveLength(1);
    expect(await securityMails(world.alice, "two_factor_policy_changed")).toHaveLength(1);
    expect(await securityMails(world.carol, "two_factor_policy_changed")).toHaveLength(0);
    const audit = await db().event.findMany({
      where: { tenantId: world.tenant.id, type: "workspace.two_factor_policy_set" },
    });
    expect(audit).toHaveLength(1);
    expect((await halfSignIn(app, world, world.bob)).step).toBe("/login/enrol");

    // A member reads it and cannot change it.
    const read = await carol.get("/settings/sign-in");
    expect(read.body).toContain("Required for everyone");
    expect(read.body).toContain("Only workspace admins change the requirement");
    const refused = await carol.post("/settings/sign-in/actions/set_two_factor_policy", { policy: "off" });
    expect(refused.statusCode).toBe(403);
  });
});

describe("a passkey as the second step after a password", () => {
  it("signs its own person in; another's passkey and a replay are refused", async () => {
    const world = await makeWorld("tfk");
    const bobs = await addPasskey(app, world, await login(app, world, world.bob));
    const alices = await addPasskey(app, world, await login(app, world, world.alice));

    const half = await halfSignIn(app, world, world.bob, { next: "/u/bob/settings" });
    expect(half.step).toBe(`/login/verify?next=${encodeURIComponent("/u/bob/settings")}`);
    const page = await half.get(half.step);
    expect(page.body).toContain("Use a passkey");
    const options = (await postJson(app, world, half, "/login/verify/passkey/options", {})).json();
    expect(options.allowCredentials.map((c: { id: string }) => c.id)).toEqual([bobs.id]);

    const foreign = await postJson(app, world, half, "/login/verify/passkey", {
      response: assertion(alices, options, originOf(world)),
    });
    expect(foreign.statusCode).toBe(400);
    expect(await signedIn(half, "bob")).toBe(false);

    const again = (await postJson(app, world, half, "/login/verify/passkey/options", {})).json();
    const answer = assertion(bobs, again, originOf(world));
    const done = await postJson(app, world, half, "/login/verify/passkey", {
      response: answer,
      next: "/u/bob/settings",
    });
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe("/u/bob/settings");
    expect(await signedIn(half, "bob")).toBe(true);

    const replay = await postJson(
      app,
      world,
      await halfSignIn(app, world, world.bob),
      "/login/verify/passkey",
      {
        response: answer,
      },
    );
    expect(replay.statusCode).toBe(400);
    expect(refusal(replay)).toMatch(/expired|answered|challenge/i);
  });

  it("is refused without a sign-in waiting for its second step", async () => {
    const world = await makeWorld("tfn");
    const bob = await login(app, world, world.bob);
    const res = await postJson(app, world, bob, "/login/verify/passkey/options", {});
    expect(res.statusCode).toBe(401);
  });
});
