// Input that must never reach the database, beyond the catalog sweep (input-sweep.test.ts):
// params nested at depth (an action with list and object params), bodies whose bytes are
// not UTF-8, query strings and paths, and an agent whose model sends a lone surrogate.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ValidationError } from "../src/lib/errors.ts";
import { readPage } from "../src/services/catalog/markdown-api.ts";
import { createRegistry } from "../src/services/registry/registry.ts";
import { type Actor, type Ctx, defineAction, type PageDef } from "../src/services/registry/types.ts";
import { stepsOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { type Browser, buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { issuesOf, postRaw } from "./helpers/bad-input.ts";

const db = testPrisma();
let app: FastifyInstance;
let env: AgentEnv;
let w: World;
let alice: Browser;
let ctx: Ctx;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("input");
  w = await makeWorld("enc");
  alice = await login(app, w, w.alice);
  const tenant = await db.tenant.findUniqueOrThrow({ where: { id: w.tenant.id } });
  ctx = { db, tenant, actor: (await db.user.findUniqueOrThrow({ where: { id: w.alice.id } })) as Actor };
});
afterAll(async () => {
  await env.close();
  await app.close();
});

describe("params nested at depth", () => {
  // No action of the catalog takes a list or an object yet; a future one gets the same checks.
  const tag = defineAction({
    name: "tag",
    description: "Tags things",
    writes: false,
    params: z.object({
      title: z.string().optional(),
      tags: z.array(z.string()).optional(),
      meta: z.object({ notes: z.array(z.object({ text: z.string() })) }).optional(),
    }),
    async execute(_ctx, params) {
      return { status: 200, location: "/", notice: JSON.stringify(params) };
    },
  });
  const page: PageDef = {
    pattern: "/things",
    actions: ["tag"],
    resolve: async () => ({}),
    render: async () => ({ title: "Things", breadcrumb: [], blocks: [] }),
  };
  const reg = createRegistry([page], [tag]);
  const run = (body: Record<string, unknown>, form = false) => reg.run(ctx, "/things", "tag", body, { form });
  const refusal = async (body: Record<string, unknown>, form = false) => {
    const err = await run(body, form).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    return Object.fromEntries((err as ValidationError).issues.map((i) => [i.field, i.message]));
  };

  it("takes lists and objects where the schema has them", async () => {
    const body = { tags: ["a", "b"], meta: { notes: [{ text: "ok" }] } };
    expect(JSON.parse((await run(body)).notice)).toEqual(body);
    expect(JSON.parse((await run({ tags: ["a", "b"] }, true)).notice)).toEqual({ tags: ["a", "b"] });
    expect(JSON.parse((await run({ tags: "a" }, true)).notice)).toEqual({ tags: ["a"] });
  });

  it("names the path of a bad string inside a list or an object", async () => {
    expect(await refusal({ tags: ["ok", "x\ud800"] })).toEqual({
      "tags.1": expect.stringContaining("surrogate"),
    });
    expect(await refusal({ meta: { notes: [{ text: "ok" }, { text: "a\u0000b" }] } })).toEqual({
      "meta.notes.1.text": "must not contain NUL characters",
    });
    expect(await refusal({ meta: { "no\u0000pe": "x" } })).toEqual({
      meta: "a key must not contain NUL characters",
    });
    // Nested far deeper than any stack: still a 400, not a RangeError.
    let deep: unknown = "\u0000";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(Object.values(await refusal({ tags: deep }))).toEqual(["must not contain NUL characters"]);
  });

  it("refuses a list for a scalar, from JSON and from a repeated form field", async () => {
    expect(await refusal({ title: ["x", "y"] })).toEqual({ title: "must be a single value, not a list" });
    expect(await refusal({ title: ["x", "y"] }, true)).toEqual({
      title: "sent more than once: it takes one value",
    });
    expect(await refusal({ title: { a: "x" } })).toEqual({
      title: expect.stringContaining("expected string"),
    });
  });
});

describe("bodies whose bytes are not UTF-8", () => {
  const url = "/studios/general/actions/create_note";
  const form = (bytes: number[]) =>
    Buffer.concat([Buffer.from(`_csrf=${alice.csrf}&title=ok&text=`), Buffer.from(bytes)]);

  it("a form with raw bytes that are not UTF-8: a 400 naming the field, in both formats", async () => {
    for (const bytes of [[0xff], [0x61, 0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]]) {
      const html = await postRaw(app, w, alice, url, "application/x-www-form-urlencoded", form(bytes));
      expect(html.statusCode, String(bytes)).toBe(400);
      expect(html.headers["content-type"]).toContain("text/html");
      expect(issuesOf(html.body)).toEqual({ text: "is not valid UTF-8 text" });
      const markdown = await postRaw(
        app,
        w,
        w.alice,
        url,
        "application/x-www-form-urlencoded",
        Buffer.from(`text=${String.fromCharCode(...bytes)}`, "latin1"),
      );
      expect(markdown.statusCode).toBe(400);
      expect(issuesOf(markdown.body)).toEqual({ text: "is not valid UTF-8 text" });
    }
    const name = await postRaw(app, w, w.alice, url, "application/x-www-form-urlencoded", "te%FFxt=hello");
    expect(name.statusCode).toBe(400);
    expect(name.body).toContain("its name is not valid UTF-8 text");
    expect(await db.note.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });

  it("a JSON body that is not UTF-8: a 400; valid UTF-8 (accents, emoji) still goes through", async () => {
    const bad = await postRaw(
      app,
      w,
      w.alice,
      url,
      "application/json",
      Buffer.from('{"text":"caf\xe9"}', "latin1"),
    );
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("the body is not valid UTF-8 text");
    const good = await postRaw(
      app,
      w,
      w.alice,
      url,
      "application/json",
      JSON.stringify({ text: "café 😀 \u{1F600}" }),
    );
    expect(good.statusCode).toBe(201);
    const html = await postRaw(
      app,
      w,
      alice,
      url,
      "application/x-www-form-urlencoded",
      new URLSearchParams({ _csrf: alice.csrf, text: "naïve 😀", title: "a+b=c&d" }).toString(),
    );
    expect(html.statusCode).toBe(303);
    const notes = await db.note.findMany({ where: { tenantId: w.tenant.id }, orderBy: { createdAt: "asc" } });
    expect(notes.map((n) => [n.title, n.text])).toEqual([
      ["", "café 😀 😀"],
      ["a+b=c&d", "naïve 😀"],
    ]);
  });
});

describe("the login form, outside the registry", () => {
  it("an email with a NUL is a wrong login (401), not a 500", async () => {
    const first = await app.inject({ method: "GET", url: "/login", headers: { host: w.host } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(first.body)![1]!;
    const cookies = Object.fromEntries(first.cookies.map((c) => [c.name, c.value]));
    const res = await app.inject({
      method: "POST",
      url: "/login",
      headers: { host: w.host, "content-type": "application/x-www-form-urlencoded" },
      cookies,
      payload: `email=alice%00%40x.test&password=x&_csrf=${csrf}`,
    });
    expect(res.statusCode).toBe(401);
  });
});

describe("query strings and paths", () => {
  it("never answer 500, and a bad address is a 400 in the request's format", async () => {
    for (const q of ["%00", "a%00b", "%ED%A0%80", "%FF", "%F0%9F", "%C0%AF"]) {
      const res = await md(app, w, w.alice, "GET", `/search?q=${q}`);
      expect(res.statusCode, q).toBe(200);
      expect((await alice.get(`/search?q=${q}`)).statusCode, q).toBe(200);
    }
    expect((await md(app, w, w.alice, "GET", "/studios/general/notes?page=%00")).statusCode).toBe(200);
    for (const path of ["/studios/%FF", "/studios/%ED%A0%80", "/%C0%AF"]) {
      const res = await md(app, w, w.alice, "GET", path);
      expect(res.statusCode, path).toBe(400);
      expect(res.headers["content-type"]).toContain("text/markdown");
      expect(res.body).toContain("This address is not valid");
      const html = await alice.get(path);
      expect(html.statusCode).toBe(400);
      expect(html.headers["content-type"]).toContain("text/html");
    }
    for (const path of ["/studios/%00", "/studios/gen%00eral", "/studios/general/notes/%00.md"])
      expect((await md(app, w, w.alice, "GET", path)).statusCode, path).toBeLessThan(500);
  });

  it("the agent's view: a query with NUL or a lone surrogate reads the page", async () => {
    for (const url of ["/search?q=\u0000", "/search?q=x\ud800", "/studios/general?x=\udc00"])
      expect((await readPage(ctx, url)).status, url).toBe(200);
  });
});

describe("an agent whose model sends a lone surrogate", () => {
  it("hears the 400 naming the field, and its run goes on; what it sent is recorded, marked", async () => {
    const aw = await makeWorld("encagent");
    const scout = await makeAgent(aw, aw.alice, "scout");
    env.llm.setScript([
      tool("navigate", { path: "/studios/general" }),
      tool("execute_action", { action: "create_note", params: { title: "T", text: "bad \ud800 text" } }),
      tool("finish", { message: "gave up \ud800" }),
    ]);
    const res = await md(app, aw, aw.alice, "POST", "/subagents/scout/run/actions/run_task", {
      task: "Post",
    });
    expect(res.statusCode).toBe(201);
    const run = await waitForRun(scout.id);
    expect(run).toMatchObject({ status: "completed", finalMessage: "gave up \ufffd" });
    const execute = (await stepsOf(run.id)).find((s) => s.type === "execute");
    expect(execute?.detail).toMatchObject({ ok: false, status: 400, params: { text: "bad \ufffd text" } });
    const told = env.llm.requests
      .map((r) => userPrompt(r.body))
      .find((p) => p.includes("Invalid parameters"));
    expect(told).toContain("`text`: is not valid Unicode text");
    expect(await db.note.count({ where: { tenantId: aw.tenant.id } })).toBe(0);
  });
});
