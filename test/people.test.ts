import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, sha256 } from "../src/lib/ids.ts";
import { notifyForEvent } from "../src/services/notifications.ts";
import { createApiToken } from "../src/services/tokens.ts";
import {
  act,
  actionNames,
  buildTestApp,
  login,
  makeWorld,
  md,
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

const db = testPrisma();
let app: FastifyInstance;
let w: World;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("ppl");
});
afterAll(async () => app.close());

/** `author` posts a note mentioning `mentioned`; the worker's service turns it into notifications. */
async function mention(world: World, author: Person, mentioned: Person, text = "look") {
  const out = await act(world, author, "/studios/general/notes", "create_note", {
    text: `${text} @${mentioned.handle}`,
  });
  const ev = await db.event.findFirstOrThrow({ where: { subjectId: out.location.split("/").pop()! } });
  await notifyForEvent(db, ev.id);
  return db.notification.findFirstOrThrow({ where: { eventId: ev.id, userId: mentioned.id } });
}
const unread = (p: Person) => db.notification.count({ where: { userId: p.id, dismissedAt: null } });

describe("whoami and profiles", () => {
  it("whoami names the actor, their studios and unread notifications, in both formats", async () => {
    const world = await makeWorld("ppl");
    const n = await mention(world, world.alice, world.bob, "whoami check");
    const res = await md(app, world, world.bob, "GET", "/whoami");
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(
      `You are Bob Brown ([@bob](/u/bob)), a person in the Tenant ${world.tenant.subdomain}`,
    );
    expect(res.body).toContain("- [General](/studios/general) (`general`) — member");
    expect(res.body).toContain(`## Unread notifications (1)`);
    expect(res.body).toContain(`mentioned you in [whoami check @bob](${n.path})`);
    expect(actionNames(res.body)).toEqual([]);
    const carol = await md(app, world, world.carol, "GET", "/whoami.md");
    expect(carol.body).toContain("## Your studios\n\n_None yet._");
    expect(carol.body).toContain("_Nothing unread._");
    const html = await (await login(app, world, world.bob)).get("/whoami");
    expect(html.headers["content-type"]).toContain("text/html");
    expect(html.body).toContain('<span class="badge">1</span>');
  });

  it("whoami names a subagent's owner", async () => {
    const scout = await db.user.create({
      data: {
        id: newId(),
        tenantId: w.tenant.id,
        handle: "scout",
        name: "Scout",
        kind: "subagent",
        parentId: w.alice.id,
      },
    });
    const { token } = await createApiToken(db, w.tenant.id, scout.id, "agent");
    const res = await md(
      app,
      w,
      { id: scout.id, handle: "scout", name: "Scout", email: "", token },
      "GET",
      "/whoami",
    );
    expect(res.body).toContain("a subagent in the");
    expect(res.body).toContain("Your owner is Alice Adams ([@alice](/u/alice)).");
  });

  it("shows profiles with shared studios; the settings link only to their owner", async () => {
    const mine = await md(app, w, w.alice, "GET", "/u/alice");
    expect(mine.statusCode).toBe(200);
    expect(mine.body).toContain("# Alice Adams");
    expect(mine.body).toContain("- [General](/studios/general)");
    expect(mine.body).toContain("(/u/alice/settings)");
    const seen = await md(app, w, w.bob, "GET", "/u/alice");
    expect(seen.body).toContain("- [General](/studios/general)");
    expect(seen.body).not.toContain("/u/alice/settings");
    const byCarol = await md(app, w, w.carol, "GET", "/u/alice");
    expect(byCarol.body).toContain("## Studios you share\n\n_None._");
    expect((await md(app, w, w.bob, "GET", "/u/nobody")).statusCode).toBe(404);
    const html = await (await login(app, w, w.carol)).get("/u/bob");
    expect(html.statusCode).toBe(200);
    expect(html.body).toContain("Bob Brown");
  });
});

describe("settings and update_profile", () => {
  it("settings exist only for their owner: anyone else gets 404 and changes nothing", async () => {
    const own = await md(app, w, w.bob, "GET", "/u/bob/settings");
    expect(own.statusCode).toBe(200);
    expect(own.body).toContain(`Name: **Bob Brown** · handle \`bob\` · email ${w.bob.email}`);
    expect(actionNames(own.body)).toEqual(["update_profile"]);
    for (const url of ["/u/bob/settings", "/u/bob/settings/tokens", "/u/bob/settings/actions/update_profile"])
      expect((await md(app, w, w.alice, "GET", url)).statusCode).toBe(404);
    const post = await md(app, w, w.alice, "POST", "/u/bob/settings/actions/update_profile", {
      name: "Hacked",
    });
    expect(post.statusCode).toBe(404);
    const html = await (await login(app, w, w.alice)).post("/u/bob/settings/actions/update_profile", {
      name: "X",
    });
    expect(html.statusCode).toBe(404);
    expect((await db.user.findUniqueOrThrow({ where: { id: w.bob.id } })).name).toBe("Bob Brown");
  });

  it("updates name and bio from markdown and from a form", async () => {
    const world = await makeWorld("ppl");
    const res = await md(app, world, world.bob, "POST", "/u/bob/settings/actions/update_profile", {
      name: "  Robert  ",
      bio: "Likes *tea*",
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**Profile updated**");
    expect(res.body).toContain("Name: **Robert**");
    expect(await db.user.findUniqueOrThrow({ where: { id: world.bob.id } })).toMatchObject({
      name: "Robert",
      bio: "Likes *tea*",
    });
    expect((await md(app, world, world.alice, "GET", "/u/bob")).body).toContain("> Likes *tea*");
    const b = await login(app, world, world.bob);
    // The form starts from the current values; a field emptied in it clears that value.
    expect((await b.get("/u/bob/settings")).body).toContain("Likes *tea*</textarea>");
    const form = await b.post("/u/bob/settings/actions/update_profile", { name: "Bobby", bio: "" });
    expect(form.statusCode).toBe(303);
    expect(form.headers.location).toBe("/u/bob/settings");
    expect((await b.get("/u/bob/settings")).body).toContain("Profile updated");
    expect(await db.user.findUniqueOrThrow({ where: { id: world.bob.id } })).toMatchObject({
      name: "Bobby",
      bio: "",
    });
  });

  it("rejects bad input, naming every field, changing nothing", async () => {
    const url = "/u/alice/settings/actions/update_profile";
    const cases: [Record<string, unknown>, string[]][] = [
      [{}, ["give a name or a bio to change"]],
      [{ name: "" }, ["`name`: must not be empty"]],
      [{ name: "n".repeat(81), bio: "b".repeat(2001) }, ["`name`: at most 80", "`bio`: at most 2000"]],
      [{ name: 7, handle: "root" }, ["`name`", "`handle`: unknown parameter"]],
    ];
    for (const [body, messages] of cases) {
      const res = await md(app, w, w.alice, "POST", url, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      for (const m of messages) expect(res.body).toContain(m);
    }
    const form = await (await login(app, w, w.alice)).post(url, { name: "", bio: "" });
    expect(form.statusCode).toBe(400);
    expect(issuesOf(form.body).name).toBe("must not be empty");
    expect(await db.user.findUniqueOrThrow({ where: { id: w.alice.id } })).toMatchObject({
      name: "Alice Adams",
      bio: "",
    });
  });
});

describe("API tokens", () => {
  it("creates a token shown once, stored hashed, that works as a Bearer token", async () => {
    const world = await makeWorld("ppl");
    const res = await md(app, world, world.bob, "POST", "/u/bob/settings/tokens/actions/create_api_token", {
      name: "laptop script",
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe("/u/bob/settings/tokens");
    const token = /Your new token: `(cadre_[a-z0-9]{8}_[A-Za-z0-9_-]+)`/.exec(res.body)?.[1];
    expect(token).toBeDefined();
    const row = await db.apiToken.findFirstOrThrow({
      where: { userId: world.bob.id, name: "laptop script" },
    });
    expect(row.tokenHash).toBe(sha256(token!));
    expect(token!.startsWith(`cadre_${row.prefix}_`)).toBe(true);
    const me = await md(app, world, { ...world.bob, token: token! }, "GET", "/u/bob/settings/tokens");
    expect(me.statusCode).toBe(200);
    expect(me.body).toContain(
      `| [laptop script](/u/bob/settings/tokens/${row.id}) | \`cadre_${row.prefix}_…\` | act | \`${row.id}\` |`,
    );
    expect(me.body).not.toContain(token!);
    // A new token acts unless asked to manage: it may not mint or revoke tokens.
    expect(actionNames(me.body)).toEqual([]);
  });

  it("a form-created token: a redirect to the page that shows it once, never in a cookie, the redirect or a reload", async () => {
    const b = await login(app, w, w.carol);
    const res = await b.post("/u/carol/settings/tokens", { _action: "create_api_token", name: "browser" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(/^\/secrets\/[a-z0-9]{24}$/);
    const shown = await b.get(res.headers.location!);
    expect(shown.statusCode).toBe(200);
    expect(shown.headers["cache-control"]).toBe("no-store");
    const token = /<code class="token copyable">([^<]+)<\/code>/.exec(shown.body)?.[1];
    expect(token).toMatch(/^cadre_/);
    expect(JSON.stringify(res.headers)).not.toContain(token!);
    expect((await b.get("/u/carol/settings/tokens")).body).not.toContain(token!);
    const again = await b.get(res.headers.location!);
    expect(again.statusCode).toBe(410);
    expect(again.body).not.toContain(token!);
  });

  it("rejects bad names, writing nothing", async () => {
    const before = await db.apiToken.count({ where: { userId: w.alice.id } });
    const url = "/u/alice/settings/tokens/actions/create_api_token";
    const cases: [Record<string, unknown>, string][] = [
      [{}, "`name`: required"],
      [{ name: "  " }, "`name`: must not be empty"],
      [{ name: "x".repeat(81) }, "`name`: at most 80 characters"],
      [{ name: "ok", owner: "bob" }, "`owner`: unknown parameter"],
      [{ name: "ok", scope: "admin" }, "`scope`"],
    ];
    for (const [body, message] of cases) {
      const res = await md(app, w, w.alice, "POST", url, body);
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain(message);
    }
    expect(await db.apiToken.count({ where: { userId: w.alice.id } })).toBe(before);
  });

  it("revokes a token: it stops working; revoking twice is a 409", async () => {
    const world = await makeWorld("ppl");
    const { token, row } = await createApiToken(db, world.tenant.id, world.bob.id, "old");
    const url = "/u/bob/settings/tokens/actions/revoke_api_token";
    const res = await md(app, world, world.bob, "POST", url, { id: row.id });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**Revoked “old”**");
    expect(res.body).toMatch(/\| \[old\]\(\/u\/bob\/settings\/tokens\/\w+\) \| .* \| revoked /);
    expect((await db.apiToken.findUniqueOrThrow({ where: { id: row.id } })).revokedAt).toBeInstanceOf(Date);
    expect((await md(app, world, { ...world.bob, token }, "GET", "/whoami")).statusCode).toBe(401);
    const twice = await md(app, world, world.bob, "POST", url, { id: row.id });
    expect(twice.statusCode).toBe(409);
    expect(twice.body).toContain("already revoked");
  });

  it("cannot revoke someone else's token, an unknown id or a malformed one", async () => {
    const world = await makeWorld("ppl");
    const alices = await createApiToken(db, world.tenant.id, world.alice.id, "alice's");
    const url = "/u/bob/settings/tokens/actions/revoke_api_token";
    expect((await md(app, world, world.bob, "POST", url, { id: alices.row.id })).statusCode).toBe(404);
    expect((await md(app, world, world.bob, "POST", url, { id: newId() })).statusCode).toBe(404);
    const onHers = await md(
      app,
      world,
      world.bob,
      "POST",
      "/u/alice/settings/tokens/actions/revoke_api_token",
      {
        id: alices.row.id,
      },
    );
    expect(onHers.statusCode).toBe(404);
    const bad = await md(app, world, world.bob, "POST", url, { id: "../x", extra: true });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("`id`: not a valid id");
    expect(bad.body).toContain("`extra`: unknown parameter");
    expect((await md(app, world, world.bob, "POST", url, {})).body).toContain("`id`: required");
    expect((await db.apiToken.findUniqueOrThrow({ where: { id: alices.row.id } })).revokedAt).toBeNull();
    const b = await login(app, world, world.bob);
    const page = await b.get("/u/bob/settings/tokens");
    const own = await db.apiToken.findFirstOrThrow({ where: { userId: world.bob.id } });
    expect(page.body).toContain(`name="id" value="${own.id}"`);
    const form = await b.post(url, { id: own.id });
    expect(form.statusCode).toBe(303);
    expect((await b.get("/u/bob/settings/tokens")).body).toContain("Revoked “test”");
  });
});

describe("notifications", () => {
  it("lists unread notifications with a dismiss form, in both formats", async () => {
    const world = await makeWorld("ppl");
    const n = await mention(world, world.alice, world.bob, "list me");
    const res = await md(app, world, world.bob, "GET", "/notifications");
    expect(res.body).toContain("1 unread notification.");
    expect(res.body).toContain(`notification \`${n.id}\``);
    expect(res.body).toContain("> list me @bob");
    expect(actionNames(res.body)).toEqual(["dismiss", "dismiss_all"]);
    const html = await (await login(app, world, world.bob)).get("/notifications");
    expect(html.body).toContain(`name="id" value="${n.id}"`);
    expect((await md(app, world, world.alice, "GET", "/notifications")).body).toContain(
      "_You are all caught up._",
    );
  });

  it("dismisses one; again, someone else's or a malformed id is refused", async () => {
    const world = await makeWorld("ppl");
    const toBob = await mention(world, world.alice, world.bob);
    const toAlice = await mention(world, world.bob, world.alice);
    const url = "/notifications/actions/dismiss";
    const res = await md(app, world, world.bob, "POST", url, { id: toBob.id });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**Dismissed**");
    expect(res.body).toContain("_You are all caught up._");
    expect((await db.notification.findUniqueOrThrow({ where: { id: toBob.id } })).dismissedAt).toBeInstanceOf(
      Date,
    );
    expect((await md(app, world, world.bob, "POST", url, { id: toBob.id })).statusCode).toBe(404);
    expect((await md(app, world, world.bob, "POST", url, { id: toAlice.id })).statusCode).toBe(404);
    const bad = await md(app, world, world.bob, "POST", url, { id: "NOT AN ID" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("`id`: not a valid id");
    expect((await md(app, world, world.bob, "POST", url, {})).body).toContain("`id`: required");
    expect(await unread(world.alice)).toBe(1);
    const other = await makeWorld("ppl");
    expect((await md(app, other, other.alice, "POST", url, { id: toAlice.id })).statusCode).toBe(404);
    expect(await unread(world.alice)).toBe(1);
  });

  it("dismisses from a browser form with a flash", async () => {
    const world = await makeWorld("ppl");
    const n = await mention(world, world.alice, world.bob);
    const b = await login(app, world, world.bob);
    const res = await b.post("/notifications/actions/dismiss", { id: n.id });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/notifications");
    expect((await b.get("/notifications")).body).toContain("Dismissed");
    expect(await unread(world.bob)).toBe(0);
  });

  it("dismiss_all dismisses only the actor's notifications", async () => {
    const world = await makeWorld("ppl");
    await mention(world, world.alice, world.bob, "one");
    await mention(world, world.alice, world.bob, "two");
    await mention(world, world.bob, world.alice, "three");
    const bad = await md(app, world, world.bob, "POST", "/notifications/actions/dismiss_all", { all: true });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("`all`: unknown parameter (expected: none)");
    expect(await unread(world.bob)).toBe(2);
    const res = await md(app, world, world.bob, "POST", "/notifications/actions/dismiss_all", {});
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**Marked 2 notifications read**");
    expect(await unread(world.bob)).toBe(0);
    expect(await unread(world.alice)).toBe(1);
    const none = await md(app, world, world.bob, "POST", "/notifications/actions/dismiss_all", {});
    expect(none.body).toContain("**Marked 0 notifications read**");
  });

  it("paginates notifications", async () => {
    const world = await makeWorld("ppl");
    for (let i = 0; i < 22; i++) await mention(world, world.alice, world.bob, `n${i}`);
    const p1 = await md(app, world, world.bob, "GET", "/notifications");
    const p2 = await md(app, world, world.bob, "GET", "/notifications?page=2");
    const ids = (body: string) => [...body.matchAll(/notification `([a-z0-9]+)`/g)].map((m) => m[1]!);
    expect(ids(p1.body)).toHaveLength(20);
    expect(ids(p2.body)).toHaveLength(2);
    expect(new Set([...ids(p1.body), ...ids(p2.body)]).size).toBe(22);
    expect(p1.body).toContain("[Next](/notifications?page=2)");
  });
});
