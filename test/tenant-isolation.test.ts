// Tenant isolation, driven by the registry: every page pattern and every action in
// src/services/catalog/catalog.ts is tried against tenant A's objects by tenant B — B's token
// and B's session, on B's host (A's ids under B's host) and on A's host — in markdown
// and HTML. Expected: 404 (403) or not-authenticated, none of A's data in any answer,
// and not one row of A written. Positive controls show the same requests succeed for A.
// A page, param or action the suite cannot build a request for fails it loudly.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { actions, pages, registry } from "../src/services/catalog/catalog.ts";
import type { Actor, Ctx, PageDef } from "../src/services/registry/types.ts";
import {
  buildTestApp,
  login,
  makeWorld,
  PASSWORD,
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import {
  attackers,
  type Caller,
  excerpt,
  type Format,
  get,
  MODES,
  type Mode,
  post,
  requestTally,
} from "./helpers/isolation-callers.ts";
import {
  expectation,
  KNOWN_UNLISTED,
  NEEDS_AN_AUTHENTICATOR,
  NEEDS_AN_IDENTITY_PROVIDER,
  NO_CONTENT,
  NOT_FOR_PEOPLE,
} from "./helpers/isolation-expected.ts";
import {
  actionUrl,
  concreteUrl,
  existsInB,
  handlesOf,
  type InB,
  probeBody,
} from "./helpers/isolation-params.ts";
import { type Seed, seedAttacker, seedVictim, type Victim } from "./helpers/isolation-seeds.ts";
import { foreignRowsMentioning, leaks, snapshot, victimNeedles } from "./helpers/isolation-snapshot.ts";
import { send } from "./helpers/webhooks.ts";

const PAGE_FORMATS: Format[] = ["md", "md-suffix", "html"];
const ACTION_FORMATS = ["md", "html"] as const;

let app: FastifyInstance;
let A: Victim;
let B: World;
let bMark: string;
let smuggle: Seed;
let callers: Record<Mode, Caller>;
let asA: Map<string, { token: Caller; session: Caller }>;
let needles: { onA: string[]; onB: string[] };
let bHas: InB;
const byName = new Map(actions.map((a) => [a.name, a]));
const { count, report } = requestTally("tenant isolation");
/** A's two seeds: URLs that name A's objects. */
const seeds = (): Seed[] => [A.shared, A.only];
/** On B's host, also B's own pages with A's ids smuggled in as action params. */
const attackSeeds = (mode: Mode): Seed[] => (mode.endsWith("B host") ? [...seeds(), smuggle] : seeds());

beforeAll(async () => {
  app = await buildTestApp();
  const wA = await makeWorld("a");
  B = await makeWorld("b");
  A = await seedVictim(wA);
  ({ mark: bMark, smuggle } = await seedAttacker(B, A));
  callers = await attackers(app, wA, B);
  asA = new Map();
  for (const s of seeds())
    asA.set(s.label, {
      token: { label: `A @${s.actor.handle} token`, host: wA.host, token: s.actor.token },
      session: {
        label: `A @${s.actor.handle} session`,
        host: wA.host,
        browser: await login(app, wA, s.actor),
      },
    });
  const n = await victimNeedles(A);
  needles = { onA: n.all, onB: [...n.all, ...n.hostOnly] };
  bHas = await handlesOf(B);
});

afterAll(async () => {
  report();
  await app?.close();
});

/** Runs `fn` for every seed, collecting failures instead of stopping at the first, then asserts there were none. */
async function collect(fn: (seed: Seed, fail: (msg: string) => void) => Promise<void>, list = seeds()) {
  const failures: string[] = [];
  for (const seed of list) await fn(seed, (msg) => failures.push(`[${seed.label}] ${msg}`));
  expect(failures).toEqual([]);
}

/** Whether the actor may use the action on the page, computed in process, as the registry would. */
async function unavailableReason(who: Person, path: string, action: string): Promise<string | null> {
  const db = testPrisma();
  const tenant = await db.tenant.findUniqueOrThrow({ where: { id: A.world.tenant.id } });
  const actor = (await db.user.findUniqueOrThrow({ where: { id: who.id } })) as Actor;
  const ctx: Ctx = { db, tenant, actor };
  const r = await registry.resolve(ctx, path);
  return byName.get(action)!.available?.(ctx, r.scope) ?? null;
}

describe("the registry drives the suite", () => {
  it("can build a URL for every page and a body for every action on it", () => {
    expect(registry.pages).toBe(pages);
    for (const seed of [...seeds(), smuggle])
      for (const page of pages) {
        const url = concreteUrl(page.pattern, seed);
        expect(url).not.toContain(":");
        for (const name of page.actions) probeBody(byName.get(name)!, page, seed, A);
      }
  });

  it("every action is listed on some page (an unlisted one escapes this suite)", () => {
    // The registry refuses an action its page does not list, so an unlisted action is
    // unreachable over HTTP and by agents, and this suite cannot try it.
    const listed = new Set(pages.flatMap((p) => p.actions));
    expect(actions.map((a) => a.name).filter((n) => !listed.has(n))).toEqual([...KNOWN_UNLISTED]);
  });
});

describe("positive control: A's own credentials on A's host", () => {
  for (const page of pages)
    it(`reads ${page.pattern} and describes its actions`, async () => {
      await collect(async (seed, fail) => {
        const url = concreteUrl(page.pattern, seed);
        for (const [kind, caller] of Object.entries(asA.get(seed.label)!)) {
          for (const format of PAGE_FORMATS) {
            const res = await get(app, caller, url, format);
            count(`A on A host: GET page (${kind}, ${format})`);
            if (res.statusCode !== 200) fail(`${kind} GET ${url} [${format}]: ${excerpt(res)}`);
            else if (!NO_CONTENT.has(page.pattern) && !res.body.includes(A.mark))
              fail(`${kind} GET ${url} [${format}]: A's own page shows no A content`);
          }
          for (const name of page.actions) {
            const reason = await unavailableReason(seed.actor, url, name);
            for (const format of ACTION_FORMATS) {
              const res = await get(app, caller, actionUrl(url, name), format);
              count(`A on A host: GET action (${kind}, ${format})`);
              if (res.statusCode !== (reason ? 403 : 200))
                fail(`${kind} GET ${actionUrl(url, name)} [${format}]: ${excerpt(res)}`);
            }
          }
        }
      });
    });
});

describe("tenant B against tenant A", () => {
  let before: Record<string, string>;
  beforeAll(async () => {
    before = await snapshot(A.world.tenant.id);
  });

  async function sweep(page: PageDef, mode: Mode) {
    // B's own page may end B's sessions (change_password through B's token ends every other
    // one): each page's sweep starts with a session signed in afresh.
    if (!mode.startsWith("B token")) callers[mode] = (await attackers(app, A.world, B))[mode];
    const caller = callers[mode];
    const onB = mode.endsWith("B host");
    await collect(async (seed, fail) => {
      const url = concreteUrl(page.pattern, seed);
      const shared = onB && existsInB(page.pattern, seed, bHas);
      const check = (
        what: string,
        target: string,
        res: LightMyRequestResponse,
        sent: string,
        want: ReturnType<typeof expectation>,
      ) => {
        count(
          `${mode}: ${what}${seed.owner === "B" ? " (B's objects, A's ids in params)" : shared ? " (path exists in B)" : ""} → ${res.statusCode}`,
        );
        if (!want.ok(res)) fail(`${what} ${target}: expected ${want.text}, got ${excerpt(res)}`);
        const leaked = leaks(res, onB ? needles.onB : needles.onA, sent);
        if (leaked.length) fail(`${what} ${target}: leaks ${leaked.join(", ")} — ${excerpt(res)}`);
      };
      for (const format of PAGE_FORMATS)
        check(
          `GET page [${format}]`,
          url,
          await get(app, caller, url, format),
          url,
          expectation(mode, shared, "page", format, false),
        );
      for (const name of page.actions) {
        const target = actionUrl(url, name);
        const body = probeBody(byName.get(name)!, page, seed, A);
        const sent = `${target} ${JSON.stringify(body.json)}`;
        for (const format of ACTION_FORMATS) {
          const d = await get(app, caller, target, format);
          check(
            `GET action [${format}]`,
            target,
            d,
            target,
            expectation(mode, shared, "describe", format, false),
          );
          const p = await post(app, caller, target, format, body);
          check(
            `POST action [${format}]`,
            target,
            p,
            sent,
            expectation(mode, shared, "post", format, body.aRef),
          );
        }
      }
    }, attackSeeds(mode));
  }

  it("B's search for A's words finds nothing (and A's own search does)", async () => {
    for (const q of [A.findme, A.mark])
      for (const mode of ["B token on B host", "B session on B host"] as const)
        for (const format of PAGE_FORMATS) {
          const url = `/search?q=${encodeURIComponent(q)}`;
          const res = await get(app, callers[mode], url, format);
          expect(res.statusCode).toBe(200);
          expect(res.body).toContain("Nothing matches");
          expect(leaks(res, needles.onB, url)).toEqual([]);
        }
    const mine = await get(app, asA.get("shared")!.session, `/search?q=${A.findme}`, "md");
    expect(mine.statusCode).toBe(200);
    expect(mine.body).toContain(A.mark);
    expect(mine.body).toContain(A.shared.note);
  });

  it("/u/alice and /studios/general on B's host are B's, never A's", async () => {
    const db = testPrisma();
    for (const mode of ["B token on B host", "B session on B host"] as const)
      for (const format of PAGE_FORMATS) {
        const alice = await db.user.findUniqueOrThrow({ where: { id: B.alice.id } });
        const profile = await get(app, callers[mode], "/u/alice", format);
        expect(profile.statusCode).toBe(200);
        expect(profile.body).toContain(format === "html" ? alice.name.replace(/&/g, "&amp;") : alice.name);
        expect(leaks(profile, needles.onB, "")).toEqual([]);
        const studio = await get(app, callers[mode], "/studios/general", format);
        expect(studio.statusCode).toBe(200);
        expect(studio.body).toContain(bMark);
        expect(leaks(studio, needles.onB, "")).toEqual([]);
      }
    // The control: the same paths on A's host, as A, show A's person and studio.
    for (const url of ["/u/alice", "/studios/general"]) {
      const res = await get(app, asA.get("shared")!.session, url, "md");
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain(A.mark);
    }
  });

  it("A's notifications and tokens cannot be dismissed or revoked from B by id", async () => {
    const db = testPrisma();
    for (const seed of seeds())
      for (const mode of ["B token on B host", "B session on B host"] as const)
        for (const format of ACTION_FORMATS) {
          const dismiss = await post(app, callers[mode], "/notifications/actions/dismiss", format, {
            json: { id: seed.notification },
            form: { id: seed.notification },
            aRef: true,
          });
          expect(dismiss.statusCode).toBe(404);
          const revoke = await post(
            app,
            callers[mode],
            "/u/alice/settings/tokens/actions/revoke_api_token",
            format,
            {
              json: { id: seed.token.id },
              form: { id: seed.token.id },
              aRef: true,
            },
          );
          expect(revoke.statusCode).toBe(404);
        }
    for (const seed of seeds()) {
      expect(
        (await db.notification.findUniqueOrThrow({ where: { id: seed.notification } })).dismissedAt,
      ).toBeNull();
      expect((await db.apiToken.findUniqueOrThrow({ where: { id: seed.token.id } })).revokedAt).toBeNull();
    }
  });

  // The CSV exports are plain routes, not registry pages, so the sweep below does not reach them.
  it("A's audit trail: A's token pages list A's calls; B's token gets 404 on B's host and 401 on A's", async () => {
    const db = testPrisma();
    for (const seed of seeds()) {
      const url = `/u/${seed.actor.handle}/settings/tokens/${seed.token.id}`;
      const rows = await db.apiCall.findMany({ where: { tokenId: seed.token.id } });
      expect(rows.map((r) => r.tool ?? r.action).sort()).toEqual(["add_comment", "read_page"]);
      const own = await get(app, asA.get(seed.label)!.token, url, "md");
      expect(own.statusCode).toBe(200);
      expect(own.body).toContain("`read_page`");
      for (const mode of ["B token on B host", "B token on A host"] as const) {
        const res = await get(app, callers[mode], url, "md");
        expect(res.statusCode).toBe(mode === "B token on B host" ? 404 : 401);
        expect(res.body).not.toContain("read_page");
        expect(leaks(res, [...rows.map((r) => r.id), ...needles.onB], url)).toEqual([]);
      }
    }
  });

  // A call's page is the query of /tools, which the sweep's URLs (one per pattern) do not carry.
  it("A's tool calls: their managers read them; B's callers and A's other people get nothing", async () => {
    const failures: string[] = [];
    for (const seed of seeds()) {
      const url = `/tools?call=${A.toolCalls[seed.label as "shared" | "only"]}`;
      for (const format of PAGE_FORMATS) {
        const own = await get(app, asA.get(seed.label)!.token, url, format);
        if (own.statusCode !== 200 || !own.body.includes(`Found ${A.mark}`))
          failures.push(`A's manager ${url} [${format}]: ${excerpt(own)}`);
        for (const mode of MODES) {
          const res = await get(app, callers[mode], url, format);
          count(`${mode}: GET A's tool call [${format}] → ${res.statusCode}`);
          if (mode.endsWith("B host") ? res.statusCode !== 404 : res.statusCode < 300)
            failures.push(`${mode} ${url} [${format}]: ${excerpt(res)}`);
          const leaked = leaks(res, mode.endsWith("B host") ? needles.onB : needles.onA, url);
          if (leaked.length) failures.push(`${mode} ${url} [${format}]: leaks ${leaked.join(", ")}`);
        }
      }
      // In A, someone who does not manage the agent (the other seed's person) gets 404 too.
      const other = seeds().find((s) => s.label !== seed.label)!;
      const stranger = await get(app, asA.get(other.label)!.token, url, "md");
      if (stranger.statusCode !== 404 || stranger.body.includes(A.mark))
        failures.push(`A's @${other.actor.handle} ${url}: ${excerpt(stranger)}`);
    }
    expect(failures).toEqual([]);
  });

  it("usage CSVs: B gets its own rows or nothing, never A's", async () => {
    const failures: string[] = [];
    for (const mode of MODES)
      for (const seed of seeds())
        for (const url of [`/subagents/${seed.agent}/usage.csv`, "/usage.csv", "/usage.csv?scope=mine"])
          for (const format of ["md", "html"] as const) {
            const res = await get(app, callers[mode], url, format);
            const onB = mode.endsWith("B host");
            count(`${mode}: GET usage CSV [${format}] → ${res.statusCode}`);
            // B has a `scout` (its own, with a ledger row carrying B's mark) but no agent of A's only seed.
            const own =
              onB && (url.startsWith("/usage") || seed.owner === "B" || bHas.agents.has(seed.agent));
            const ok = !onB
              ? mode === "B session on A host" && format === "html"
                ? res.statusCode === 303 && String(res.headers.location).startsWith("/login")
                : res.statusCode === 401
              : own
                ? res.statusCode === 200 && res.body.includes(bMark) && res.body.startsWith("time_utc,")
                : res.statusCode === 404;
            if (!ok) failures.push(`${mode} ${url} [${format}]: ${excerpt(res)}`);
            const leaked = leaks(res, onB ? needles.onB : needles.onA, url);
            if (leaked.length) failures.push(`${mode} ${url} [${format}]: leaks ${leaked.join(", ")}`);
          }
    expect(failures).toEqual([]);
    // The control: A's owner downloads A's rows (its key label and model carry A's mark).
    for (const seed of seeds()) {
      const res = await get(app, asA.get(seed.label)!.token, `/subagents/${seed.agent}/usage.csv`, "md");
      expect(res.statusCode).toBe(200);
      expect(res.body.trim().split("\n")).toHaveLength(3);
      expect(res.body).toContain(A.mark);
    }
  });

  it("A's provider keys cannot be tested, revoked or picked from B by id", async () => {
    const db = testPrisma();
    const ids = seeds().flatMap((s) => [s.keys!.use, s.keys!.revoke]);
    const failures: string[] = [];
    for (const mode of ["B token on B host", "B session on B host"] as const)
      for (const id of ids)
        for (const [url, json] of [
          ["/u/alice/settings/api-keys/actions/test_api_key", { key_id: id }],
          ["/u/alice/settings/api-keys/actions/revoke_api_key", { key_id: id }],
          ["/subagents/scout/actions/set_agent_api_key", { api_key: id }],
        ] as const)
          for (const format of ACTION_FORMATS) {
            const res = await post(app, callers[mode], url, format, { json, form: json, aRef: true });
            count(`${mode}: key action with A's key id [${format}] → ${res.statusCode}`);
            // test/revoke look the key up among B's alice's own: 404; picking one for an agent is a bad param: 400.
            const want = url.endsWith("set_agent_api_key") ? 400 : 404;
            if (res.statusCode !== want)
              failures.push(`${mode} ${url} ${id}: expected ${want}, ${excerpt(res)}`);
          }
    expect(failures).toEqual([]);
    const keys = await db.agentApiKey.findMany({ where: { id: { in: ids } } });
    expect(keys.map((k) => [k.revokedAt, k.lastTestedAt])).toEqual(ids.map(() => [null, null]));
    // B's scout still uses the shared endpoint.
    const scout = await db.user.findFirstOrThrow({ where: { tenantId: B.tenant.id, handle: "scout" } });
    expect((scout.agentConfig as { api_key_id?: string }).api_key_id).toBeUndefined();
  });

  it("A's pending actions cannot be approved or rejected from B by id, on any review page", async () => {
    const db = testPrisma();
    const reviewPages = [
      "/approvals",
      "/subagents/scout/pending",
      `/subagents/scout/pending/${smuggle.pending}`,
    ];
    const ids = seeds().flatMap((s) => [s.pending, ...Object.values(s.pendings)]);
    const failures: string[] = [];
    for (const mode of ["B token on B host", "B session on B host"] as const)
      for (const page of reviewPages)
        for (const id of ids)
          for (const [name, json] of [
            ["approve_action", { id }],
            ["reject_action", { id, reason: "B says no" }],
          ] as const)
            for (const format of ACTION_FORMATS) {
              const form = Object.fromEntries(Object.entries(json).map(([k, v]) => [k, String(v)]));
              const res = await post(app, callers[mode], actionUrl(page, name), format, {
                json,
                form,
                aRef: true,
              });
              count(`${mode}: ${name} with A's pending id [${format}] → ${res.statusCode}`);
              if (res.statusCode !== 404) failures.push(`${mode} ${name} ${page} #${id}: ${excerpt(res)}`);
            }
    expect(failures).toEqual([]);
    const rows = await db.agentPendingAction.findMany({ where: { id: { in: ids } } });
    expect(rows).toHaveLength(ids.length);
    for (const r of rows) expect([r.status, r.reviewedById, r.editedParams]).toEqual(["pending", null, null]);
    // Many requests (every seeded id, on every review page, both ways, each format): not a timing test.
  }, 120_000);

  it("path tricks on B's host reach none of A's objects", async () => {
    const { note, decision } = A.shared;
    const urls = [
      `/studios/general/notes/${note}/../../notes/${note}`,
      `/studios/general/notes/x/..%2F${note}`,
      `//studios/general/notes/${note}`,
      `/studios/general/notes/${note.toUpperCase()}`,
      `/studios/general/notes/${note}/`,
      `/studios/general/notes/${note}?page=1`,
      `/studios/general/decisions/${decision}.md`,
      `/healthz/../studios/general/notes/${note}`,
      `/assets/../studios/general/notes/${note}`,
      `/studios/${A.only.studio.handle.toUpperCase()}`,
      `/u/${A.zed.handle}%2Fsettings`,
    ];
    const failures: string[] = [];
    for (const mode of ["B token on B host", "B session on B host"] as const)
      for (const url of urls)
        for (const format of ["md", "html"] as const) {
          const res = await get(app, callers[mode], url, format);
          count(`${mode}: path trick [${format}] → ${res.statusCode}`);
          if (res.statusCode < 300) failures.push(`${mode} ${url} [${format}]: ${excerpt(res)}`);
          const leaked = leaks(res, needles.onB, url);
          if (leaked.length) failures.push(`${mode} ${url} [${format}]: leaks ${leaked.join(", ")}`);
        }
    expect(failures).toEqual([]);
  });

  it("credentials do not cross hosts in either direction", async () => {
    // A's (unused) token on B's host: unknown there.
    for (const seed of seeds()) {
      const res = await get(
        app,
        { label: "A token", host: B.host, token: seed.token.secret },
        "/whoami",
        "md",
      );
      expect(res.statusCode).toBe(401);
      expect(leaks(res, needles.onB, "")).toEqual([]);
    }
    // Logging in with a person of the other tenant fails on both hosts.
    for (const [host, who] of [
      [A.world.host, B.alice],
      [B.host, A.world.alice],
    ] as const) {
      const page = await app.inject({ method: "GET", url: "/login", headers: { host } });
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? "";
      const res = await app.inject({
        method: "POST",
        url: "/login",
        headers: { host },
        cookies: Object.fromEntries(page.cookies.map((c) => [c.name, c.value])),
        payload: { email: who.email, password: PASSWORD, _csrf: csrf },
      });
      expect(res.statusCode).toBe(401);
      expect(res.cookies.map((c) => c.name)).not.toContain("cadre_session");
    }
  });

  for (const page of pages)
    describe(page.pattern, () => {
      for (const mode of MODES) it(mode, () => sweep(page, mode));
    });

  // POST /hooks/:id authenticates by signature and is no registry page: the sweep does not reach it.
  it("A's webhooks: 404 on B's host even signed with A's secret, 401 on A's host unsigned", async () => {
    const failures: string[] = [];
    for (const hook of A.hooks) {
      const cases = [
        ["B host, A's secret", await send(app, B, hook.id, "{}", { secret: hook.secret }), 404],
        ["B host, B's token", await send(app, B, hook.id, "{}", { secret: B.alice.token }), 404],
        ["A host, unsigned", await send(app, A.world, hook.id, "{}", { signature: "" }), 401],
      ] as const;
      for (const [what, res, want] of cases) {
        count(`webhook delivery (${what}) → ${res.statusCode}`);
        if (res.statusCode !== want)
          failures.push(`${what} /hooks/${hook.id}: expected ${want}, ${excerpt(res)}`);
        const leaked = leaks(res, needles.onB, `/hooks/${hook.id}`);
        if (leaked.length) failures.push(`${what} /hooks/${hook.id}: leaks ${leaked.join(", ")}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("wrote nothing of A's, and no row of any other tenant mentions A", async () => {
    expect(await snapshot(A.world.tenant.id)).toEqual(before);
    // The audit trail, which A's own calls move: B's calls are in B's, each row naming its own.
    await app.auditLog.flush();
    const rows = await testPrisma().$queryRaw<{ tenant: string; n: number; crossed: number }[]>`
      SELECT c.tenant_id AS tenant, count(*)::int AS n,
        count(*) FILTER (WHERE t.tenant_id <> c.tenant_id OR u.tenant_id <> c.tenant_id)::int AS crossed
      FROM api_calls c JOIN api_tokens t ON t.id = c.token_id JOIN users u ON u.id = c.actor_id
      WHERE c.tenant_id IN (${A.world.tenant.id}, ${B.tenant.id}) GROUP BY c.tenant_id`;
    expect(rows.map((r) => r.crossed)).toEqual([0, 0]);
    expect(rows.find((r) => r.tenant === B.tenant.id)?.n).toBeGreaterThan(100);
    expect(await foreignRowsMentioning(A.world.tenant.id, needles.onA)).toEqual({});
  });
});

describe("positive control: the same actions, with the same params, succeed for A", () => {
  const succeeded = new Set<string>();
  // Deepest pages first: an action on a parent (archiving an agent, removing a member)
  // can end what the actions of its children need (archiving cancels the agent's runs).
  const depth = (p: PageDef) => p.pattern.split("/").length;
  const ordered = pages.filter((p) => p.actions.length).sort((a, b) => depth(b) - depth(a));
  for (const page of ordered)
    it(`runs every action of ${page.pattern}`, async () => {
      await collect(async (seed, fail) => {
        const url = concreteUrl(page.pattern, seed);
        const caller = asA.get(seed.label)!.token;
        for (const name of page.actions) {
          const target = actionUrl(url, name);
          // An action this actor may not use here must answer 403 (the page resolved), never 404.
          const reason = await unavailableReason(seed.actor, url, name);
          const res = await post(app, caller, target, "md", probeBody(byName.get(name)!, page, seed, A));
          count("A on A host: POST action (token, md)");
          // Saving an SSO provider discovers it: with no provider to find, A is refused (400) too;
          // without an authenticator's code, so is confirming one (400) or renewing its codes (409).
          const ok = reason
            ? res.statusCode === 403
            : NEEDS_AN_IDENTITY_PROVIDER.has(name)
              ? [200, 201, 400, 404].includes(res.statusCode)
              : NEEDS_AN_AUTHENTICATOR.has(name)
                ? [400, 409].includes(res.statusCode)
                : [200, 201].includes(res.statusCode);
          if (!ok)
            fail(`POST ${target}: expected ${reason ? `403 (${reason})` : "200/201"}, got ${excerpt(res)}`);
          if (res.statusCode < 300) succeeded.add(name);
          if (name === "search" && !res.body.includes(A.mark))
            fail(`POST ${target}: A's search found nothing of A's`);
        }
      });
    });

  it("A's webhook, signed with its secret on A's host, starts a run of A's agent", async () => {
    // The shared seed's webhook was rotated (and deleted) above; the other seed's only
    // agent page is zed's: create a fresh one to deliver to.
    const made = await post(
      app,
      asA.get("shared")!.token,
      "/subagents/scout/webhooks/actions/create_webhook",
      "md",
      {
        json: { name: "control" },
        form: {},
        aRef: false,
      },
    );
    expect(made.statusCode).toBe(201);
    const id = /\/hooks\/([a-z0-9]+)/.exec(made.body)![1]!;
    const secret = /`(whsec_[\w-]+)`/.exec(made.body)![1]!;
    const res = await send(app, A.world, id, "{}", { secret });
    expect(res.statusCode).toBe(202);
    const run = await testPrisma().subagentTaskRun.findUniqueOrThrow({
      where: { id: JSON.parse(res.body).run },
    });
    expect([run.tenantId, run.triggerRef]).toEqual([A.world.tenant.id, id]);
  });

  it("every action on a page succeeded for A at least once", () => {
    const listed = [...new Set(pages.flatMap((p) => p.actions))];
    expect(
      listed.filter(
        (n) =>
          !succeeded.has(n) &&
          !NOT_FOR_PEOPLE.has(n) &&
          !NEEDS_AN_IDENTITY_PROVIDER.has(n) &&
          !NEEDS_AN_AUTHENTICATOR.has(n),
      ),
    ).toEqual([]);
  });
});
