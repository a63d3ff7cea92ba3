// Invitations through the real stack: an admin invites at /settings/invitations, the worker
// mails each invitation over SMTP to a real server in the test, and the link from the mail as
// received makes the account (role, studios), signs in and is audited. Used, expired, withdrawn
// and other workspaces' links say which; an address already in the workspace is never given a
// second account; the shared invite link confirms an address by mail before making one.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { linkIn, mailTo } from "./helpers/account-mail.ts";
import { csrfOf, makeWorld, md, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { type Inbox, startMailing } from "./helpers/inbox.ts";
import { type SignedIn, signInAs } from "./helpers/sessions.ts";

const GOOD_PASSWORD = "amber walrus juggles quietly";
const PAGE = "/settings/invitations";
let app: FastifyInstance;
let inbox: Inbox;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ app, inbox, close } = await startMailing("invites"));
});
afterAll(async () => {
  await close?.();
});
const db = () => testPrisma();

/** A world whose alice is a workspace admin, signed in, with a second studio `design`. */
async function adminWorld(): Promise<{ w: World; alice: SignedIn }> {
  const w = await makeWorld("inv");
  await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
  await db().studio.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      handle: "design",
      name: "Design",
      inviteCode: newId(10),
      createdById: w.alice.id,
    },
  });
  return { w, alice: await signInAs(app, w, w.alice) };
}

const invite = (alice: SignedIn, form: Record<string, string>) =>
  alice.post(PAGE, { _action: "invite_people", role: "member", studios: "", ...form });

/** A signed-out browser: GET the link's page, then POST its form with the page's CSRF token. */
async function openLink(w: World, link: string, form?: Record<string, string>) {
  const page = await app.inject({ method: "GET", url: link, headers: { host: w.host } });
  if (!form) return { page, post: undefined };
  // A refused link's page has no form: the log-in page's pre-session token stands in for it.
  const withForm = csrfOf(page)
    ? page
    : await app.inject({ method: "GET", url: "/login", headers: { host: w.host } });
  const cookies = Object.fromEntries(withForm.cookies.map((cookie) => [cookie.name, cookie.value]));
  const post = await app.inject({
    method: "POST",
    url: link,
    headers: { host: w.host, "content-type": "application/x-www-form-urlencoded" },
    cookies,
    payload: new URLSearchParams({ _csrf: csrfOf(withForm) ?? "", ...form }).toString(),
  });
  return { page, post };
}

const inviteLink = async (email: string, count = 1) =>
  linkIn(await mailTo(inbox, email, /invited you to|Confirm your address/, count), "Accept the invitation");

const sessionOf = (res: LightMyRequestResponse) =>
  res.cookies.find((cookie) => cookie.name === "cadre_session");

describe("inviting by mail", () => {
  it("invites two at once; one accepts from the mail and is signed in with the role and studios; the other's is withdrawn", async () => {
    const { w, alice } = await adminWorld();
    const dan = `dan@${w.tenant.subdomain}.test`;
    const erin = `erin@${w.tenant.subdomain}.test`;
    const sent = await invite(alice, {
      emails: `${dan},\n ${erin}`,
      role: "admin",
      studios: "general, design",
    });
    expect(sent.statusCode).toBe(303);
    const listed = await alice.get(`${PAGE}.md`);
    expect(listed.body).toContain(dan);
    expect(listed.body).toContain(erin);
    expect(listed.body).toContain("@alice");

    const link = await inviteLink(dan);
    expect(link).toMatch(/^\/invite\/[A-Za-z0-9_-]{40,}$/);
    const weak = await openLink(w, link, { name: "Dan Dorsey", password: "password12345" });
    expect(weak.page.statusCode).toBe(200);
    expect(weak.page.body).toContain("Join and sign in");
    expect(weak.post!.statusCode).toBe(400);
    expect(weak.post!.body).toContain("Too easy to guess");
    const done = await openLink(w, link, { name: "Dan Dorsey", password: GOOD_PASSWORD });
    expect(done.post!.statusCode).toBe(303);
    const session = sessionOf(done.post!);
    const whoami = await app.inject({
      method: "GET",
      url: "/whoami.md",
      headers: { host: w.host, cookie: `cadre_session=${session!.value}` },
    });
    expect(whoami.statusCode).toBe(200);
    expect(whoami.body).toContain("Dan Dorsey");
    const person = await db().user.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: w.tenant.id, email: dan } },
      include: { memberships: { include: { studio: { select: { handle: true } } } } },
    });
    expect(person.tenantAdmin).toBe(true);
    expect(person.memberships.map((member) => member.studio.handle).sort()).toEqual(["design", "general"]);
    expect(
      await db().securityEvent.count({ where: { userId: person.id, kind: "invitation_accepted" } }),
    ).toBe(1);
    expect((await mailTo(inbox, dan, /You joined a Cadre workspace/)).text).toContain("invited by @alice");
    expect((await mailTo(inbox, w.alice.email, /accepted your invitation/)).text).toContain(dan);
    const again = await openLink(w, link);
    expect(again.page.statusCode).toBe(410);
    expect(again.page.body).toContain("was already used");

    const erinLink = await inviteLink(erin);
    const pending = await db().oneTimeLink.findFirstOrThrow({
      where: { tenantId: w.tenant.id, email: erin, revokedAt: null },
    });
    const revoked = await alice.post(PAGE, {
      _action: "revoke_invitation",
      id: pending.id,
      _confirm: "yes",
    });
    expect(revoked.statusCode).toBe(303);
    const withdrawn = await openLink(w, erinLink);
    expect(withdrawn.page.statusCode).toBe(410);
    expect(withdrawn.page.body).toContain("was withdrawn");
    expect(withdrawn.page.body).toContain("Ask whoever invited you to send a new invitation");
    expect((await alice.get(`${PAGE}.md`)).body).not.toContain(`| ${erin} |`);
  }, 90_000);

  it("says which for an expired link, refuses another workspace's, and a second click of a racing pair", async () => {
    const { w, alice } = await adminWorld();
    const frank = `frank@${w.tenant.subdomain}.test`;
    expect((await invite(alice, { emails: frank })).statusCode).toBe(303);
    const link = await inviteLink(frank);
    const other = await makeWorld("inv");
    const elsewhere = await app.inject({ method: "GET", url: link, headers: { host: other.host } });
    expect(elsewhere.statusCode).toBe(410);
    expect(elsewhere.body).toContain("belongs to another workspace");
    await db().oneTimeLink.updateMany({
      where: { tenantId: w.tenant.id, email: frank },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const expired = await openLink(w, link, { name: "Frank", password: GOOD_PASSWORD });
    expect(expired.page.statusCode).toBe(410);
    expect(expired.page.body).toContain("expired on");
    expect(expired.post!.statusCode).toBe(410);

    const gina = `gina@${w.tenant.subdomain}.test`;
    expect((await invite(alice, { emails: gina })).statusCode).toBe(303);
    const ginaLink = await inviteLink(gina);
    const [first, second] = await Promise.all([
      openLink(w, ginaLink, { name: "Gina", password: GOOD_PASSWORD }),
      openLink(w, ginaLink, { name: "Gina", password: GOOD_PASSWORD }),
    ]);
    expect([first.post!.statusCode, second.post!.statusCode].sort()).toEqual([303, 410]);
    expect(await db().user.count({ where: { tenantId: w.tenant.id, email: gina } })).toBe(1);
  }, 90_000);

  it("names an address already a member, renews one invited twice, and never makes a second account", async () => {
    const { w, alice } = await adminWorld();
    const hal = `hal@${w.tenant.subdomain}.test`;
    const members = await invite(alice, { emails: w.bob.email });
    expect(members.statusCode).toBe(303);
    const shown = await alice.get(PAGE);
    expect(shown.body).toContain(`${w.bob.email} is already a member, as @bob`);
    expect(await db().oneTimeLink.count({ where: { tenantId: w.tenant.id, purpose: "invite" } })).toBe(0);

    expect((await invite(alice, { emails: hal })).statusCode).toBe(303);
    const oldLink = await inviteLink(hal);
    expect((await invite(alice, { emails: hal })).statusCode).toBe(303);
    expect((await alice.get(PAGE)).body).toContain(`Invited again: ${hal}`);
    const newLink = await inviteLink(hal, 2);
    expect(newLink).not.toBe(oldLink);
    expect((await openLink(w, oldLink)).page.body).toContain("was withdrawn");
    expect(
      await db().oneTimeLink.count({
        where: { tenantId: w.tenant.id, email: hal, usedAt: null, revokedAt: null },
      }),
    ).toBe(1);

    // An account for the address appears meanwhile (the operator's CLI, say): the link is refused.
    await db().user.create({
      data: { id: newId(), tenantId: w.tenant.id, handle: "hal", name: "Hal", email: hal, kind: "person" },
    });
    const late = await openLink(w, newLink, { name: "Hal H", password: GOOD_PASSWORD });
    expect(late.post!.statusCode).toBe(410);
    expect(late.post!.body).toContain("already has an account in this workspace");
    expect(await db().user.count({ where: { tenantId: w.tenant.id, email: hal } })).toBe(1);
    expect((await alice.get(`${PAGE}.md`)).body).not.toContain(`| ${hal} |`);
  }, 90_000);

  it("refuses a non-admin, and bad input with a 400 naming the field, in HTML and in the markdown API", async () => {
    const { w, alice } = await adminWorld();
    // Like the other admin settings pages, a member may open it, and reads nothing on it.
    expect((await invite(alice, { emails: "x1@example.test" })).statusCode).toBe(303);
    const bob = await signInAs(app, w, w.bob);
    for (const shown of [await bob.get(PAGE), await md(app, w, w.bob, "GET", PAGE)]) {
      expect(shown.statusCode).toBe(200);
      expect(shown.body).toContain("Only workspace admins invite people");
      expect(shown.body).not.toContain("x1@example.test");
      expect(shown.body).not.toContain("invite_people");
    }
    expect((await bob.post(PAGE, { _action: "invite_people", emails: "x2@example.test" })).statusCode).toBe(
      403,
    );
    const refused = await md(app, w, w.bob, "POST", `${PAGE}/actions/invite_people`, {
      emails: "x@example.test",
    });
    expect(refused.statusCode).toBe(403);
    expect(await db().oneTimeLink.count({ where: { tenantId: w.tenant.id } })).toBe(1);

    const cases: [Record<string, string>, string][] = [
      [{ emails: " " }, "Email addresses: type at least one email address"],
      [
        { emails: "ok@example.test, not-an-address" },
        "Email addresses: “not-an-address” is not an email address",
      ],
      [
        { emails: "ok@example.test", studios: "general nope" },
        "Studios to join: no studio “nope” in this workspace",
      ],
    ];
    for (const [form, words] of cases) {
      const html = await invite(alice, form);
      expect(html.statusCode, words).toBe(400);
      expect(html.body).toContain("Email addresses");
      expect(html.body.replace(/<[^>]+>/g, "")).toContain(words.split(": ")[1]);
      const api = await md(app, w, w.alice, "POST", `${PAGE}/actions/invite_people`, {
        role: "member",
        ...form,
      });
      expect(api.statusCode, words).toBe(400);
      // The API names the param as its callers send it; the HTML form, by its label.
      const [label, message] = words.split(": ");
      expect(api.body).toContain(`\`${label === "Email addresses" ? "emails" : "studios"}\`: ${message}`);
    }
    const missing = await md(app, w, w.alice, "POST", `${PAGE}/actions/invite_people`, {});
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("`emails`: required");
    // Nothing was half sent: bad input invites nobody (the one is x1's).
    expect(await db().oneTimeLink.count({ where: { tenantId: w.tenant.id } })).toBe(1);
  }, 60_000);
});

describe("the workspace's invite link", () => {
  it("is off by default; on, an allowed address confirms by mail and joins; another domain is refused; off kills it", async () => {
    const { w, alice } = await adminWorld();
    expect((await alice.get(`${PAGE}.md`)).body).toContain("**Off.**");
    const on = await md(app, w, w.alice, "POST", `${PAGE}/actions/set_invite_link`, {
      link: "on",
      allowed_domains: `@Partner.test, ${w.tenant.subdomain}.test`,
      studios: "design",
    });
    expect(on.statusCode).toBe(201);
    const joinLink = new URL(/The workspace's invite link: `([^`]+)`/.exec(on.body)![1]!).pathname;
    expect(joinLink).toMatch(/^\/join\/[A-Za-z0-9_-]{40,}$/);
    expect((await alice.get(`${PAGE}.md`)).body).toContain("open to addresses at partner.test, ");

    const wrong = await openLink(w, joinLink, { email: "ivy@elsewhere.test" });
    expect(wrong.page.statusCode).toBe(200);
    expect(wrong.post!.statusCode).toBe(400);
    expect(wrong.post!.body).toContain("This invite link is for addresses at partner.test");
    const ivy = `ivy${newId(5)}@partner.test`;
    const asked = await openLink(w, joinLink, { email: ivy });
    expect(asked.post!.statusCode).toBe(200);
    expect(asked.post!.body).toContain("Check your mail");
    // No account until the address is confirmed.
    expect(await db().user.count({ where: { tenantId: w.tenant.id, email: ivy } })).toBe(0);
    const confirm = await inviteLink(ivy);
    const joined = await openLink(w, confirm, { name: "Ivy Irwin", password: GOOD_PASSWORD });
    expect(joined.post!.statusCode).toBe(303);
    const person = await db().user.findUniqueOrThrow({
      where: { tenantId_email: { tenantId: w.tenant.id, email: ivy } },
      include: { memberships: { include: { studio: { select: { handle: true } } } } },
    });
    expect(person.tenantAdmin).toBe(false);
    expect(person.memberships.map((member) => member.studio.handle)).toEqual(["design"]);

    // A member's address gets a word in its mailbox, never a second account; the answer is the same.
    const bobAsks = await openLink(w, joinLink, { email: w.bob.email });
    expect(bobAsks.post!.statusCode).toBe(200);
    expect((await mailTo(inbox, w.bob.email, /You already have an account/)).text).toContain("as @bob");
    expect(await db().user.count({ where: { tenantId: w.tenant.id, email: w.bob.email } })).toBe(1);
    const off = await md(app, w, w.alice, "POST", `${PAGE}/actions/set_invite_link`, { link: "off" });
    expect(off.statusCode).toBe(200);
    const dead = await openLink(w, joinLink, { email: `jo@partner.test` });
    expect(dead.page.statusCode).toBe(410);
    expect(dead.page.body).toContain("was withdrawn");
    expect(dead.post!.statusCode).toBe(410);
    expect((await alice.get(`${PAGE}.md`)).body).toContain("**Off.**");
  }, 90_000);
});

describe("a mail server that is down", () => {
  it("keeps the invitation and its mail, and sends it once the server is back", async () => {
    const { w, alice } = await adminWorld();
    const kim = `kim@${w.tenant.subdomain}.test`;
    await inbox.stop();
    try {
      expect((await invite(alice, { emails: kim })).statusCode).toBe(303);
      const link = await db().oneTimeLink.findFirstOrThrow({ where: { tenantId: w.tenant.id, email: kim } });
      expect(link.revokedAt).toBeNull();
      const row = await db().outboundEmail.findFirstOrThrow({
        where: { tenantId: w.tenant.id, toAddress: kim },
      });
      expect(row.status).toBe("queued");
      expect((await alice.get(`${PAGE}.md`)).body).toContain(kim);
    } finally {
      await inbox.start();
    }
    // Retried on the mail's own backoff (a minute or more): waited for, not timed.
    const mail = await waitFor(
      async () => inbox.to(kim).find((received) => /invited you to/.test(received.subject)) ?? null,
      110_000,
    );
    expect(linkIn(mail, "Accept the invitation")).toMatch(/^\/invite\//);
  }, 120_000);
});
