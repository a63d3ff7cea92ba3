// Pages `/`, `/studios`, `/studios/:studio`, `/studios/:studio/members` and their actions,
// in markdown (Bearer token) and HTML (browser session).
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  act,
  actionNames,
  type Browser,
  buildTestApp,
  login,
  makeWorld,
  md,
  type Person,
  sameTransaction,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

const db = testPrisma();
const CS = "/studios/actions/create_studio";
const JS = "/studios/actions/join_studio";
const US = "/studios/general/actions/update_studio";
const MB = "/studios/general/members/actions";
let app: FastifyInstance;
let w: World;
let aliceB: Browser;
let bobB: Browser;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("st");
  [aliceB, bobB] = await Promise.all([login(app, w, w.alice), login(app, w, w.bob)]);
});
afterAll(async () => app.close());

/** Markdown call as `who`: a POST when there is a body. */
const go = (world: World, who: Person, url: string, body?: unknown) =>
  md(app, world, who, body === undefined ? "GET" : "POST", url, body);
/** `- \`field\`: message` lines of a markdown 400, as a map. */
const issues = (body: string) => issuesOf(body);
const events = (world: World, type: string) =>
  db.event.findMany({ where: { tenantId: world.tenant.id, type } });
const eventCount = (world: World) => db.event.count({ where: { tenantId: world.tenant.id } });
const setRole = (world: World, who: Person, handle: string, role: string, studio = "general") =>
  act(world, who, `/studios/${studio}/members`, "update_member_role", { handle, role });
const role = async (world: World, userId: string) => {
  const key = { studioId: world.studio.id, userId };
  return (await db.studioMember.findUnique({ where: { studioId_userId: key } }))?.role;
};

describe("home /", () => {
  it("lists my studios in markdown, also by .md suffix, and has no actions", async () => {
    const res = await go(w, w.alice, "/");
    expect(res.statusCode).toBe(200);
    expect(res.headers.vary).toContain("Accept");
    expect(res.body).toContain(`# Welcome to ${w.tenant.name}`);
    expect(res.body).toContain("- [General](/studios/general) — admin");
    expect(res.body).toContain("_No actions on this page._");
    const auth = { host: w.host, authorization: `Bearer ${w.alice.token}` };
    const suffix = await app.inject({ url: "/index.md", headers: auth });
    expect(suffix.headers["content-type"]).toContain("text/markdown");
    expect(suffix.body).toBe(res.body);
    const carol = await go(w, w.carol, "/");
    expect(carol.body).toContain("You are not in any studio yet");
    expect(carol.body).not.toContain("/studios/general");
  });

  it("renders HTML for a browser and asks anonymous visitors to log in", async () => {
    const res = await bobB.get("/");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toContain("text/html");
    expect(res.body).toContain('<a href="/studios/general">General</a> — member');
    const anon = await app.inject({ url: "/", headers: { host: w.host } });
    expect(anon.statusCode).toBe(303);
    expect(anon.headers.location).toBe("/login?next=%2F");
    const anonMd = await app.inject({ url: "/", headers: { host: w.host, accept: "text/markdown" } });
    expect(anonMd.statusCode).toBe(401);
  });
});

describe("/studios: create_studio", () => {
  it("creates a studio with me as admin and a studio.created event in the same transaction", async () => {
    const res = await go(w, w.bob, CS, { name: "Design", handle: " Design-Team ", description: "Pixels" });
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe("/studios/design-team");
    expect(res.body).toContain("# Design\n");
    expect(res.body).toContain("**Created studio Design**");
    const studio = await db.studio.findUniqueOrThrow({
      where: { tenantId_handle: { tenantId: w.tenant.id, handle: "design-team" } },
      include: { members: true },
    });
    expect(studio).toMatchObject({ name: "Design", description: "Pixels", createdById: w.bob.id });
    expect(studio.members.map((m) => [m.userId, m.role])).toEqual([[w.bob.id, "admin"]]);
    const [ev] = await events(w, "studio.created");
    expect(ev).toMatchObject({ actorId: w.bob.id, subjectType: "studio", subjectId: studio.id });
    expect(await sameTransaction("studios WHERE id = $1", [studio.id], ev!.id)).not.toBe(false);
  });

  it("creates from a browser form with a 303 redirect and a flash", async () => {
    const res = await aliceB.post(CS, { name: "Ops", handle: "ops", description: "" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/studios/ops");
    const page = await aliceB.get("/studios/ops");
    expect(page.body).toContain("Created studio Ops");
    expect((await aliceB.get("/studios/ops")).body).not.toContain("Created studio Ops");
    expect(await db.studio.count({ where: { tenantId: w.tenant.id, handle: "ops" } })).toBe(1);
  });

  it("rejects bad input naming every field, and writes nothing", async () => {
    const before = [await db.studio.count({ where: { tenantId: w.tenant.id } }), await eventCount(w)];
    const body = { name: "   ", handle: "a", description: "d".repeat(2001), owner: "me" };
    const res = await go(w, w.alice, CS, body);
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("# Error 400");
    expect(issues(res.body)).toEqual({
      owner: "unknown parameter (expected: name, handle, description)",
      name: "must not be empty",
      handle: "2–32 characters: letters, digits, - and _, starting with a letter or digit",
      description: "at most 2000 characters",
    });
    const missing = await go(w, w.alice, CS, {});
    expect(issues(missing.body)).toEqual({ name: "required", handle: "required" });
    const more = await go(w, w.alice, CS, { name: "n".repeat(81), handle: "Actions" });
    expect(issues(more.body)).toEqual({ name: "at most 80 characters", handle: "this handle is reserved" });
    const after = [await db.studio.count({ where: { tenantId: w.tenant.id } }), await eventCount(w)];
    expect(after).toEqual(before);
  });

  it("re-renders the HTML form with the input and the messages on 400", async () => {
    const res = await aliceB.post(CS, { name: "<b>Mine</b>", handle: "x" });
    expect(res.statusCode).toBe(400);
    expect(res.headers["content-type"]).toContain("text/html");
    expect(res.body).toContain('value="&lt;b&gt;Mine&lt;/b&gt;"');
    expect(issuesOf(res.body).handle).toMatch(/^2–32 characters/);
    expect(res.body).not.toContain("<b>Mine</b>");
  });

  it("answers 409 for a taken handle, whatever its case, in both formats and under a race", async () => {
    const res = await go(w, w.alice, CS, { name: "Again", handle: "GENERAL" });
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain("A studio with handle `general` already exists");
    const html = await aliceB.post(CS, { name: "Again", handle: "general" });
    expect(html.statusCode).toBe(409);
    expect(html.body).toContain("A studio with handle `general` already exists");
    expect(html.body).toContain('value="Again"');
    const race = await Promise.allSettled(
      [1, 2, 3].map(() => act(w, w.carol, "/studios", "create_studio", { name: "R", handle: "race" })),
    );
    expect(race.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of race) if (r.status === "rejected") expect(r.reason).toMatchObject({ status: 409 });
    expect(await db.studio.count({ where: { tenantId: w.tenant.id, name: "Again" } })).toBe(0);
  });

  it("describes the action in both formats", async () => {
    const res = await go(w, w.carol, CS);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("# Action: create_studio");
    expect(res.body).toContain("Run it with `POST /studios/actions/create_studio`");
    expect(res.body).toContain("| name | string | yes |");
    expect(res.body).toContain("| description | string | no | what the studio is for |");
    const html = await bobB.get(CS);
    expect(html.statusCode).toBe(200);
    expect(html.body).toContain('data-action="create_studio"');
    expect(html.body).toContain('name="handle"');
  });
});

describe("/studios: join_studio", () => {
  it("joins with the invite code once; a second time is 409 with no second event", async () => {
    const world = await makeWorld("jn");
    const list = await go(world, world.carol, "/studios");
    expect(actionNames(list.body)).toEqual(["create_studio", "join_studio"]);
    const res = await go(world, world.carol, JS, { invite_code: ` ${world.studio.inviteCode} ` });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**You joined General**");
    expect(res.body).toContain("you are a member");
    expect(await role(world, world.carol.id)).toBe("member");
    const [ev] = await events(world, "studio.joined");
    expect(ev).toMatchObject({ actorId: world.carol.id, subjectId: world.studio.id });
    const again = await go(world, world.carol, JS, { invite_code: world.studio.inviteCode });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain("You are already a member of General");
    expect(await events(world, "studio.joined")).toHaveLength(1);
  });

  it("rejects empty, unknown and other tenants' invite codes", async () => {
    const other = await makeWorld("ot");
    for (const [code, message] of [
      ["", "must not be empty"],
      ["nope", "no studio has this invite code"],
      [other.studio.inviteCode, "no studio has this invite code"],
    ]) {
      const res = await go(w, w.carol, JS, { invite_code: code });
      expect(res.statusCode).toBe(400);
      expect(issues(res.body)).toEqual({ invite_code: message });
    }
    expect(await role(w, w.carol.id)).toBeUndefined();
  });

  it("joins from a browser form", async () => {
    const world = await makeWorld("jh");
    const b = await login(app, world, world.carol);
    const bad = await b.post(JS, { invite_code: "wrong-code" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('value="wrong-code"');
    expect(bad.body).toContain("no studio has this invite code");
    const res = await b.post(JS, { invite_code: world.studio.inviteCode });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/studios/general");
    expect((await b.get("/studios/general")).body).toContain("You joined General");
  });
});

describe("/studios/:studio", () => {
  it("shows the latest notes, decisions and commitments with authors, UTC times and counts", async () => {
    const world = await makeWorld("ov");
    const studioId = (await db.studio.findFirstOrThrow({ where: { tenantId: world.tenant.id } })).id;
    const at = new Date("2026-03-04T05:06:07Z");
    const base = { tenantId: world.tenant.id, studioId, createdAt: at };
    await db.note.create({
      data: { ...base, id: "ov-note", authorId: world.bob.id, title: "Plan", text: "x" },
    });
    await db.decision.create({
      data: { ...base, id: "ov-dec", authorId: world.alice.id, question: "Which day?" },
    });
    await db.commitment.create({
      data: {
        ...base,
        id: "ov-com",
        authorId: world.alice.id,
        title: "Retro",
        criticalMass: 2,
        activatedAt: at,
        participants: {
          create: [world.alice, world.bob].map((p) => ({ userId: p.id, tenantId: world.tenant.id })),
        },
      },
    });
    const page = (await go(world, world.bob, "/studios/general")).body;
    expect(page).toContain(
      `- [Plan](/studios/general/notes/ov-note) — ${world.bob.name} ([@bob](/u/bob)), 2026-03-04 05:06 UTC`,
    );
    expect(page).toContain(
      `- [Which day?](/studios/general/decisions/ov-dec) — ${world.alice.name} ([@alice](/u/alice)), 2026-03-04 05:06 UTC`,
    );
    expect(page).toContain("- [Retro](/studios/general/commitments/ov-com) — 2/2 joined · **active**");
    expect(page).not.toContain("## Pinned");
    const members = await db.studioMember.count({ where: { studioId } });
    expect(page).toContain(`[${members} members](/studios/general/members)`);
  });

  it("is 404 for non-members and unknown studios, in both formats", async () => {
    expect((await go(w, w.carol, "/studios/general")).statusCode).toBe(404);
    expect((await go(w, w.alice, "/studios/nowhere")).statusCode).toBe(404);
    const carolB = await login(app, w, w.carol);
    expect((await carolB.get("/studios/general")).statusCode).toBe(404);
    const post = await go(w, w.carol, "/studios/general/actions/create_note", { text: "hi" });
    expect(post.statusCode).toBe(404);
  });

  it("offers update_studio to admins only", async () => {
    const bob = await go(w, w.bob, "/studios/general");
    expect(actionNames(bob.body)).toEqual([
      "create_note",
      "create_decision",
      "create_commitment",
      "subscribe",
      "unsubscribe",
    ]);
    expect(bob.body).toContain("you are a member");
    expect((await aliceB.get("/studios/general")).body).toContain('data-action="update_studio"');
    expect((await bobB.get("/studios/general")).body).not.toContain("/actions/update_studio");
    const d = await go(w, w.bob, US);
    expect(d.statusCode).toBe(403);
    expect(d.body).toContain("only studio admins can do this");
  });

  it("update_studio writes the change and a studio.updated event in one transaction", async () => {
    const world = await makeWorld("up");
    const res = await go(world, world.alice, US, { name: "Renamed", description: "What we do" });
    expect(res.statusCode).toBe(200);
    expect(res.headers.location).toBeUndefined();
    expect(res.body).toContain("# Renamed\n");
    expect(res.body).toContain("> What we do");
    const [ev] = await events(world, "studio.updated");
    expect(ev).toMatchObject({ actorId: world.alice.id, subjectId: world.studio.id });
    expect(await sameTransaction("studios WHERE id = $1", [world.studio.id], ev!.id)).not.toBe(false);
    const b = await login(app, world, world.alice);
    // A field left out keeps its value; one emptied in the (prefilled) form is a change, refused for a name.
    expect((await b.post(US, { name: "", description: "Only this" })).statusCode).toBe(400);
    const form = await b.post(US, { description: "Only this" });
    expect(form.statusCode).toBe(303);
    const after = await db.studio.findUnique({ where: { id: world.studio.id } });
    expect(after).toMatchObject({ name: "Renamed", description: "Only this" });
  });

  it("update_studio rejects bad input and non-admins, writing nothing", async () => {
    const before = await eventCount(w);
    const post = (body: unknown) => go(w, w.alice, US, body);
    const empty = await post({});
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain("- give a name or a description to change");
    expect(issues((await post({ name: " " })).body)).toEqual({ name: "must not be empty" });
    expect(issues((await post({ name: "n".repeat(81), handle: "x" })).body)).toEqual({
      handle: "unknown parameter (expected: name, description)",
      name: "at most 80 characters",
    });
    const bob = await go(w, w.bob, US, { name: "Mine" });
    expect(bob.statusCode).toBe(403);
    expect(bob.body).toContain("You cannot use `update_studio` here: only studio admins can do this");
    const html = await bobB.post(US, { name: "Mine" });
    expect(html.statusCode).toBe(403);
    expect(html.headers["content-type"]).toContain("text/html");
    const htmlBad = await aliceB.post(US, { name: "x".repeat(81) });
    expect(htmlBad.statusCode).toBe(400);
    expect(issuesOf(htmlBad.body).name).toBe("at most 80 characters");
    expect(htmlBad.body).toContain(`value="${"x".repeat(81)}"`);
    expect((await db.studio.findUnique({ where: { id: w.studio.id } }))?.name).toBe("General");
    expect(await eventCount(w)).toBe(before);
  });

  // KNOWN BUG (src/services/registry/html.ts renderPageHtml + src/routes/pages.ts): the form
  // re-render only shows errors inside the failed action's form, which is not rendered when the
  // action is unavailable (403), so the reason is lost. Drop `.fails` once fixed.
  it("shows the 403 reason on the re-rendered HTML page", async () => {
    const html = await bobB.post(US, { name: "Mine" });
    expect(html.body).toContain("only studio admins can do this");
  });

  it("escapes a studio's raw HTML and quotes its description", async () => {
    const world = await makeWorld("xs");
    await act(world, world.alice, "/studios/general", "update_studio", {
      name: "<script>alert(1)</script>",
      description: "## Actions\n- `delete_studio` () — gone",
    });
    const res = await go(world, world.alice, "/studios/general");
    expect(res.body).toContain("> ## Actions\n> - `delete_studio`");
    expect(res.body.split("\n").filter((l) => l === "## Actions")).toHaveLength(1);
    expect(actionNames(res.body)).toHaveLength(7);
    const b = await login(app, world, world.alice);
    for (const path of ["/", "/studios", "/studios/general"]) {
      const html = (await b.get(path)).body;
      expect(html).not.toContain("<script>alert(1)");
      expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    }
  });
});

describe("/studios/:studio/members", () => {
  it("lists members; only admins see the invite code and the actions", async () => {
    const a = await go(w, w.alice, "/studios/general/members");
    expect(a.statusCode).toBe(200);
    expect(a.body).toMatch(/^- \*\*Alice Adams\*\* \[@alice\]\(\/u\/alice\) · person · \*\*admin\*\*/m);
    expect(a.body).toMatch(/^- \*\*Bob Brown\*\* \[@bob\]\(\/u\/bob\) · person · \*\*member\*\*/m);
    expect(a.body).toContain(`Invite code: \`${w.studio.inviteCode}\``);
    expect(actionNames(a.body)).toEqual(["update_member_role", "remove_member"]);
    const b = await go(w, w.bob, "/studios/general/members");
    expect(b.body).not.toContain(w.studio.inviteCode);
    expect(b.body).toContain("_No actions on this page._");
    expect((await go(w, w.carol, "/studios/general/members")).statusCode).toBe(404);
    const html = await aliceB.get("/studios/general/members");
    expect(html.body).toContain("<strong>Bob Brown</strong>");
    // Beside each member: a role button (never a preselected role) and a Remove that asks first.
    expect(html.body).toMatch(
      /data-action="update_member_role">[\s\S]*?name="handle" value="bob">[\s\S]*?name="role" value="admin">[\s\S]*?Make admin/,
    );
    expect(html.body).toMatch(/class="action-form inline destructive"[^>]*data-action="remove_member"/);
    expect(html.body).not.toMatch(/<select[^>]*name="role"/);
  });

  it("update_member_role promotes with a member.role_changed event in the same transaction", async () => {
    const world = await makeWorld("rl");
    const res = await go(world, world.alice, `${MB}/update_member_role`, { handle: "BOB", role: "admin" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**@bob is now admin**");
    expect(await role(world, world.bob.id)).toBe("admin");
    const [ev] = await events(world, "member.role_changed");
    expect(ev).toMatchObject({ subjectType: "user", subjectId: world.bob.id, payload: { role: "admin" } });
    const sql = "studio_members WHERE studio_id = $1 AND user_id = $2";
    expect(await sameTransaction(sql, [world.studio.id, world.bob.id], ev!.id)).not.toBe(false);
    const b = await login(app, world, world.bob);
    const form = await b.post(`${MB}/update_member_role`, { handle: "alice", role: "member" });
    expect(form.statusCode).toBe(303);
    expect(form.headers.location).toBe("/studios/general/members");
    expect(await role(world, world.alice.id)).toBe("member");
  });

  it("never leaves a studio without an admin (409), even under a race", async () => {
    const world = await makeWorld("la");
    const body = { handle: "alice", role: "member" };
    const demote = await go(world, world.alice, `${MB}/update_member_role`, body);
    expect(demote.statusCode).toBe(409);
    expect(demote.body).toContain("A studio needs at least one admin");
    const remove = await go(world, world.alice, `${MB}/remove_member`, { handle: "alice" });
    expect(remove.statusCode).toBe(409);
    const b = await login(app, world, world.alice);
    const html = await b.post(`${MB}/remove_member`, { handle: "alice" });
    expect(html.statusCode).toBe(409);
    expect(html.body).toContain("A studio needs at least one admin");
    expect(html.body).toContain('value="alice"');
    expect(await role(world, world.alice.id)).toBe("admin");
    expect(await eventCount(world)).toBe(0);
    await setRole(world, world.alice, "bob", "admin");
    await Promise.allSettled([
      setRole(world, world.alice, "bob", "member"),
      setRole(world, world.bob, "alice", "member"),
    ]);
    expect(await db.studioMember.count({ where: { studioId: world.studio.id, role: "admin" } })).toBe(1);
  });

  it("rejects bad input (400), non-admins (403) and non-members (404)", async () => {
    const post = (who: Person, name: string, body: unknown) => go(w, who, `${MB}/${name}`, body);
    const bad = await post(w.alice, "update_member_role", { handle: "-x", role: "owner", force: true });
    expect(bad.statusCode).toBe(400);
    expect(Object.keys(issues(bad.body)).sort()).toEqual(["force", "handle", "role"]);
    expect(issues((await post(w.alice, "remove_member", {})).body)).toEqual({ handle: "required" });
    const bob = await post(w.bob, "update_member_role", { handle: "bob", role: "admin" });
    expect(bob.statusCode).toBe(403);
    expect(bob.body).toContain("only studio admins can do this");
    expect((await post(w.bob, "remove_member", { handle: "alice" })).statusCode).toBe(403);
    const carol = await post(w.alice, "remove_member", { handle: "carol" });
    expect(carol.statusCode).toBe(404);
    expect(carol.body).toContain("@carol is not a member of this studio");
    const zed = await post(w.alice, "update_member_role", { handle: "zed", role: "admin" });
    expect(zed.statusCode).toBe(404);
    expect(await role(w, w.bob.id)).toBe("member");
  });

  it("remove_member removes with a member.removed event; the removed member loses access", async () => {
    const world = await makeWorld("rm");
    const res = await go(world, world.alice, `${MB}/remove_member`, { handle: "bob" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**Removed @bob**");
    expect(await role(world, world.bob.id)).toBeUndefined();
    expect(await events(world, "member.removed")).toMatchObject([{ subjectId: world.bob.id }]);
    expect((await go(world, world.bob, "/studios/general")).statusCode).toBe(404);
    await act(world, world.alice, "/studios", "create_studio", { name: "Two", handle: "two" });
    const two = await db.studio.findFirstOrThrow({ where: { tenantId: world.tenant.id, handle: "two" } });
    await act(world, world.carol, "/studios", "join_studio", { invite_code: two.inviteCode });
    await setRole(world, world.alice, "carol", "admin", "two");
    const b = await login(app, world, world.alice);
    const leave = await b.post("/studios/two/members/actions/remove_member", { handle: "alice" });
    expect(leave.statusCode).toBe(303);
    expect(leave.headers.location).toBe("/studios");
    expect((await b.get("/studios")).body).toContain("You left Two");
  });
});
