// "Forgot password" through the real stack: the web app writes the link's mail, the worker
// sends it over SMTP to a real server in the test; the link from the mail as received sets a
// new password, ends every other session and signs in. Unknown addresses get the same answer
// in about the same time; used, expired, withdrawn and other workspaces' links say which.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256 } from "../src/lib/ids.ts";
import { RESET_ANSWER_FLOOR_MS } from "../src/services/accounts/password-reset.ts";
import { linkIn, mailTo } from "./helpers/account-mail.ts";
import { buildTestApp, csrfOf, makeWorld, type Person, testPrisma, type World } from "./helpers/app.ts";
import { type Inbox, startMailing } from "./helpers/inbox.ts";
import { signedIn, signInAs } from "./helpers/sessions.ts";

const NEW_PASSWORD = "violet kettles argue quietly";
let app: FastifyInstance;
let inbox: Inbox;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ app, inbox, close } = await startMailing("reset"));
});
afterAll(async () => {
  await close?.();
});
const db = () => testPrisma();

/**
 * A signed-out browser's form POST, with the pre-session CSRF token of the page it came from;
 * `timed` gets how long the POST alone took.
 */
async function postForm(
  w: World,
  page: string,
  url: string,
  form: Record<string, string>,
  o: { on?: FastifyInstance; timed?: (ms: number) => void } = {},
) {
  const server = o.on ?? app;
  const first = await server.inject({ method: "GET", url: page, headers: { host: w.host } });
  const cookies = Object.fromEntries(first.cookies.map((cookie) => [cookie.name, cookie.value]));
  const started = performance.now();
  const res = await server.inject({
    method: "POST",
    url,
    headers: { host: w.host, "content-type": "application/x-www-form-urlencoded" },
    cookies,
    payload: new URLSearchParams({ _csrf: csrfOf(first) ?? "", ...form }).toString(),
  });
  o.timed?.(performance.now() - started);
  return res;
}

const forgot = (w: World, email: string) => postForm(w, "/forgot-password", "/forgot-password", { email });

async function resetLinkFor(w: World, who: Person, count = 1): Promise<string> {
  expect((await forgot(w, who.email)).statusCode).toBe(200);
  return linkIn(
    await mailTo(inbox, who.email, /Choose a new Cadre password/, count),
    "Choose a new password",
  );
}

describe("forgot password", () => {
  it("mails a single-use link that sets a new password, ends every other session and signs in", async () => {
    const w = await makeWorld("reset");
    const laptop = await signInAs(app, w, w.bob);
    const phone = await signInAs(app, w, w.bob);
    const link = await resetLinkFor(w, w.bob);
    expect(link).toMatch(/^\/reset-password\/[A-Za-z0-9_-]{40,}$/);
    // Only the token's hash is stored.
    const token = link.split("/").pop()!;
    expect(await db().oneTimeLink.count({ where: { tokenHash: sha256(token), purpose: "reset" } })).toBe(1);
    expect(await db().oneTimeLink.count({ where: { tokenHash: token } })).toBe(0);

    const form = await app.inject({ method: "GET", url: link, headers: { host: w.host } });
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain("New password");
    const weak = await postForm(w, link, link, { password: "password12345" });
    expect(weak.statusCode).toBe(400);
    expect(weak.body).toContain("Too easy to guess");

    const done = await postForm(w, link, link, { password: NEW_PASSWORD });
    expect(done.statusCode).toBe(303);
    expect(done.cookies.some((cookie) => cookie.name === "cadre_session" && cookie.value)).toBe(true);
    expect(await signedIn(laptop, "bob")).toBe(false);
    expect(await signedIn(phone, "bob")).toBe(false);
    expect(await db().session.count({ where: { userId: w.bob.id } })).toBe(1);
    expect((await signInAs(app, w, w.bob, { password: NEW_PASSWORD })).signIn.statusCode).toBe(303);

    const told = await mailTo(inbox, w.bob.email, /Your Cadre password was reset/);
    expect(told.text).toContain("Your 2 other sessions were ended");
    expect(told.text).not.toContain(token);
    const trail = await db().securityEvent.findMany({ where: { userId: w.bob.id, kind: "password_reset" } });
    expect(trail).toHaveLength(1);

    // Used once: the same link now says so, and what to do.
    const again = await postForm(w, "/forgot-password", link, { password: "another fine long phrase" });
    expect(again.statusCode).toBe(410);
    expect(again.body).toContain("already used");
    expect(again.body).toContain("Forgot password");
  });

  it("says which way a link fails: withdrawn by a newer one, expired, another workspace's", async () => {
    const w = await makeWorld("reset");
    const first = await resetLinkFor(w, w.carol);
    const second = await resetLinkFor(w, w.carol, 2);
    const withdrawn = await app.inject({ method: "GET", url: first, headers: { host: w.host } });
    expect(withdrawn.statusCode).toBe(410);
    expect(withdrawn.body).toContain("was withdrawn");

    const other = await makeWorld("reset");
    const elsewhere = await app.inject({ method: "GET", url: second, headers: { host: other.host } });
    expect(elsewhere.statusCode).toBe(410);
    expect(elsewhere.body).toContain("belongs to another workspace");

    await db().oneTimeLink.updateMany({
      where: { userId: w.carol.id, revokedAt: null },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const expired = await app.inject({
      method: "GET",
      url: second,
      headers: { host: w.host, accept: "text/markdown" },
    });
    expect(expired.statusCode).toBe(410);
    expect(expired.body).toContain("expired");
    expect(expired.headers["content-type"]).toContain("text/markdown");
  });

  it("answers an unknown address exactly as a known one, and mails nobody", async () => {
    const w = await makeWorld("reset");
    const known = await forgot(w, w.alice.email);
    const unknown = await forgot(w, `nobody@${w.tenant.subdomain}.test`);
    expect(unknown.statusCode).toBe(known.statusCode);
    expect(unknown.body.replace(/value="[^"]*"/g, "")).toBe(known.body.replace(/value="[^"]*"/g, ""));
    await mailTo(inbox, w.alice.email, /Choose a new Cadre password/);
    expect(inbox.to(`nobody@${w.tenant.subdomain}.test`)).toHaveLength(0);
  });

  it("takes about as long for an unknown address as for a known one", async () => {
    const w = await makeWorld("reset");
    // Its own app with room in the throttle: eighteen requests from one address in a window.
    const roomy = await buildTestApp({
      SMTP_URL: inbox.url,
      LOGIN_ACCOUNT_MAX_FAILURES: "1000",
      LOGIN_ADDRESS_MAX_FAILURES: "10000",
    });
    try {
      const timed = async (email: string, into: number[]) => {
        const res = await postForm(
          w,
          "/forgot-password",
          "/forgot-password",
          { email },
          {
            on: roomy,
            timed: (ms) => into.push(ms),
          },
        );
        expect(res.statusCode).toBe(200);
      };
      const known: number[] = [];
      const unknown: number[] = [];
      // Interleaved, so a busy spell of the machine falls on both alike.
      for (let round = 0; round < 9; round++) {
        await timed(w.alice.email, known);
        await timed(`nobody${round}@${w.tenant.subdomain}.test`, unknown);
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      // Both wait out the same floor; what is left is noise, well under the floor itself.
      expect(median(unknown)).toBeGreaterThanOrEqual(RESET_ANSWER_FLOOR_MS - 5);
      expect(median(known)).toBeGreaterThanOrEqual(RESET_ANSWER_FLOOR_MS - 5);
      expect(Math.abs(median(known) - median(unknown))).toBeLessThan(RESET_ANSWER_FLOOR_MS / 2);
      console.log(
        `forgot-password medians: known ${median(known).toFixed(0)} ms, unknown ${median(unknown).toFixed(0)} ms`,
      );
    } finally {
      await roomy.close();
    }
  });

  it("is throttled like logging in", async () => {
    const w = await makeWorld("reset");
    const answers: number[] = [];
    for (let attempt = 0; attempt < 11; attempt++) answers.push((await forgot(w, w.carol.email)).statusCode);
    expect(answers.slice(0, 10).every((status) => status === 200)).toBe(true);
    expect(answers[10]).toBe(429);
  });
});
