// Post/redirect/get for secrets (issue 30, item 6): a browser's form that makes a secret
// (a webhook, an API token) answers with a redirect to a page that shows it once. A reload
// of either re-posts nothing and shows nothing; the secret is in no cookie, URL or log, and
// at rest only sealed until it is shown.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pruneReveals } from "../src/services/reveals.ts";
import { makeAgent } from "./helpers/agents.ts";
import { type Browser, buildTestApp, login, makeWorld, testPrisma, type World } from "./helpers/app.ts";

const db = testPrisma;
let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app.close());

const HOOKS = "/subagents/scout/webhooks";
const secretOn = (html: string) => /<code class="token copyable">([^<]+)<\/code>/.exec(html)?.[1];

async function setup(): Promise<{ w: World; b: Browser }> {
  const w = await makeWorld("sr");
  await makeAgent(w, w.alice, "scout");
  return { w, b: await login(app, w, w.alice) };
}

/** Creates a webhook from the browser's form; the 303 and the reveal's address. */
async function createFromForm(b: Browser, name = "CI") {
  const res = await b.post(HOOKS, { _action: "create_webhook", name });
  expect(res.statusCode).toBe(303);
  return { res, url: res.headers.location! };
}

describe("a secret made in a browser's form", () => {
  // Regression (issue 30): the create answered 201 with the secret; reloading re-posted and
  // made a second webhook with another secret.
  it("redirects to a page that shows it once with its example; a reload of that page shows it no more", async () => {
    const { w, b } = await setup();
    const { res, url } = await createFromForm(b);
    expect(url).toMatch(/^\/secrets\/[a-z0-9]{24}$/);
    const shown = await b.get(url);
    expect(shown.statusCode).toBe(200);
    expect(shown.headers["cache-control"]).toBe("no-store");
    const secret = secretOn(shown.body)!;
    expect(secret).toMatch(/^whsec_/);
    expect(shown.body).toContain("Its signing secret: copy it now, it will not be shown again.");
    expect(shown.body).toContain(`SECRET=&#39;${secret}&#39;`);
    expect(shown.body).toContain('<div class="secret-help copy-blocks">');
    expect(shown.body).toContain("Created the webhook “CI”");
    expect(shown.body).toContain(`href="${HOOKS}"`);
    for (const h of [res.headers, shown.headers]) expect(JSON.stringify(h)).not.toContain(secret);
    const again = await b.get(url);
    expect(again.statusCode).toBe(410);
    expect(again.headers["cache-control"]).toBe("no-store");
    expect(again.body).toContain("Shown once");
    expect(again.body).not.toContain(secret);
    // One webhook, however often the pages are loaded.
    expect(await db().agentWebhook.count({ where: { tenantId: w.tenant.id } })).toBe(1);
  });

  it("at rest only sealed, emptied when shown; bound to the session that made it", async () => {
    const { w, b } = await setup();
    const { url } = await createFromForm(b);
    const id = url.split("/").pop()!;
    const row = await db().secretReveal.findUniqueOrThrow({ where: { id } });
    expect(row.sealed).not.toBeNull();
    expect(row.location).toBe(HOOKS);
    // alice in another browser, and bob: the page is not theirs to see (and they do not use it up).
    const other = await login(app, w, w.alice);
    const bob = await login(app, w, w.bob);
    for (const x of [other, bob]) expect((await x.get(url)).statusCode).toBe(410);
    const secret = secretOn((await b.get(url)).body)!;
    const after = await db().secretReveal.findUniqueOrThrow({ where: { id } });
    expect([after.sealed, after.shownAt instanceof Date]).toEqual([null, true]);
    expect(JSON.stringify(row)).not.toContain(secret);
    expect(JSON.stringify(Buffer.from(row.sealed!).toString("latin1"))).not.toContain(secret);
  });

  it("two loads at once: one shows it, the other says it was shown", async () => {
    const { b } = await setup();
    const { url } = await createFromForm(b);
    const both = await Promise.all([b.get(url), b.get(url)]);
    expect(both.map((r) => r.statusCode).sort()).toEqual([200, 410]);
  });

  it("never shown: gone after its ten minutes, or with the session (logging out)", async () => {
    const { w, b } = await setup();
    const { url } = await createFromForm(b);
    const id = url.split("/").pop()!;
    await db().secretReveal.update({ where: { id }, data: { expiresAt: new Date(Date.now() - 1) } });
    expect((await b.get(url)).statusCode).toBe(410);
    expect(await pruneReveals(db())).toBeGreaterThanOrEqual(1);
    expect(await db().secretReveal.findUnique({ where: { id } })).toBeNull();
    const token = await b.post("/u/alice/settings/tokens", { _action: "create_api_token", name: "later" });
    const tokenReveal = token.headers.location!.split("/").pop()!;
    expect(await db().secretReveal.count({ where: { id: tokenReveal } })).toBe(1);
    expect((await b.post("/logout", {})).statusCode).toBe(303);
    expect(await db().secretReveal.count({ where: { id: tokenReveal } })).toBe(0);
    expect(await db().secretReveal.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });

  it("markdown and token clients still get the secret in the action's own answer, and no reveal", async () => {
    const { w } = await setup();
    const res = await app.inject({
      method: "POST",
      url: `${HOOKS}/actions/create_webhook`,
      headers: { host: w.host, authorization: `Bearer ${w.alice.token}`, accept: "text/markdown" },
      payload: { name: "Script" },
    });
    expect(res.statusCode).toBe(201);
    expect(res.body).toMatch(/Its signing secret: `whsec_/);
    expect(await db().secretReveal.count({ where: { tenantId: w.tenant.id } })).toBe(0);
    // The reveal page is a browser's: a token gets no page there.
    const viaToken = await app.inject({
      method: "GET",
      url: "/secrets/abcdefghijklmnopqrstuvwx",
      headers: { host: w.host, authorization: `Bearer ${w.alice.token}` },
    });
    expect(viaToken.statusCode).toBe(404);
  });
});
