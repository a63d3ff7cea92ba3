// Tenant isolation of live pages (server-sent events), driven by the registry like
// test/tenant-isolation.test.ts, on the same seeds: every page with a live feed is asked
// for as `text/event-stream` by tenant B (token and session, on B's host and on A's) with
// A's ids. Expected: the page's own refusal (404; not authenticated on A's host) and none
// of A's data in any event; on B's host, a path that exists in B streams B's own page.
// Positive control: A's own credentials stream each of A's pages.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pages } from "../src/services/catalog/catalog.ts";
import { buildTestApp, login, makeWorld, type World } from "./helpers/app.ts";
import { attackers, type Caller, MODES, type Mode } from "./helpers/isolation-callers.ts";
import { concreteUrl, existsInB, handlesOf, type InB } from "./helpers/isolation-params.ts";
import { type Seed, seedAttacker, seedVictim, type Victim } from "./helpers/isolation-seeds.ts";
import { victimNeedles } from "./helpers/isolation-snapshot.ts";
import { openLive, portOf } from "./helpers/live.ts";
import { type OwnerBound, ownerBoundCases, ownerLeaves, seedOwnerBound } from "./helpers/owner-bound.ts";

let app: FastifyInstance;
let port: number;
let A: Victim;
let B: World;
let smuggle: Seed;
let callers: Record<Mode, Caller>;
let asA: Map<string, Caller>;
let needles: { onA: string[]; onB: string[] };
let bHas: InB;
const livePages = pages.filter((p) => p.live);

beforeAll(async () => {
  app = await buildTestApp();
  port = await portOf(app);
  const wA = await makeWorld("a");
  B = await makeWorld("b");
  A = await seedVictim(wA);
  ({ smuggle } = await seedAttacker(B, A));
  callers = await attackers(app, wA, B);
  asA = new Map();
  for (const s of [A.shared, A.only])
    asA.set(s.label, {
      label: `A @${s.actor.handle}`,
      host: wA.host,
      browser: await login(app, wA, s.actor),
    });
  const n = await victimNeedles(A);
  needles = { onA: n.all, onB: [...n.all, ...n.hostOnly] };
  bHas = await handlesOf(B);
});

afterAll(async () => {
  await app?.close();
});

/** A stream as `c` gets it: its status, and what it said within a moment (a 200 is read until its first event). */
async function stream(c: Caller, url: string) {
  const res = await openLive({ port, path: url, host: c.host, token: c.token, cookies: c.browser?.cookies });
  if (res.status === 200) await res.until((e) => e.length > 0, 5000);
  else await res.ended;
  res.close();
  return { status: res.status, location: res.headers.location, text: res.raw() };
}

describe("the suite reaches every live page", () => {
  it("lists them", () => {
    expect(livePages.map((p) => p.pattern).sort()).toEqual([
      "/runs",
      "/studios/:studio/commitments/:commitment",
      "/studios/:studio/decisions/:decision",
      "/studios/:studio/notes/:note",
      "/subagents/:handle/pending/:pending",
      "/subagents/:handle/runs",
      "/subagents/:handle/runs/:run",
    ]);
  });
});

describe("positive control: A streams A's own pages", () => {
  for (const page of livePages)
    it(page.pattern, async () => {
      for (const seed of [A.shared, A.only]) {
        const res = await stream(asA.get(seed.label)!, concreteUrl(page.pattern, seed));
        expect.soft(res.status, `${seed.label} ${page.pattern}`).toBe(200);
      }
    });
});

describe("tenant B asks for A's live pages", () => {
  for (const page of livePages)
    it(page.pattern, async () => {
      const failures: string[] = [];
      for (const mode of MODES) {
        const onB = mode.endsWith("B host");
        for (const seed of onB ? [A.shared, A.only, smuggle] : [A.shared, A.only]) {
          const url = concreteUrl(page.pattern, seed);
          const res = await stream(callers[mode], url);
          const shared = onB && existsInB(page.pattern, seed, bHas);
          const want = !onB ? (mode === "B session on A host" ? 303 : 401) : shared ? 200 : 404;
          if (res.status !== want)
            failures.push(`${mode} [${seed.label}] ${url}: ${res.status}, expected ${want}`);
          const leaked = (onB ? needles.onB : needles.onA).filter(
            (n) => !url.includes(n) && res.text.includes(n),
          );
          if (leaked.length) failures.push(`${mode} [${seed.label}] ${url}: leaks ${leaked.join(", ")}`);
        }
      }
      expect(failures).toEqual([]);
    });
});

// Last: it adds a person and an agent to A, and takes the person out of A's studios.
describe("owner-bound: an agent whose owner left, and a studio's agent outside its studio", () => {
  let bound: OwnerBound;
  let before: number;
  beforeAll(async () => {
    bound = await seedOwnerBound(A);
    before = (await stream(bound.agent, concreteUrl("/studios/:studio/notes/:note", A.only))).status;
    await ownerLeaves(A, bound);
  });

  it("control: before its owner left, the agent streamed the vault's note", () => {
    expect(before).toBe(200);
  });

  for (const page of livePages)
    it(page.pattern, async () => {
      const failures: string[] = [];
      for (const { who, seed, needles } of ownerBoundCases(A, bound)) {
        const url = concreteUrl(page.pattern, seed);
        const owner = await stream(bound.owner, url);
        const res = await stream(who, url);
        if (owner.status === 404 && res.status !== 404)
          failures.push(`${who.label} ${url}: its owner streams 404, it ${res.status}`);
        const leaked = needles.filter((n) => !url.includes(n) && res.text.includes(n));
        if (leaked.length) failures.push(`${who.label} ${url}: reads ${leaked.join(", ")}`);
      }
      expect(failures).toEqual([]);
    });
});
