// Self-serve sign-up through the real stack: the web app writes the confirmation mail, the
// worker sends it over SMTP to a real server in the test; the link from the mail as received
// makes the workspace and its admin and signs them in on the new workspace's host. Closed by
// default; a domain list and an unknown address get the same answer, in about the same time;
// throttled per address and per client; bad input and a taken handle are 400s naming the field.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, sha256 } from "../src/lib/ids.ts";
import { SIGNUP_ANSWER_FLOOR_MS } from "../src/services/accounts/signup.ts";
import { linkIn, mailTo } from "./helpers/account-mail.ts";
import { type AgentEnv, startAgents } from "./helpers/agents.ts";
import { buildTestApp, csrfOf, makeWorld, testPrisma } from "./helpers/app.ts";
import { type Inbox, startInbox } from "./helpers/inbox.ts";

const BASE = "localhost";
const PASSWORD = "amber lanterns drift sideways";
let inbox: Inbox;
let env: AgentEnv;
let open: FastifyInstance;
const db = () => testPrisma();
beforeAll(async () => {
  inbox = await startInbox();
  open = await buildTestApp({ SMTP_URL: inbox.url, SIGNUP: "open" });
  env = await startAgents("signup", { SMTP_URL: inbox.url });
});
afterAll(async () => {
  await env?.close();
  await open?.close();
  await inbox?.close();
});

/** Each test's own client address: the throttle counts per address, across this file's apps. */
let clientCount = 0;
const newClient = () => `10.9.${Math.floor(++clientCount / 200)}.${clientCount % 200}`;

interface Browser {
  get(url: string, o?: { host?: string; markdown?: boolean }): Promise<LightMyRequestResponse>;
  /** A form POST with the CSRF token of the page it came from. */
  post(
    page: string,
    url: string,
    form: Record<string, string>,
    o?: { host?: string; timed?: (ms: number) => void },
  ): Promise<LightMyRequestResponse>;
}

/** A signed-out browser on one client address, keeping its cookies per host. */
function browser(app: FastifyInstance, address = newClient()): Browser {
  const jars = new Map<string, Record<string, string>>();
  const jar = (host: string) => jars.get(host) ?? jars.set(host, {}).get(host)!;
  const keep = (host: string, res: LightMyRequestResponse) => {
    for (const cookie of res.cookies) jar(host)[cookie.name] = cookie.value;
    return res;
  };
  const get: Browser["get"] = async (url, o = {}) => {
    const host = o.host ?? BASE;
    const res = await app.inject({
      method: "GET",
      url,
      remoteAddress: address,
      headers: { host, ...(o.markdown && { accept: "text/markdown" }) },
      cookies: jar(host),
    });
    return keep(host, res);
  };
  return {
    get,
    async post(page, url, form, o = {}) {
      const host = o.host ?? BASE;
      const first = await get(page, { host });
      const started = performance.now();
      const res = await app.inject({
        method: "POST",
        url,
        remoteAddress: address,
        headers: { host, "content-type": "application/x-www-form-urlencoded" },
        cookies: jar(host),
        payload: new URLSearchParams({ _csrf: csrfOf(first) ?? "", ...form }).toString(),
      });
      o.timed?.(performance.now() - started);
      return keep(host, res);
    },
  };
}

const askFor = (client: Browser, email: string) => client.post("/signup", "/signup", { email });

async function signupLinkFor(client: Browser, email: string): Promise<string> {
  expect((await askFor(client, email)).statusCode).toBe(200);
  return linkIn(await mailTo(inbox, email, /Create your Cadre workspace/), "Create your workspace");
}

const workspaceForm = (handle: string, extra: Record<string, string> = {}) => ({
  workspace_name: "Harbour Works",
  handle,
  name: "Hana Ito",
  password: PASSWORD,
  ...extra,
});

/** The page without what differs per request (CSRF tokens, cookies' values). */
const comparable = (res: LightMyRequestResponse) => res.body.replace(/value="[^"]*"/g, "");

describe("sign-up, open", () => {
  it("mails a link whose form makes the workspace and its admin, and signs them in on its host", async () => {
    const client = browser(open);
    const email = `hana${newId(6)}@harbour.test`;
    const link = await signupLinkFor(client, email);
    expect(link).toMatch(/^\/signup\/[A-Za-z0-9_-]{40,}$/);
    const token = link.split("/").pop()!;
    const row = await db().oneTimeLink.findUniqueOrThrow({ where: { tokenHash: sha256(token) } });
    expect([row.tenantId, row.purpose, row.email]).toEqual([null, "signup", email]);
    expect(Math.abs(row.expiresAt.getTime() - row.createdAt.getTime() - 24 * 3600_000)).toBeLessThan(5000);

    const form = await client.get(link);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain(email);
    expect(form.body).toContain("Workspace handle");
    const handle = `harbour${newId(6)}`;
    const done = await client.post(link, link, workspaceForm(handle));
    expect(done.statusCode, done.body).toBe(303);
    const location = new URL(String(done.headers.location));
    expect(location.host).toMatch(new RegExp(`^${handle}\\.localhost(:\\d+)?$`));
    expect(location.pathname).toMatch(/^\/signup\/[A-Za-z0-9_-]{40,}$/);

    const tenant = await db().tenant.findUniqueOrThrow({ where: { subdomain: handle } });
    expect(tenant.name).toBe("Harbour Works");
    const admin = await db().user.findFirstOrThrow({ where: { tenantId: tenant.id } });
    expect([admin.email, admin.name, admin.tenantAdmin, Boolean(admin.passwordHash)]).toEqual([
      email,
      "Hana Ito",
      true,
      true,
    ]);
    const general = await db().studio.findFirstOrThrow({
      where: { tenantId: tenant.id, handle: "general" },
      include: { members: true },
    });
    expect(general.members.map((member) => [member.userId, member.role])).toEqual([[admin.id, "admin"]]);
    expect((await db().oneTimeLink.findUniqueOrThrow({ where: { id: row.id } })).usedAt).not.toBeNull();

    // The new workspace's host takes the hand-over for a session of its own.
    const host = `${handle}.localhost`;
    const landed = await client.get(location.pathname, { host });
    expect(landed.statusCode).toBe(303);
    expect(landed.headers.location).toBe("/");
    expect(landed.cookies.some((cookie) => cookie.name === "cadre_session" && cookie.value)).toBe(true);
    const whoami = await client.get("/whoami.md", { host });
    expect(whoami.statusCode).toBe(200);
    expect(whoami.body).toContain("Hana Ito");

    // Each link works once, and says what to do next.
    const again = await client.get(link);
    expect(again.statusCode).toBe(410);
    expect(again.body).toContain("already used");
    expect(again.body).toContain("Start the sign-up again");
    const handoverAgain = await browser(open).get(location.pathname, { host });
    expect(handoverAgain.statusCode).toBe(410);
    expect(handoverAgain.body).toContain("log in with your address");
    expect(await db().session.count({ where: { userId: admin.id } })).toBe(1);
  });

  it("refuses bad fields by their labels and a taken handle, leaving the link usable", async () => {
    const client = browser(open);
    const email = `ivo${newId(6)}@harbour.test`;
    const link = await signupLinkFor(client, email);
    const bad = await client.post(
      link,
      link,
      workspaceForm("Bad_Handle!", { workspace_name: " ", name: "", password: "password123" }),
    );
    expect(bad.statusCode).toBe(400);
    for (const words of [
      "Workspace name: 1–100 characters",
      "Workspace handle: “bad_handle!” is not a valid workspace handle",
      "Your name: 1–100 characters",
      "Password: Too easy to guess",
    ])
      expect(bad.body).toContain(words);
    const unstorable = await client.post(
      link,
      link,
      workspaceForm("fine-handle", { workspace_name: "Nul\u0000Co" }),
    );
    expect(unstorable.statusCode).toBe(400);
    expect(unstorable.body).toContain("Workspace name: must not contain NUL characters");
    const reserved = await client.post(link, link, workspaceForm("signup"));
    expect(reserved.statusCode).toBe(400);
    expect(reserved.body).toContain("Workspace handle: “signup” is reserved");

    const taken = (await makeWorld("taken")).tenant.subdomain;
    const clash = await client.post(link, link, workspaceForm(taken));
    expect(clash.statusCode).toBe(400);
    expect(clash.body).toContain(`Workspace handle: The workspace handle “${taken}” is taken`);
    // The form comes back with what was typed, and the link is still open.
    expect(clash.body).toContain('value="Harbour Works"');
    const token = link.split("/").pop()!;
    expect(
      (await db().oneTimeLink.findUniqueOrThrow({ where: { tokenHash: sha256(token) } })).usedAt,
    ).toBeNull();
    expect(await db().user.count({ where: { email } })).toBe(0);

    const badEmail = await askFor(client, "not-an-address");
    expect(badEmail.statusCode).toBe(400);
    expect(badEmail.body).toContain("Email: “not-an-address” is not an email address.");
    expect((await askFor(client, "nul\u0000@harbour.test")).statusCode).toBe(400);
    const noCsrf = await open.inject({
      method: "POST",
      url: "/signup",
      headers: { host: BASE },
      remoteAddress: newClient(),
      payload: { email },
    });
    expect(noCsrf.statusCode).toBe(403);

    await db().oneTimeLink.update({
      where: { tokenHash: sha256(token) },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const expired = await client.get(link, { markdown: true });
    expect(expired.statusCode).toBe(410);
    expect(expired.body).toContain("expired");
    expect(expired.headers["content-type"]).toContain("text/markdown");
  });

  it("answers an address already in a workspace exactly as a new one, and mails both", async () => {
    const w = await makeWorld("known");
    const stranger = `nobody${newId(6)}@elsewhere.test`;
    const known = await askFor(browser(open), w.alice.email);
    const unknown = await askFor(browser(open), stranger);
    expect(unknown.statusCode).toBe(known.statusCode);
    expect(comparable(unknown)).toBe(comparable(known));
    await mailTo(inbox, w.alice.email, /Create your Cadre workspace/);
    await mailTo(inbox, stranger, /Create your Cadre workspace/);
  });

  it("is throttled per address asked about and per client, as logging in is", async () => {
    const client = browser(open);
    const email = `flood${newId(6)}@harbour.test`;
    const answers: number[] = [];
    // LOGIN_ACCOUNT_MAX_FAILURES is 10.
    for (let attempt = 0; attempt < 11; attempt++) answers.push((await askFor(client, email)).statusCode);
    expect(answers.slice(0, 10).every((status) => status === 200)).toBe(true);
    expect(answers[10]).toBe(429);
    // Another client may still ask for its own address.
    expect((await askFor(browser(open), `calm${newId(6)}@harbour.test`)).statusCode).toBe(200);

    const strict = await buildTestApp({ SIGNUP: "open", LOGIN_ADDRESS_MAX_FAILURES: "3" });
    try {
      const oneClient = browser(strict);
      const perClient: number[] = [];
      for (let attempt = 0; attempt < 4; attempt++)
        perClient.push((await askFor(oneClient, `many${attempt}${newId(6)}@harbour.test`)).statusCode);
      expect(perClient).toEqual([200, 200, 200, 429]);
      const refused = await askFor(oneClient, `more${newId(6)}@harbour.test`);
      expect(refused.headers["retry-after"]).toBeDefined();
    } finally {
      await strict.close();
    }
  });
});

describe("sign-up for a list of domains", () => {
  it("mails only those domains, answering every address the same, in about the same time", async () => {
    const allowed = `ok${newId(6)}.test`;
    const app = await buildTestApp({
      SMTP_URL: inbox.url,
      SIGNUP: `${allowed},other.test`,
      LOGIN_ACCOUNT_MAX_FAILURES: "1000",
      LOGIN_ADDRESS_MAX_FAILURES: "10000",
    });
    try {
      const client = browser(app);
      const yes = `ann@${allowed}`;
      const no = `ann@not${allowed}`;
      const timed = (email: string, into: number[]) =>
        client.post("/signup", "/signup", { email }, { timed: (ms) => into.push(ms) });
      const inList: number[] = [];
      const outside: number[] = [];
      // Interleaved, so a busy spell of the machine falls on both alike.
      const answers: LightMyRequestResponse[] = [];
      for (let round = 0; round < 7; round++) {
        answers.push(await timed(yes, inList));
        answers.push(await timed(no, outside));
      }
      expect(answers.every((res) => res.statusCode === 200)).toBe(true);
      expect(new Set(answers.map(comparable)).size).toBe(1);
      await mailTo(inbox, yes, /Create your Cadre workspace/, 7);
      expect(await db().outboundEmail.count({ where: { toAddress: no } })).toBe(0);
      expect(await db().oneTimeLink.count({ where: { email: no } })).toBe(0);

      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      // Both wait out the same floor; what is left is noise, well under the floor itself.
      expect(median(outside)).toBeGreaterThanOrEqual(SIGNUP_ANSWER_FLOOR_MS - 5);
      expect(median(inList)).toBeGreaterThanOrEqual(SIGNUP_ANSWER_FLOOR_MS - 5);
      expect(Math.abs(median(inList) - median(outside))).toBeLessThan(SIGNUP_ANSWER_FLOOR_MS / 2);
      console.log(
        `sign-up POST medians: mailed ${median(inList).toFixed(0)} ms, refused domain ${median(outside).toFixed(0)} ms`,
      );
    } finally {
      await app.close();
    }
  }, 60_000);
});

describe("sign-up, closed, and where it lives", () => {
  it("is closed by default: 404 with a page that says so, and no mail", async () => {
    const closed = await buildTestApp({ SMTP_URL: inbox.url });
    try {
      const client = browser(closed);
      const page = await client.get("/signup");
      expect(page.statusCode).toBe(404);
      expect(page.body).toContain("Sign-up is closed on this server");
      const email = `shut${newId(6)}@harbour.test`;
      const asked = await closed.inject({
        method: "POST",
        url: "/signup",
        headers: { host: BASE, accept: "text/markdown" },
        payload: { email },
      });
      expect(asked.statusCode).toBe(404);
      expect(asked.body).toContain("Sign-up is closed");
      expect(await db().oneTimeLink.count({ where: { email } })).toBe(0);
    } finally {
      await closed.close();
    }
  });

  it("lives on the base host before the DEFAULT_WORKSPACE fallback, and on no workspace's host", async () => {
    const w = await makeWorld("solo");
    const app = await buildTestApp({ SIGNUP: "open", DEFAULT_WORKSPACE: w.tenant.subdomain });
    try {
      const client = browser(app);
      const signup = await client.get("/signup");
      expect(signup.statusCode).toBe(200);
      expect(signup.body).toContain("Mail me a link");
      // The bare host still serves the default workspace everywhere else.
      const login = await client.get("/login");
      expect(login.statusCode).toBe(200);
      expect(login.body).toContain(w.tenant.name);
      const onWorkspace = await client.get("/signup", { host: w.host });
      expect(onWorkspace.statusCode).toBe(404);
      expect(onWorkspace.body).toContain("Sign-up is at http://localhost");
    } finally {
      await app.close();
    }
    // DEFAULT_WORKSPACE's handle cannot be signed up for, even before it exists.
    const future = `future${newId(6)}`;
    const ahead = await buildTestApp({ SIGNUP: "open", DEFAULT_WORKSPACE: future });
    try {
      const link = await signupLinkFor(browser(open), `solo${newId(6)}@harbour.test`);
      const reserved = await browser(ahead).post(link, link, workspaceForm(future));
      expect(reserved.statusCode).toBe(400);
      expect(reserved.body).toContain(`Workspace handle: “${future}” is reserved`);
    } finally {
      await ahead.close();
    }
  });
});
