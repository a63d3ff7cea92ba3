// The leak test for two-factor secrets and the SSO client secret (issue 44), as
// password-reset-leak.test.ts is for reset tokens. A TOTP seed is shown only while its
// enrolment is pending, to its owner; recovery codes only in the one answer that made them; the
// OIDC client secret only in the admin's own POST. After that none is in any HTTP answer (pages
// in both formats, the sign-in's steps), a log line of the app or the worker (at trace level),
// a job in Redis, a mail, or a database row in the clear: the seed and the client secret are
// sealed, the codes kept as hashes.
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mailTo } from "./helpers/account-mail.ts";
import { type Browser, login, makeWorld, testPrisma } from "./helpers/app.ts";
import { databaseDump, redisDump } from "./helpers/dumps.ts";
import { answers, expectClean, formsOf, type LeakStack, startLeakStack } from "./helpers/leak-stack.ts";
import { providerParams, ssoSignIn, startOidcProvider, type TestProvider } from "./helpers/oidc-provider.ts";
import { codeAt, halfSignIn, secretOn } from "./helpers/two-factor.ts";

let stack: LeakStack;
let provider: TestProvider;
beforeAll(async () => {
  stack = await startLeakStack("two-factor-leak");
  provider = await startOidcProvider();
});
afterAll(async () => {
  await stack?.close();
  await provider?.close();
});

/** A browser whose every answer is kept for the check. */
function recording(browser: Browser, seen: LightMyRequestResponse[]): Browser {
  const kept = (res: LightMyRequestResponse) => {
    seen.push(res);
    return res;
  };
  return {
    ...browser,
    get: async (url) => kept(await browser.get(url)),
    post: async (url, form) => kept(await browser.post(url, form)),
  };
}

/** Tables holding any of these in the clear (or hex-encoded). */
async function tablesHolding(secrets: string[]) {
  const rows = await databaseDump();
  const needles = secrets.flatMap(formsOf);
  return [...new Set(rows.filter((row) => needles.some((n) => row.row.includes(n))).map((row) => row.table))];
}

async function expectNowhereElse(secrets: string[], after: LightMyRequestResponse[]) {
  const { appLog, workerLog, env } = stack;
  expectClean("HTTP answers after creation", answers(after), secrets);
  expectClean("app log", appLog, secrets);
  expectClean("worker log", workerLog.raw, secrets);
  expectClean("Redis", await redisDump(env.config.REDIS_URL, env.config.QUEUE_PREFIX), secrets);
  expect(await tablesHolding(secrets)).toEqual([]);
}

describe("the leak test for two-factor and single sign-on secrets", () => {
  it("shows a TOTP seed while pending and the recovery codes once; neither anywhere else", async () => {
    const { app, inbox } = stack;
    const world = await makeWorld("tfl");
    const during: LightMyRequestResponse[] = [];
    const after: LightMyRequestResponse[] = [];
    const setUp = recording(await login(app, world, world.bob), during);
    const security = "/u/bob/settings/security";
    await setUp.post(`${security}/actions/start_two_factor`, {});
    const seed = secretOn(await setUp.get(security));
    const confirmed = await setUp.post(`${security}/actions/confirm_two_factor`, { code: codeAt(seed) });
    expect(confirmed.statusCode).toBe(303);
    const reveal = await setUp.get(String(confirmed.headers.location));
    const codes = [...new Set([...reveal.body.matchAll(/\b([a-z0-9]{5}-[a-z0-9]{5})\b/g)].map((m) => m[1]!))];
    expect(codes).toHaveLength(10);

    const bob = recording(setUp, after);
    await bob.get(String(confirmed.headers.location));
    await bob.get(security);
    await bob.get(`${security}.md`);
    await bob.get("/u/bob/settings");
    const half = await halfSignIn(app, world, world.bob);
    after.push(half.signIn, await half.get("/login/verify"));
    after.push(await half.post("/login/verify", { code: "000000" }));
    after.push(await half.post("/login/verify", { method: "recovery", code: codes[0]! }));
    await mailTo(inbox, world.bob.email, /Two-factor was turned on/);
    await mailTo(inbox, world.bob.email, /A recovery code was used/);

    const spaced = seed.replace(/(.{4})(?=.)/g, "$1 ");
    await expectNowhereElse([seed, spaced, ...codes], after);
  }, 180_000);

  it("takes the OIDC client secret once, uses it to sign in, and puts it nowhere else", async () => {
    const { app } = stack;
    const world = await makeWorld("ssl");
    await testPrisma().user.update({ where: { id: world.alice.id }, data: { tenantAdmin: true } });
    const after: LightMyRequestResponse[] = [];
    const alice = await login(app, world, world.alice);
    const { client_secret, ...rest } = providerParams(provider, { allowed_domains: "example.test" });
    const saved = await alice.post("/settings/sso/actions/set_sso_provider", {
      ...Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, String(v)])),
      client_secret,
    });
    expect(saved.statusCode).toBe(303);
    const admin = recording(alice, after);
    await admin.get(String(saved.headers.location));
    await admin.get("/settings/sso");
    await admin.get("/settings/sso.md");
    await admin.get("/settings/sso/actions/set_sso_provider");
    const login_ = `leak-${Math.random().toString(36).slice(2, 8)}`;
    provider.addAccount(login_, { email: world.bob.email });
    const signed = await ssoSignIn(app, world, login_);
    expect(signed.res.statusCode).toBe(303);
    after.push(signed.res, await signed.browser.get("/"));

    await expectNowhereElse([client_secret], after);
  }, 180_000);
});
