// Re-confirmation before sensitive changes (issue 44): an action marked `confirmRecent` asks a
// person on a session for their password (or a two-factor code) once the session's last
// confirmation is older than STEP_UP_MINUTES, in the same form and POST; never within the window,
// never a token. The session's clock is moved back in the database, never slept through.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { Secret, TOTP } from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { acceptTotpCode, pendingTotp, startTotpEnrolment } from "../src/services/accounts/totp.ts";
import { ALWAYS_BLOCKED } from "../src/services/agents/policy/capabilities.ts";
import { actions, pages } from "../src/services/catalog/catalog.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { createConnection } from "../src/services/tools/index.ts";
import { makeAgent } from "./helpers/agents.ts";
import {
  type Browser,
  buildTestApp,
  login,
  makeWorld,
  md,
  PASSWORD,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

let app: FastifyInstance;
beforeAll(async () => {
  // A low limit, so the throttle's lock is three wrong tries away.
  app = await buildTestApp({ STEP_UP_MINUTES: "10", LOGIN_ACCOUNT_MAX_FAILURES: "3" });
});
afterAll(async () => {
  await app.close();
});

const db = testPrisma;
const TOKENS = "/u/alice/settings/tokens";

/** The marked set, as the docs list it: a new mark is a line here and there. */
const MARKED = [
  "accept_tool_change",
  "add_api_key",
  "add_hostname",
  "add_rule",
  "add_tool_connection",
  "change_role",
  "create_api_token",
  "create_outgoing_webhook",
  "create_webhook",
  "remove_hostname",
  "remove_rule",
  "remove_sso_provider",
  "renew_recovery_codes",
  "restore_agent_version",
  "rotate_webhook_secret",
  "set_capabilities",
  "set_default_capabilities",
  "set_human_only",
  "set_invite_link",
  "set_sso_provider",
  "set_tool_hosts",
  "set_tool_level",
  "set_two_factor_policy",
  "sign_in_tool_connection",
  "start_two_factor",
  "turn_off_two_factor",
];

/** The person's sessions confirmed `minutes` ago, as if the window had passed. */
async function confirmedAgo(w: World, userId: string, minutes: number) {
  await db().session.updateMany({
    where: { tenantId: w.tenant.id, userId },
    data: { confirmedAt: new Date(Date.now() - minutes * 60_000) },
  });
}

const tokenCount = (w: World) =>
  db().apiToken.count({ where: { tenantId: w.tenant.id, userId: w.alice.id } });

/** A session's request in markdown (a script using a person's browser session), body as JSON. */
function sessionMd(w: World, browser: Browser, url: string, body: Record<string, unknown>) {
  return app.inject({
    method: "POST",
    url,
    headers: { host: w.host, accept: "text/markdown", "x-csrf-token": browser.csrf },
    cookies: browser.cookies,
    payload: body,
  });
}

const asksField = (res: LightMyRequestResponse) => res.body.includes('name="_reconfirm"');

// The first sign-in of the file warms up what every later one reuses (scrypt, the strength
// checker): on a busy shared machine that alone took over 30 s.
describe("a token behind re-confirmation, through the browser's form", { timeout: 120_000 }, () => {
  it("is not asked within the window; after it, the form asks and the same POST runs with the password", async () => {
    const w = await makeWorld("su");
    const browser = await login(app, w, w.alice);
    expect(asksField(await browser.get(TOKENS))).toBe(false);
    const within = await browser.post(TOKENS, { _action: "create_api_token", name: "fresh" });
    expect(within.statusCode).toBe(303);
    expect(await tokenCount(w)).toBe(2);

    await confirmedAgo(w, w.alice.id, 11);
    const page = await browser.get(TOKENS);
    expect(asksField(page)).toBe(true);
    expect(page.body).toContain("Your password or a two-factor code");
    const made = await browser.post(TOKENS, {
      _action: "create_api_token",
      name: "after the window",
      _reconfirm: PASSWORD,
    });
    expect(made.statusCode).toBe(303);
    expect(made.headers.location).toMatch(/^\/secrets\//);
    expect(await tokenCount(w)).toBe(3);
    const session = await db().session.findFirstOrThrow({ where: { userId: w.alice.id } });
    expect(Date.now() - session.confirmedAt.getTime()).toBeLessThan(60_000);
    // Confirmed now: the form stops asking.
    expect(asksField(await browser.get(TOKENS))).toBe(false);
  });

  it("refuses a wrong password: 400 naming the field, nothing created, the typed name kept, the password not", async () => {
    const w = await makeWorld("su");
    const browser = await login(app, w, w.alice);
    await confirmedAgo(w, w.alice.id, 30);
    const wrong = await browser.post(TOKENS, {
      _action: "create_api_token",
      name: "My laptop token",
      _reconfirm: "not-my-password-4711",
    });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toMatch(/class="field-error" id="[^"]*-reconfirm-error">this is not your password/);
    expect(wrong.body).toContain('value="My laptop token"');
    expect(wrong.body).not.toContain("not-my-password-4711");
    expect(asksField(wrong)).toBe(true);
    expect(await tokenCount(w)).toBe(1);
    // Sent without it (a form opened before the window ended): a 403 saying what to send.
    const missing = await browser.post(TOKENS, { _action: "create_api_token", name: "no proof" });
    expect(missing.statusCode).toBe(403);
    expect(missing.body).toContain("needs a recent confirmation that it is you");
    expect(asksField(missing)).toBe(true);
    expect(await tokenCount(w)).toBe(1);
  });

  it("throttles wrong tries like logins, in a scope of its own: the login still works", async () => {
    const w = await makeWorld("su");
    const browser = await login(app, w, w.alice);
    await confirmedAgo(w, w.alice.id, 30);
    const statuses: number[] = [];
    for (const attempt of [1, 2, 3, 4]) {
      const res = await browser.post(TOKENS, {
        _action: "create_api_token",
        name: `try ${attempt}`,
        _reconfirm: `wrong-${attempt}`,
      });
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([400, 400, 429, 429]);
    // Even the right password waits now: the lock is the person's, not the form's.
    const locked = await browser.post(TOKENS, {
      _action: "create_api_token",
      name: "late",
      _reconfirm: PASSWORD,
    });
    expect(locked.statusCode).toBe(429);
    expect(locked.headers["retry-after"]).toBeDefined();
    expect(await tokenCount(w)).toBe(1);
    // Signing in is another count.
    await login(app, w, w.alice);
  });
});

/** An authenticator app for `who`, confirmed with the code of the step before now: now's code is still unspent. */
async function withAuthenticator(w: World, who: { id: string; handle: string }) {
  const person = { id: who.id, tenantId: w.tenant.id, handle: who.handle };
  await startTotpEnrolment(db(), person);
  const pending = await pendingTotp(db(), person, w.tenant.name);
  const authenticator = new TOTP({ secret: Secret.fromBase32(pending!.secret), digits: 6, period: 30 });
  expect(
    await acceptTotpCode(db(), person, authenticator.generate({ timestamp: Date.now() - 30_000 }), {
      confirming: true,
    }),
  ).toBe(true);
  return authenticator;
}

describe("with two-factor", () => {
  it("a current authenticator code confirms instead of the password; the same code is not taken twice", async () => {
    const w = await makeWorld("su");
    const browser = await login(app, w, w.alice);
    const authenticator = await withAuthenticator(w, w.alice);
    await confirmedAgo(w, w.alice.id, 11);
    const code = authenticator.generate();
    const made = await browser.post(TOKENS, {
      _action: "create_api_token",
      name: "by code",
      _reconfirm: code,
    });
    expect(made.statusCode).toBe(303);
    expect(await tokenCount(w)).toBe(2);
    await confirmedAgo(w, w.alice.id, 11);
    const replayed = await browser.post(TOKENS, {
      _action: "create_api_token",
      name: "again",
      _reconfirm: code,
    });
    expect(replayed.statusCode).toBe(400);
    expect(await tokenCount(w)).toBe(2);
  });
});

describe("other clients", () => {
  it("a markdown client on a session gets a 403 naming `_reconfirm`, then runs with it", async () => {
    const w = await makeWorld("su");
    const browser = await login(app, w, w.alice);
    await confirmedAgo(w, w.alice.id, 11);
    const refused = await sessionMd(w, browser, `${TOKENS}/actions/create_api_token`, { name: "script" });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers["content-type"]).toContain("text/markdown");
    expect(refused.body).toContain("`_reconfirm`");
    const wrong = await sessionMd(w, browser, `${TOKENS}/actions/create_api_token`, {
      name: "script",
      _reconfirm: "nope",
    });
    expect(wrong.statusCode).toBe(400);
    expect(issuesOf(wrong.body)).toHaveProperty("_reconfirm");
    const made = await sessionMd(w, browser, `${TOKENS}/actions/create_api_token`, {
      name: "script",
      _reconfirm: PASSWORD,
    });
    expect(made.statusCode).toBe(201);
    expect(await tokenCount(w)).toBe(2);
  });

  it("a token with the manage scope is never asked; an act token cannot reach a marked action", async () => {
    const w = await makeWorld("su");
    await login(app, w, w.alice);
    await confirmedAgo(w, w.alice.id, 60);
    const made = await md(app, w, w.alice, "POST", `${TOKENS}/actions/create_api_token`, { name: "ci" });
    expect(made.statusCode).toBe(201);
    await makeAgent(w, w.alice, "scout");
    const { token } = await createApiToken(db(), w.tenant.id, w.alice.id, "act", { scope: "act" });
    const rule = await md(
      app,
      w,
      { ...w.alice, token },
      "POST",
      "/subagents/scout/settings/actions/add_rule",
      {
        action: "create_note",
        decision: "allow",
      },
    );
    expect(rule.statusCode).toBe(403);
    expect(rule.body).toContain("needs a signed-in session or a token with the `manage` scope");
  });

  it("/confirm refreshes the confirmation and returns to `next`; a wrong password is a 400 at the field", async () => {
    const w = await makeWorld("su");
    const browser = await login(app, w, w.alice);
    await confirmedAgo(w, w.alice.id, 20);
    const form = await browser.get(`/confirm?next=${encodeURIComponent(TOKENS)}`);
    expect(form.statusCode).toBe(200);
    expect(asksField(form)).toBe(true);
    const wrong = await browser.post("/confirm", { _reconfirm: "nope", next: TOKENS });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toContain("this is not your password");
    const right = await browser.post("/confirm", { _reconfirm: PASSWORD, next: TOKENS });
    expect(right.statusCode).toBe(303);
    expect(right.headers.location).toBe(TOKENS);
    expect(asksField(await browser.get(TOKENS))).toBe(false);
    // Off-site `next` is refused for the front page.
    await confirmedAgo(w, w.alice.id, 20);
    const away = await browser.post("/confirm", { _reconfirm: PASSWORD, next: "//evil.example" });
    expect(away.headers.location).toBe("/");
  });
});

describe("the marked set", () => {
  it("is the list the docs give; each is always blocked for agents", () => {
    const marked = actions.filter((action) => action.confirmRecent).map((action) => action.name);
    expect([...marked].sort()).toEqual(MARKED);
    const blocked = new Set<string>(ALWAYS_BLOCKED);
    expect(marked.filter((name) => !blocked.has(name))).toEqual([]);
  });

  it("every marked action refuses a stale session with the 403 naming `_reconfirm`, and runs nothing", async () => {
    const w = await makeWorld("su");
    await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
    await makeAgent(w, w.alice, "scout");
    const browser = await login(app, w, w.alice);
    await confirmedAgo(w, w.alice.id, 11);
    // A connection of alice's (OAuth: the one kind with a sign-in) for the connection pages' actions.
    const connection = await createConnection(db(), {
      tenantId: w.tenant.id,
      ownerUserId: w.alice.id,
      name: "Tracker",
      slug: "tracker",
      url: "http://127.0.0.1:9/mcp",
      authKind: "oauth",
      audience: "owner",
      createdById: w.alice.id,
    });
    const fill = (pattern: string) =>
      pattern
        .replace(":connection", connection.id)
        .replace("/u/:handle", "/u/alice")
        .replace("/subagents/:handle", "/subagents/scout")
        .replace("/settings/people/:handle", "/settings/people/bob")
        .replace(":studio", "general");
    const eventsBefore = await db().event.count({ where: { tenantId: w.tenant.id } });
    const failures: string[] = [];
    for (const name of MARKED) {
      const page = pages.find((candidate) => candidate.actions.includes(name))!;
      const res = await sessionMd(w, browser, `${fill(page.pattern)}/actions/${name}`, {});
      if (res.statusCode !== 403 || !res.body.includes("`_reconfirm`"))
        failures.push(`${name}: ${res.statusCode} ${res.body.slice(0, 160)}`);
    }
    expect(failures).toEqual([]);
    expect(await db().event.count({ where: { tenantId: w.tenant.id } })).toBe(eventsBefore);
  });
});
