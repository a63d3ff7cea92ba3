// Builds the real app against the run's database, plus helpers to make a fresh tenant
// per test (isolation by tenant, never by deleting rows) and to act as its people.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { inject } from "vitest";
import { buildApp } from "../../src/app.ts";
import { type Config, parseConfig } from "../../src/config.ts";
import { createPrisma, type PrismaClient } from "../../src/db/prisma.ts";
import { newId } from "../../src/lib/ids.ts";
import { registry } from "../../src/services/catalog/catalog.ts";
import { readPage } from "../../src/services/catalog/markdown-api.ts";
import { hashPassword } from "../../src/services/passwords.ts";
import type { Actor, Ctx } from "../../src/services/registry/types.ts";
import { createApiToken } from "../../src/services/tokens.ts";

export const PASSWORD = "correct horse battery staple";
let passwordHash: Promise<string> | undefined;

/** This test file's own database (test/file-database.ts). */
export function fileDatabaseUrl(): string {
  const url = globalThis.__cadreFileDatabaseUrl;
  if (!url) throw new Error("test/file-database.ts did not run (vitest setupFiles)");
  return url;
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return parseConfig({
    NODE_ENV: "test",
    DATABASE_URL: fileDatabaseUrl(),
    REDIS_URL: inject("redisUrl"),
    QUEUE_PREFIX: inject("queuePrefix"),
    LOG_LEVEL: "silent",
    // Counted as in production, but out of reach of suites that make thousands of calls with
    // one token; test/rate-limit.test.ts sets its own.
    API_RATE_LIMIT_PER_TOKEN: "1000000",
    API_RATE_LIMIT_PER_TENANT: "1000000",
    ...overrides,
  });
}

let shared: PrismaClient | undefined;
export function testPrisma(): PrismaClient {
  shared ??= createPrisma(fileDatabaseUrl(), 5);
  return shared;
}

export async function buildTestApp(overrides: Record<string, string> = {}): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig(overrides), prisma: testPrisma(), logger: false });
  await app.ready();
  return app;
}

export interface Person {
  id: string;
  handle: string;
  name: string;
  email: string;
  token: string;
}

export interface World {
  tenant: { id: string; subdomain: string; name: string };
  host: string;
  alice: Person;
  bob: Person;
  carol: Person;
  studio: { id: string; handle: string; inviteCode: string };
}

/**
 * A fresh tenant: alice (admin of studio `general`), bob (member), carol (in the
 * tenant but not in the studio). Each has a live API token.
 */
export async function makeWorld(prefix = "t"): Promise<World> {
  const db = testPrisma();
  passwordHash ??= hashPassword(PASSWORD);
  const hash = await passwordHash;
  const subdomain = `${prefix}${newId(8)}`;
  const tenant = await db.tenant.create({ data: { id: newId(), subdomain, name: `Tenant ${subdomain}` } });
  const person = async (handle: string, name: string): Promise<Person> => {
    const email = `${handle}@${subdomain}.test`;
    const u = await db.user.create({
      data: { id: newId(), tenantId: tenant.id, handle, name, email, kind: "person", passwordHash: hash },
    });
    // Every token could manage tokens and keys before scopes: the suites' people keep that.
    const { token } = await createApiToken(db, tenant.id, u.id, "test", { scope: "manage" });
    return { id: u.id, handle, name, email, token };
  };
  const alice = await person("alice", "Alice Adams");
  const bob = await person("bob", "Bob Brown");
  const carol = await person("carol", "Carol Chen");
  const studio = await db.studio.create({
    data: {
      id: newId(),
      tenantId: tenant.id,
      handle: "general",
      name: "General",
      inviteCode: newId(10),
      createdById: alice.id,
      members: {
        create: [
          { userId: alice.id, tenantId: tenant.id, role: "admin" },
          { userId: bob.id, tenantId: tenant.id, role: "member" },
        ],
      },
    },
  });
  return { tenant, host: `${subdomain}.localhost`, alice, bob, carol, studio };
}

/** One more person in the world's tenant, with the test password and a token, in its studio with `role`. */
export async function addMember(
  w: World,
  handle: string,
  name: string,
  role: "admin" | "member",
): Promise<Person> {
  const db = testPrisma();
  passwordHash ??= hashPassword(PASSWORD);
  const email = `${handle}@${w.tenant.subdomain}.test`;
  const u = await db.user.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      handle,
      name,
      email,
      kind: "person",
      passwordHash: await passwordHash,
    },
  });
  await db.studioMember.create({
    data: { studioId: w.studio.id, userId: u.id, tenantId: w.tenant.id, role },
  });
  const { token } = await createApiToken(db, w.tenant.id, u.id, "test", { scope: "manage" });
  return { id: u.id, handle, name, email, token };
}

/** Calls the registry in process as `who`, exactly as the internal markdown API does. */
async function ctxOf(world: World, who: Pick<Person, "id">): Promise<Ctx> {
  const db = testPrisma();
  const tenant = await db.tenant.findUniqueOrThrow({ where: { id: world.tenant.id } });
  const user = await db.user.findUniqueOrThrow({ where: { id: who.id } });
  return { db, tenant, actor: user as Actor };
}

export async function act(
  world: World,
  who: Person,
  path: string,
  action: string,
  params: Record<string, unknown>,
) {
  return registry.run(await ctxOf(world, who), path, action, params, { form: false });
}

/** A page as `who` reads it through the markdown API (what an agent's navigate sees). */
export async function readAs(world: World, who: Pick<Person, "id">, path: string) {
  return readPage(await ctxOf(world, who), path);
}

type Method = "GET" | "POST";

/** Markdown API call with a Bearer token. */
export function md(
  app: FastifyInstance,
  world: World,
  who: Person,
  method: Method,
  url: string,
  body?: unknown,
) {
  return app.inject({
    method,
    url,
    headers: { host: world.host, accept: "text/markdown", authorization: `Bearer ${who.token}` },
    ...(body !== undefined && { payload: body as Record<string, unknown> }),
  });
}

export interface Browser {
  cookies: Record<string, string>;
  csrf: string;
  get(url: string): Promise<LightMyRequestResponse>;
  post(url: string, form: Record<string, string>): Promise<LightMyRequestResponse>;
}

/** The CSRF token in a page's forms. */
export const csrfOf = (res: LightMyRequestResponse) => /name="_csrf" value="([^"]+)"/.exec(res.body)?.[1];

/** Logs in through the real form and keeps the cookies, like a browser. */
export async function login(app: FastifyInstance, world: World, who: Person): Promise<Browser> {
  const cookies: Record<string, string> = {};
  const keep = (res: LightMyRequestResponse) => {
    for (const c of res.cookies) {
      if (c.value === "" || (c.expires && c.expires.getTime() < Date.now())) delete cookies[c.name];
      else cookies[c.name] = c.value;
    }
    return res;
  };
  const first = keep(await app.inject({ method: "GET", url: "/login", headers: { host: world.host } }));
  const preSession = csrfOf(first);
  if (!preSession) throw new Error(`no csrf token on /login: ${first.statusCode}`);
  const res = keep(
    await app.inject({
      method: "POST",
      url: "/login",
      headers: { host: world.host },
      cookies,
      payload: { email: who.email, password: PASSWORD, _csrf: preSession },
    }),
  );
  if (res.statusCode !== 303) throw new Error(`login failed: ${res.statusCode}`);
  // A person the seeds gave a second factor (a passkey row whose key nothing checks, as in the
  // isolation sweep): past the step as if it had been answered. Sign-in tests use halfSignIn.
  if (String(res.headers.location).startsWith("/login/verify"))
    await testPrisma().session.updateMany({
      where: { tenantId: world.tenant.id, userId: who.id, stage: "second_factor" },
      data: { stage: "full", expiresAt: new Date(Date.now() + 86_400_000), confirmedAt: new Date() },
    });
  // The session's own token, from any page's log-out form, as a browser would have it.
  const home = keep(await app.inject({ method: "GET", url: "/", headers: { host: world.host }, cookies }));
  const csrf = csrfOf(home);
  if (!csrf) throw new Error(`no csrf token on / after login: ${home.statusCode}`);
  const browser: Browser = {
    cookies,
    csrf,
    get: async (url) =>
      keep(await app.inject({ method: "GET", url, headers: { host: world.host }, cookies })),
    post: async (url, form) =>
      keep(
        await app.inject({
          method: "POST",
          url,
          headers: { host: world.host, "content-type": "application/x-www-form-urlencoded" },
          cookies,
          payload: new URLSearchParams({ _csrf: csrf, ...form }).toString(),
        }),
      ),
  };
  return browser;
}

/** Parses the `## Actions` section of a markdown page into action names. */
export function actionNames(markdown: string): string[] {
  const section = markdown.split(/^## Actions$/m).pop() ?? "";
  return [...section.matchAll(/^- `([a-z_]+)` \(/gm)].map((m) => m[1]!);
}

// Twenty seconds by default: a wait ends at the event, so a long bound costs a passing test
// nothing, and a machine shared by many took over 5 s for a run's steps (issue 41).
export async function waitFor<T>(
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error("waitFor: timed out");
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Asserts a row and its outbox event were written by one transaction (same xmin).
 * A relay in a concurrently running test file may already have marked the event
 * published, which rewrites its row (new xmin); then there is nothing left to compare,
 * and the check reports that it could not run instead of passing or failing.
 */
export async function sameTransaction(
  rowSql: string,
  args: string[],
  eventId: string,
): Promise<boolean | "published"> {
  const db = testPrisma();
  const [row] = await db.$queryRawUnsafe<{ x: string }[]>(`SELECT xmin::text AS x FROM ${rowSql}`, ...args);
  const [ev] = await db.$queryRawUnsafe<{ x: string; published: boolean }[]>(
    "SELECT xmin::text AS x, published_at IS NOT NULL AS published FROM events WHERE id = $1",
    eventId,
  );
  if (!row || !ev) return false;
  if (ev.published && row.x !== ev.x) return "published";
  return row.x === ev.x;
}
