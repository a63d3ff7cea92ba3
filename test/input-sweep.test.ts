// Bad input, driven by the registry: every action on every page of src/services/catalog/catalog.ts,
// each of its params given text Postgres cannot store (NUL, a lone UTF-16 surrogate) or
// bytes that are not UTF-8, and each scalar param given as a list — as JSON with a token
// (markdown), as a browser form (HTML) and in process, the way the navigator calls
// actions. Every other param carries a valid value (test/helpers/isolation-params.ts), so the
// bad one is the only thing wrong. Expected: a 400 naming that param, and nothing written.
// A new action is swept as soon as a page lists it; one with params that no seeded
// actor can use fails the suite.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { actions, pages, registry } from "../src/services/catalog/catalog.ts";
import { runAction } from "../src/services/catalog/markdown-api.ts";
import { fields } from "../src/services/registry/params.ts";
import type { ActionDef, Actor, Ctx, PageDef } from "../src/services/registry/types.ts";
import { type Browser, buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import {
  BAD_FORM_VALUES,
  BAD_STRINGS,
  issuesOf,
  LIST_FOR_SCALAR,
  postRaw,
  rawForm,
} from "./helpers/bad-input.ts";
import { actionUrl, concreteUrl, probeBody } from "./helpers/isolation-params.ts";
import { type Seed, seedVictim, type Victim } from "./helpers/isolation-seeds.ts";
import { snapshot } from "./helpers/isolation-snapshot.ts";

const db = testPrisma();
const byName = new Map(actions.map((a) => [a.name, a]));
let app: FastifyInstance;
let w: World;
let v: Victim;
const browsers = new Map<string, Browser>();
let before: Record<string, string>;
let requests = 0;

/** Who can use the action: a seed's person (over HTTP too) or, for agent-only actions, its subagent (in process). */
interface User {
  seed: Seed;
  ctx: Ctx;
  person: boolean;
}

async function ctxOf(userId: string): Promise<Ctx> {
  const tenant = await db.tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
  const actor = (await db.user.findUniqueOrThrow({ where: { id: userId } })) as Actor;
  return { db, tenant, actor };
}

async function userFor(page: PageDef, action: string): Promise<User | null> {
  for (const seed of [v.shared, v.only]) {
    const agent = await db.user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: seed.agent } });
    for (const [id, person] of [
      [seed.actor.id, true],
      [agent.id, false],
    ] as const) {
      const ctx = await ctxOf(id);
      const resolved = await registry.resolve(ctx, concreteUrl(page.pattern, seed)).catch(() => null);
      const usable = resolved ? await registry.available(ctx, resolved) : [];
      if (usable.some((a) => a.name === action)) return { seed, ctx, person };
    }
  }
  return null;
}

/** Auth bookkeeping (a token's last use, a login's session) is not input; everything else must stay as it was. */
async function content(): Promise<Record<string, string>> {
  const { api_tokens: _t, sessions: _s, ...rest } = await snapshot(w.tenant.id);
  return rest;
}

beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("sw");
  v = await seedVictim(w);
  for (const seed of [v.shared, v.only]) {
    browsers.set(seed.label, await login(app, w, seed.actor));
    await md(app, w, seed.actor, "GET", "/whoami");
  }
  before = await content();
});
afterAll(async () => {
  console.info(`input sweep: ${requests} requests`);
  await app?.close();
});

function refusal(res: { statusCode: number; body: string }, field: string, message: string): string | null {
  const issue = issuesOf(res.body)[field];
  if (res.statusCode === 400 && issue?.includes(message)) return null;
  return `${res.statusCode}, ${field}: ${issue ?? "(not named)"} — ${res.body.slice(0, 200).replace(/\s+/g, " ")}`;
}

async function sweep(page: PageDef, action: ActionDef, fail: (msg: string) => void) {
  // Nothing to send it (unpin, resume): and it may be unusable in the seeded state anyway.
  if (!fields(action.params).length) return;
  const user = await userFor(page, action.name);
  if (!user) return fail(`no seeded actor can use \`${action.name}\` on ${page.pattern}`);
  const { seed, ctx, person } = user;
  const url = concreteUrl(page.pattern, seed);
  const target = actionUrl(url, action.name);
  const valid = probeBody(action, page, seed, v);
  const browser = browsers.get(seed.label)!;
  const check = (what: string, res: { statusCode: number; body: string }, field: string, message: string) => {
    requests++;
    const wrong = refusal(res, field, message);
    if (wrong) fail(`${action.name} on ${url}, ${what}: ${wrong}`);
  };
  for (const f of fields(action.params)) {
    for (const bad of BAD_STRINGS) {
      const params = { ...valid.json, [f.name]: bad.value };
      const inProcess = await runAction(ctx, url, action.name, params);
      check(
        `${f.name} = ${bad.label} (in process)`,
        inProcess.ok
          ? { statusCode: 200, body: "" }
          : { statusCode: inProcess.status, body: inProcess.markdown },
        f.name,
        bad.message,
      );
      if (person) {
        const res = await postRaw(app, w, seed.actor, target, "application/json", JSON.stringify(params));
        check(`${f.name} = ${bad.label} (JSON)`, res, f.name, bad.message);
      }
    }
    if (!person) continue;
    const { [f.name]: _, ...rest } = valid.form;
    const others = { ...rest, _csrf: browser.csrf };
    for (const bad of BAD_FORM_VALUES) {
      const res = await postRaw(
        app,
        w,
        browser,
        target,
        "application/x-www-form-urlencoded",
        rawForm(others, f.name, bad.value),
      );
      check(`${f.name} = ${bad.label} (form)`, res, f.name, bad.message);
    }
    if (f.type === "list") continue;
    const one = valid.form[f.name]!;
    const list = await postRaw(
      app,
      w,
      seed.actor,
      target,
      "application/json",
      JSON.stringify({ ...valid.json, [f.name]: [valid.json[f.name], valid.json[f.name]] }),
    );
    check(`${f.name} as a JSON array`, list, f.name, LIST_FOR_SCALAR.json);
    const twice: LightMyRequestResponse = await postRaw(
      app,
      w,
      browser,
      target,
      "application/x-www-form-urlencoded",
      `${rawForm(others, f.name, encodeURIComponent(one))}&${f.name}=${encodeURIComponent(one)}`,
    );
    check(`${f.name} repeated in a form`, twice, f.name, LIST_FOR_SCALAR.form);
  }
}

describe("every action refuses input Postgres cannot store, naming the field", () => {
  const listed = pages.filter((p) => p.actions.length);
  for (const page of listed)
    it(`on ${page.pattern}`, async () => {
      const failures: string[] = [];
      for (const name of page.actions) await sweep(page, byName.get(name)!, (m) => failures.push(m));
      expect(failures).toEqual([]);
    });

  it("every action of the catalog was swept", () => {
    const onPages = new Set(pages.flatMap((p) => p.actions));
    expect(actions.map((a) => a.name).filter((n) => !onPages.has(n))).toEqual([]);
  });

  it("and nothing was written", async () => {
    expect(await content()).toEqual(before);
  });
});
