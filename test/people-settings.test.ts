// The people page and workspace roles, through the real stack (web app, workers, SMTP inbox):
// the list shows each person's role, status, last sign-in and agents, and nobody of another
// workspace; only admins change roles; the person is mailed and the change is in the audit
// trail; the workspace is never left without an admin, whether by a role change or a
// deactivation, one at a time or two at once.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../src/lib/errors.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import { toActor } from "../src/services/registry/types.ts";
import { mailTo } from "./helpers/account-mail.ts";
import { makeAgent } from "./helpers/agents.ts";
import { addMember, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";
import { type Inbox, startMailing } from "./helpers/inbox.ts";
import { signInAs } from "./helpers/sessions.ts";

let app: FastifyInstance;
let inbox: Inbox;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ app, inbox, close } = await startMailing("people"));
});
afterAll(async () => {
  await close?.();
});
const db = () => testPrisma();

/** A world whose alice is its only workspace admin. */
async function adminWorld(prefix = "ppl") {
  const w = await makeWorld(prefix);
  await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
  return w;
}

const rowOf = (markdown: string, handle: string) =>
  markdown.split("\n").find((line) => line.startsWith("| [") && line.includes(`(@${handle})`)) ?? "";

const isAdmin = async (id: string) => (await db().user.findUniqueOrThrow({ where: { id } })).tenantAdmin;

const activeAdmins = (w: World) =>
  db().user.count({
    where: { tenantId: w.tenant.id, kind: "person", tenantAdmin: true, deactivatedAt: null },
  });

describe("the people page", () => {
  it("lists each person's role, status, last sign-in and agents, and nobody of another workspace", async () => {
    const w = await adminWorld();
    const other = await makeWorld("ppx");
    const stranger = await addMember(other, "zora", "Zora Elsewhere", "member");
    await makeAgent(w, w.bob, "scout");
    await makeAgent(other, other.bob, "spy");
    expect((await signInAs(app, w, w.bob)).signIn.statusCode).toBe(303);
    const gone = await md(app, w, w.alice, "POST", "/settings/people/carol/actions/deactivate_person", {});
    expect(gone.statusCode).toBe(200);

    const page = await md(app, w, w.alice, "GET", "/settings/people");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("3 people in this workspace.");
    const bob = rowOf(page.body, "bob");
    expect(bob).toContain("[Bob Brown](/settings/people/bob) (@bob)");
    expect(bob).toContain(`| ${w.bob.email} | member | active |`);
    expect(bob).toMatch(/\| \d{4}-\d\d-\d\d \d\d:\d\d UTC \| \[@scout\]\(\/subagents\/scout\) \|$/);
    expect(rowOf(page.body, "alice")).toContain("| admin | active |");
    expect(rowOf(page.body, "carol")).toMatch(/\| member \| deactivated \d{4}-.* UTC \| never \| — \|$/);
    // The admin's view: the way to invite, and the audit trail (carol's deactivation is in it).
    expect(page.body).toContain("[Invite people](/settings/invitations)");
    expect(page.body).toContain("· @carol · **deactivated** (by @alice): Your account was deactivated");
    for (const theirs of [stranger.name, stranger.email, other.alice.email, "@spy"])
      expect(page.body).not.toContain(theirs);
  });

  it("shows members the list without addresses, invitations or the audit trail", async () => {
    const w = await adminWorld();
    const page = await md(app, w, w.bob, "GET", "/settings/people");
    expect(page.statusCode).toBe(200);
    expect(rowOf(page.body, "alice")).toBe(
      "| [Alice Adams](/settings/people/alice) (@alice) | admin | active | never | — |",
    );
    expect(page.body).toContain("Only workspace admins change roles and invite people");
    expect(page.body).not.toContain(w.alice.email);
    expect(page.body).not.toContain("/settings/invitations");
    expect(page.body).not.toContain("## Account events");
    // The menu leads there, for every person.
    const browser = await login(app, w, w.bob);
    expect((await browser.get("/")).body).toContain('<a href="/settings/people">People</a>');
  });
});

describe("changing a person's role", () => {
  it("is for workspace admins only", async () => {
    const w = await adminWorld();
    const bob = await login(app, w, w.bob);
    const seen = await bob.get("/settings/people/carol");
    expect(seen.statusCode).toBe(200);
    expect(seen.body).not.toContain("Make @carol a workspace admin");
    const posted = await md(app, w, w.bob, "POST", "/settings/people/carol/actions/change_role", {
      role: "admin",
    });
    expect(posted.statusCode).toBe(403);
    expect(posted.body).toContain("only workspace admins change people's roles");
    expect(await isAdmin(w.carol.id)).toBe(false);
  });

  it("mails the person and lands in the audit trail, in words", async () => {
    const w = await adminWorld();
    const alice = await login(app, w, w.alice);
    const page = await alice.get("/settings/people/bob");
    expect(page.body).toContain("Make @bob a workspace admin");
    const done = await alice.post("/settings/people/bob/actions/change_role", { role: "admin" });
    expect(done.statusCode).toBe(303);
    expect(await isAdmin(w.bob.id)).toBe(true);
    const mail = await mailTo(inbox, w.bob.email, /Your role in Cadre changed/);
    expect(mail.text).toContain("Your role in the workspace changed from member to admin by @alice.");
    const events = await db().securityEvent.findMany({ where: { userId: w.bob.id, kind: "role_changed" } });
    expect(events).toMatchObject([{ actorId: w.alice.id }]);
    const trail = await md(app, w, w.alice, "GET", "/settings/people");
    expect(trail.body).toContain("· @bob · **role changed** (by @alice): Your role in the workspace changed");
    // Bob, an admin now, may hand the role back; the page offers him the way.
    const back = await md(app, w, w.bob, "POST", "/settings/people/alice/actions/change_role", {
      role: "member",
    });
    expect(back.statusCode).toBe(200);
    expect(await isAdmin(w.alice.id)).toBe(false);
    await mailTo(inbox, w.alice.email, /Your role in Cadre changed/);
  });

  it("refuses a role that does not exist, naming the field, in HTML and markdown", async () => {
    const w = await adminWorld();
    const api = await md(app, w, w.alice, "POST", "/settings/people/bob/actions/change_role", {
      role: "owner",
    });
    expect(api.statusCode).toBe(400);
    expect(issuesOf(api.body).role).toBeTruthy();
    const alice = await login(app, w, w.alice);
    const form = await alice.post("/settings/people/bob/actions/change_role", { role: "owner" });
    expect(form.statusCode).toBe(400);
    expect(form.body).toContain("Workspace role");
    expect(issuesOf(form.body).role).toBeTruthy();
    const same = await md(app, w, w.alice, "POST", "/settings/people/bob/actions/change_role", {
      role: "member",
    });
    expect(same.statusCode).toBe(409);
    expect(same.body).toContain("@bob is already a workspace member.");
  });
});

describe("the last admin", () => {
  it("cannot be made a member, in the API or a browser", async () => {
    const w = await adminWorld();
    const api = await md(app, w, w.alice, "POST", "/settings/people/alice/actions/change_role", {
      role: "member",
    });
    expect(api.statusCode).toBe(409);
    expect(api.body).toContain("@alice is the workspace's last admin and cannot be made a member");
    const alice = await login(app, w, w.alice);
    const form = await alice.post("/settings/people/alice/actions/change_role", { role: "member" });
    expect(form.statusCode).toBe(409);
    expect(form.body).toContain("make someone else a workspace admin first");
    expect(await isAdmin(w.alice.id)).toBe(true);
    // With a second admin, stepping down is fine.
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    const down = await md(app, w, w.alice, "POST", "/settings/people/alice/actions/change_role", {
      role: "member",
    });
    expect(down.statusCode).toBe(200);
    expect(await isAdmin(w.alice.id)).toBe(false);
  });

  it("cannot be deactivated by an admin who has just lost the role (the rule reads the workspace, not the request)", async () => {
    const w = await adminWorld();
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    // Alice's request began while she was an admin; carol demotes her before it acts.
    const tenant = await db().tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
    const stale = {
      db: db(),
      tenant,
      actor: toActor(await db().user.findUniqueOrThrow({ where: { id: w.alice.id } })),
    };
    const demoted = await md(app, w, w.carol, "POST", "/settings/people/alice/actions/change_role", {
      role: "member",
    });
    expect(demoted.statusCode).toBe(200);
    const refused = await registry
      .run(stale, "/settings/people/carol", "deactivate_person", {}, { form: false })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).status).toBe(409);
    expect((refused as AppError).message).toBe(
      "@carol is the workspace's last admin and cannot be deactivated: make someone else a workspace admin first, so the workspace always has one.",
    );
    const carol = await db().user.findUniqueOrThrow({ where: { id: w.carol.id } });
    expect(carol.deactivatedAt).toBeNull();
  });

  it("survives two admins demoting, or deactivating, each other at once", async () => {
    const w = await adminWorld();
    await db().user.update({ where: { id: w.carol.id }, data: { tenantAdmin: true } });
    const demotions = await Promise.all([
      md(app, w, w.alice, "POST", "/settings/people/carol/actions/change_role", { role: "member" }),
      md(app, w, w.carol, "POST", "/settings/people/alice/actions/change_role", { role: "member" }),
    ]);
    expect(demotions.map((res) => res.statusCode).sort()).toEqual([200, 409]);
    expect(await activeAdmins(w)).toBe(1);

    const again = await adminWorld();
    await db().user.update({ where: { id: again.carol.id }, data: { tenantAdmin: true } });
    const deactivations = await Promise.all([
      md(app, again, again.alice, "POST", "/settings/people/carol/actions/deactivate_person", {}),
      md(app, again, again.carol, "POST", "/settings/people/alice/actions/deactivate_person", {}),
    ]);
    // The second is refused by the rule, or, when the first committed before it signed in, by its revoked token.
    const statuses = deactivations.map((res) => res.statusCode).sort();
    expect(statuses[0]).toBe(200);
    expect([401, 409]).toContain(statuses[1]);
    expect(await activeAdmins(again)).toBe(1);
  });
});
