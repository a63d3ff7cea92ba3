// Passkeys through the real stack, answered by a software authenticator (helpers/
// soft-authenticator.ts): added from a signed-in browser, used to sign in alone; each
// refusal the server owes: a removed passkey, someone else's, a replayed answer, a counter
// that went backwards, a challenge from another browser, a token instead of a session.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticationOptions, verifyPasskey } from "../src/services/accounts/passkeys.ts";
import { buildTestApp, login, makeWorld, md, PASSWORD, testPrisma } from "./helpers/app.ts";
import {
  addPasskey,
  atLogin,
  originOf,
  postJson,
  refusal,
  signInOptions,
  signInWithPasskey,
} from "./helpers/passkeys.ts";
import { signedIn } from "./helpers/sessions.ts";
import { assertion, createCredential } from "./helpers/soft-authenticator.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(() => app?.close());

const db = () => testPrisma();

describe("adding a passkey", () => {
  it("is kept with its name, told by mail, listed on the security page", async () => {
    const w = await makeWorld("pk");
    const bob = await login(app, w, w.bob);
    await addPasskey(app, w, bob, "Work laptop");
    const rows = await db().passkey.findMany({ where: { userId: w.bob.id } });
    expect(rows.map((row) => [row.name, row.tenantId, Number(row.counter)])).toEqual([
      ["Work laptop", w.tenant.id, 0],
    ]);
    const mail = await db().outboundEmail.findFirstOrThrow({
      where: { userId: w.bob.id, kind: "account.security.passkey_added" },
    });
    expect(mail.subject).toContain("A passkey was added");
    const page = await bob.get("/u/bob/settings/security.md");
    expect(page.body).toContain("Work laptop");
    expect(page.body).toContain("`rename_passkey`");
  });

  it("needs a session: a token is refused, and a challenge answered from another session is", async () => {
    const w = await makeWorld("pk");
    const viaToken = await app.inject({
      method: "POST",
      url: "/passkeys/registration/options",
      headers: { host: w.host, authorization: `Bearer ${w.bob.token}`, accept: "application/json" },
      payload: {},
    });
    expect(viaToken.statusCode).toBe(401);
    const laptop = await login(app, w, w.bob);
    const phone = await login(app, w, w.bob);
    const options = await postJson(app, w, laptop, "/passkeys/registration/options", {});
    const made = createCredential(options.json(), originOf(w));
    const elsewhere = await postJson(app, w, phone, "/passkeys/registration", {
      name: "Phone",
      response: made.response,
    });
    expect(elsewhere.statusCode).toBe(400);
    expect(refusal(elsewhere)).toContain("Passkey: this request expired or was answered already");
    const unnamed = await postJson(app, w, laptop, "/passkeys/registration", { name: " ", response: {} });
    expect(refusal(unnamed)).toContain("Name: required");
    expect(await db().passkey.count({ where: { userId: w.bob.id } })).toBe(0);
  });

  it("needs a recent confirmation: a stale session is sent to /confirm first", async () => {
    const w = await makeWorld("pk");
    const bob = await login(app, w, w.bob);
    await db().session.updateMany({
      where: { userId: w.bob.id },
      data: { confirmedAt: new Date(Date.now() - 60 * 60_000) },
    });
    const stale = await postJson(app, w, bob, "/passkeys/registration/options", {});
    expect(stale.statusCode).toBe(403);
    expect(refusal(stale)).toContain("/confirm?next=");
    const confirmed = await bob.post("/confirm", { _reconfirm: PASSWORD, next: "/u/bob/settings/security" });
    expect(confirmed.statusCode).toBe(303);
    expect((await postJson(app, w, bob, "/passkeys/registration/options", {})).statusCode).toBe(200);
  });
});

describe("signing in with a passkey alone", () => {
  it("signs its person in; a replayed answer is refused", async () => {
    const w = await makeWorld("pk");
    const credential = await addPasskey(app, w, await login(app, w, w.bob));
    const first = await signInWithPasskey(app, w, credential);
    expect(first.res.statusCode, first.res.body).toBe(303);
    expect(first.res.headers.location).toBe("/");
    const session = { ...first.browser, get: (url: string) => getAs(w.host, first.browser.cookies, url) };
    expect(await signedIn(session as never, "bob")).toBe(true);
    expect((await db().passkey.findFirstOrThrow({ where: { userId: w.bob.id } })).lastUsedAt).not.toBeNull();

    // The same answer again, from a browser that holds the challenge's binding: the challenge is spent.
    const again = await atLogin(app, w);
    await signInOptions(app, w, again);
    const replayed = await postJson(app, w, again, "/login/passkey", { response: first.response });
    expect(replayed.statusCode).toBe(400);
    expect(refusal(replayed)).toContain("answered already");
  });

  it("a challenge handed to one browser is worthless in another", async () => {
    const w = await makeWorld("pk");
    const credential = await addPasskey(app, w, await login(app, w, w.bob));
    const mine = await atLogin(app, w);
    const options = await signInOptions(app, w, mine);
    const theirs = await atLogin(app, w);
    const res = await postJson(app, w, theirs, "/login/passkey", {
      response: assertion(credential, options, originOf(w)),
    });
    expect(res.statusCode).toBe(400);
  });

  it("a removed passkey no longer signs in", async () => {
    const w = await makeWorld("pk");
    const bob = await login(app, w, w.bob);
    const credential = await addPasskey(app, w, bob);
    const row = await db().passkey.findFirstOrThrow({ where: { userId: w.bob.id } });
    const removed = await bob.post("/u/bob/settings/security/actions/remove_passkey", {
      id: row.id,
      _confirm: "yes",
    });
    expect(removed.statusCode).toBe(303);
    expect(await db().passkey.count({ where: { id: row.id } })).toBe(0);
    expect(
      await db().outboundEmail.count({
        where: { userId: w.bob.id, kind: "account.security.passkey_removed" },
      }),
    ).toBe(1);
    const { res } = await signInWithPasskey(app, w, credential);
    expect(res.statusCode).toBe(400);
    expect(refusal(res)).toContain("not registered in this workspace");
  });

  it("a counter that went backwards is refused, and the row keeps its count", async () => {
    const w = await makeWorld("pk");
    const credential = await addPasskey(app, w, await login(app, w, w.bob));
    // As if a copy of this authenticator had signed in 100 times meanwhile.
    await db().passkey.updateMany({ where: { userId: w.bob.id }, data: { counter: 100n } });
    const { res } = await signInWithPasskey(app, w, credential);
    expect(res.statusCode).toBe(400);
    expect(refusal(res)).toContain("counter");
    expect(Number((await db().passkey.findFirstOrThrow({ where: { userId: w.bob.id } })).counter)).toBe(100);
  });

  it("another workspace's passkey is refused", async () => {
    const w = await makeWorld("pk");
    const other = await makeWorld("pk");
    const credential = await addPasskey(app, w, await login(app, w, w.bob));
    const { res } = await signInWithPasskey(app, other, credential);
    expect(res.statusCode).toBe(400);
    expect(refusal(res)).toContain("not registered in this workspace");
  });

  it("a deactivated person's passkey signs nobody in", async () => {
    const w = await makeWorld("pk");
    const credential = await addPasskey(app, w, await login(app, w, w.bob));
    await db().user.update({ where: { id: w.bob.id }, data: { deactivatedAt: new Date() } });
    const { res } = await signInWithPasskey(app, w, credential);
    expect(res.statusCode).toBe(400);
    expect(refusal(res)).toContain("deactivated");
  });
});

describe("a challenge for one person's passkeys (the second step of a sign-in)", () => {
  it("refuses another person's passkey", async () => {
    const w = await makeWorld("pk");
    await addPasskey(app, w, await login(app, w, w.bob));
    const alices = await addPasskey(app, w, await login(app, w, w.alice));
    const rp = { id: w.host, origin: originOf(w), name: w.tenant.name };
    const bound = { tenantId: w.tenant.id, purpose: "second_factor" as const, binding: "session:test" };
    const options = await authenticationOptions(db(), rp, { ...bound, userId: w.bob.id });
    await expect(verifyPasskey(db(), rp, bound, assertion(alices, options, rp.origin))).rejects.toThrow(
      "belongs to someone else",
    );
  });
});

describe("renaming", () => {
  it("renames one's own passkey; someone else's is not found; an empty name is a 400 naming it", async () => {
    const w = await makeWorld("pk");
    const bob = await login(app, w, w.bob);
    await addPasskey(app, w, bob);
    const row = await db().passkey.findFirstOrThrow({ where: { userId: w.bob.id } });
    const renamed = await bob.post("/u/bob/settings/security/actions/rename_passkey", {
      id: row.id,
      name: "Old laptop",
    });
    expect(renamed.statusCode).toBe(303);
    expect((await db().passkey.findUniqueOrThrow({ where: { id: row.id } })).name).toBe("Old laptop");
    const alice = await login(app, w, w.alice);
    const theirs = await alice.post("/u/alice/settings/security/actions/rename_passkey", {
      id: row.id,
      name: "Mine now",
    });
    expect(theirs.statusCode).toBe(404);
    const empty = await app.inject({
      method: "POST",
      url: "/u/bob/settings/security/actions/rename_passkey",
      headers: { host: w.host, accept: "text/markdown", authorization: `Bearer ${w.bob.token}` },
      payload: { id: row.id, name: "" },
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain("`name`: must not be empty");
    expect((await md(app, w, w.bob, "GET", "/u/bob/settings/security")).body).toContain("Old laptop");
  });
});

async function getAs(host: string, cookies: Record<string, string>, url: string) {
  return app.inject({ method: "GET", url, headers: { host }, cookies });
}
