// Tenant isolation for the links opened before a session (test/tenant-isolation.test.ts sweeps
// the registry's pages; these are plain routes): a set-up link of workspace A, and the sign-in
// hand-over of A's sign-up, are refused on B's host and on the base host; a sign-up link (no
// workspace yet) is refused on every workspace's host. Refused means a 410 (or 404) that shows
// nothing of A, no link taken, no password set, no session made, in HTML and markdown alike.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueLink } from "../src/services/accounts/one-time-links.ts";
import { buildTestApp, csrfOf, makeWorld, testPrisma, type World } from "./helpers/app.ts";

const PASSWORD = "copper meadow whistles late";
let app: FastifyInstance;
let A: World;
let B: World;
const db = () => testPrisma();
beforeAll(async () => {
  app = await buildTestApp({ SIGNUP: "open" });
  A = await makeWorld("a");
  B = await makeWorld("b");
});
afterAll(async () => {
  await app?.close();
});

/** GET, then the form's POST with that page's cookies and CSRF token, in each format. */
async function tryLink(host: string, path: string, form: Record<string, string>) {
  const answers: LightMyRequestResponse[] = [];
  for (const markdown of [false, true]) {
    const accept = markdown ? { accept: "text/markdown" } : {};
    const page = await app.inject({ method: "GET", url: path, headers: { host, ...accept } });
    const cookies = Object.fromEntries(page.cookies.map((cookie) => [cookie.name, cookie.value]));
    const post = await app.inject({
      method: "POST",
      url: path,
      headers: { host, ...accept, "content-type": "application/x-www-form-urlencoded" },
      cookies,
      payload: new URLSearchParams({ _csrf: csrfOf(page) ?? "", ...form }).toString(),
    });
    answers.push(page, post);
  }
  return answers;
}

/** Refused, with no session; off A's own host, nothing of A's in the answer either. */
function expectRefused(answers: LightMyRequestResponse[], what: string, onA = false) {
  for (const res of answers) {
    expect([403, 404, 410], `${what}: ${res.statusCode} ${res.body.slice(0, 200)}`).toContain(res.statusCode);
    expect(res.cookies.map((cookie) => cookie.name)).not.toContain("cadre_session");
    if (onA) continue;
    for (const needle of [A.tenant.name, A.tenant.subdomain, A.carol.name, A.carol.email])
      expect(res.body, what).not.toContain(needle);
  }
}

describe("links opened before a session stay in their workspace", () => {
  it("refuses A's set-up link on B's host and on the base host", async () => {
    const { link, token } = await issueLink(db(), {
      tenantId: A.tenant.id,
      purpose: "setup",
      userId: A.carol.id,
      email: A.carol.email,
    });
    const before = await db().user.findUniqueOrThrow({ where: { id: A.carol.id } });
    const form = { name: "Mallory", password: PASSWORD };
    const onB = await tryLink(B.host, `/setup/${token}`, form);
    expectRefused(onB, "A's set-up link on B's host");
    expect(onB[0]!.statusCode).toBe(410);
    expect(onB[0]!.body).toContain("belongs to another workspace");
    expectRefused(await tryLink("localhost", `/setup/${token}`, form), "A's set-up link on the base host");
    expectRefused(await tryLink("localhost", `/signup/${token}`, form), "A's set-up link as a sign-up");

    const after = await db().user.findUniqueOrThrow({ where: { id: A.carol.id } });
    expect([after.name, after.passwordHash]).toEqual([before.name, before.passwordHash]);
    expect((await db().oneTimeLink.findUniqueOrThrow({ where: { id: link.id } })).usedAt).toBeNull();
    // The control: on A's own host the same link opens its form.
    const own = await app.inject({ method: "GET", url: `/setup/${token}`, headers: { host: A.host } });
    expect(own.statusCode).toBe(200);
  });

  it("refuses a sign-up link on a workspace's host, and A's sign-in hand-over on B's and the base host", async () => {
    const signup = await issueLink(db(), { tenantId: null, purpose: "signup", email: "eve@nowhere.test" });
    const handover = await issueLink(db(), {
      tenantId: A.tenant.id,
      purpose: "signup",
      userId: A.carol.id,
      email: A.carol.email,
      lifetimeHours: 0.1,
    });
    const fields = { workspace_name: "Eve", handle: "eve-works", name: "Eve", password: PASSWORD };
    for (const host of [A.host, B.host]) {
      expectRefused(
        await tryLink(host, `/signup/${signup.token}`, fields),
        `a sign-up link on ${host}`,
        host === A.host,
      );
      expectRefused(
        await tryLink(host, `/setup/${signup.token}`, fields),
        `a sign-up link as ${host}'s set-up`,
        host === A.host,
      );
    }
    expectRefused(await tryLink(B.host, `/signup/${handover.token}`, fields), "A's hand-over on B's host");
    expectRefused(
      await tryLink("localhost", `/signup/${handover.token}`, fields),
      "A's hand-over as a sign-up",
    );

    for (const made of [signup, handover])
      expect((await db().oneTimeLink.findUniqueOrThrow({ where: { id: made.link.id } })).usedAt).toBeNull();
    expect(await db().session.count({ where: { tenantId: { in: [A.tenant.id, B.tenant.id] } } })).toBe(0);
    expect(await db().tenant.count({ where: { subdomain: "eve-works" } })).toBe(0);
    // The control: A's host takes A's hand-over for a session of A's carol.
    const own = await app.inject({
      method: "GET",
      url: `/signup/${handover.token}`,
      headers: { host: A.host },
    });
    expect(own.statusCode).toBe(303);
    expect(await db().session.count({ where: { tenantId: A.tenant.id, userId: A.carol.id } })).toBe(1);
  });
});
