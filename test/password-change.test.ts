// change_password on the security page, through the real stack: the current password is
// needed, the new one is checked for strength (the reason in words), every other session
// ends, and the person is mailed; a new sign-in from a browser never seen is mailed too.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mailTo } from "./helpers/account-mail.ts";
import { makeWorld, md, PASSWORD, testPrisma } from "./helpers/app.ts";
import { type Inbox, startMailing } from "./helpers/inbox.ts";
import { SAFARI_IOS, signedIn, signInAs } from "./helpers/sessions.ts";

const NEW_PASSWORD = "seven lanterns drift over marble";
let app: FastifyInstance;
let inbox: Inbox;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ app, inbox, close } = await startMailing("password"));
});
afterAll(async () => {
  await close?.();
});
const db = () => testPrisma();
const path = "/u/bob/settings/security/actions/change_password";

describe("change password", () => {
  it("needs the current password, and a strong new one", async () => {
    const w = await makeWorld("pw");
    const bob = await signInAs(app, w, w.bob);
    const wrong = await bob.post(path, { current_password: "not it at all", new_password: NEW_PASSWORD });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toContain("this is not your current password");
    const weak = await md(app, w, w.bob, "POST", path, {
      current_password: PASSWORD,
      new_password: "bobbrown123",
    });
    expect(weak.statusCode).toBe(400);
    expect(weak.body).toMatch(/new_password.*(Too easy to guess|at least 10)/);
    const before = await db().user.findUniqueOrThrow({ where: { id: w.bob.id } });
    expect(before.passwordHash).toBeTruthy();
    // Nothing changed: the old password still signs in.
    expect((await signInAs(app, w, w.bob)).signIn.statusCode).toBe(303);
  });

  it("ends every other session, keeps this one, and tells the person by mail", async () => {
    const w = await makeWorld("pw");
    const here = await signInAs(app, w, w.bob);
    const elsewhere = await signInAs(app, w, w.bob, { userAgent: SAFARI_IOS });
    const res = await here.post(path, { current_password: PASSWORD, new_password: NEW_PASSWORD });
    expect(res.statusCode).toBe(303);
    expect(await signedIn(here, "bob")).toBe(true);
    expect(await signedIn(elsewhere, "bob")).toBe(false);
    expect((await signInAs(app, w, w.bob)).signIn.statusCode).toBe(401);
    expect((await signInAs(app, w, w.bob, { password: NEW_PASSWORD })).signIn.statusCode).toBe(303);
    const mail = await mailTo(inbox, w.bob.email, /Your Cadre password was changed/);
    expect(mail.text).toContain("Your password was changed. Your other session was ended.");
    expect(mail.text).not.toContain(NEW_PASSWORD);
    const events = await db().securityEvent.findMany({
      where: { userId: w.bob.id, kind: "password_changed" },
    });
    expect(events).toHaveLength(1);
  });
});

describe("new sign-ins", () => {
  it("mails a sign-in from a browser never seen before, but not the first ever, nor a known one", async () => {
    const w = await makeWorld("pw");
    const first = await signInAs(app, w, w.carol);
    // The same browser (its cookie kept) signing in again is no news.
    await signInAs(app, w, w.carol, { cookies: { cadre_browser: first.cookies.cadre_browser! } });
    await signInAs(app, w, w.carol, { userAgent: SAFARI_IOS });
    const mail = await mailTo(inbox, w.carol.email, /New sign-in to your Cadre account/);
    expect(mail.text).toContain("Safari on iOS");
    const events = await db().securityEvent.findMany({ where: { userId: w.carol.id, kind: "new_sign_in" } });
    expect(events).toHaveLength(1);
  });
});
