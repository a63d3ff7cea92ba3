import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import {
  act,
  actionNames,
  buildTestApp,
  login,
  makeWorld,
  md,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

const db = testPrisma();
let app: FastifyInstance;
let w: World;
let other: World;
const ids = { note: "", decision: "", commitment: "", comment: "", secret: "", foreign: "" };

const last = (location: string) => location.split("/").pop()!;

beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("srch");
  other = await makeWorld("srch");
  ids.note = last(
    (
      await act(w, w.alice, "/studios/general/notes", "create_note", {
        title: "Quokka",
        text: "Their habitat",
      })
    ).location,
  );
  ids.decision = last(
    (await act(w, w.bob, "/studios/general/decisions", "create_decision", { question: "Adopt a quokka?" }))
      .location,
  );
  ids.commitment = last(
    (
      await act(w, w.alice, "/studios/general/commitments", "create_commitment", {
        title: "Walks",
        critical_mass: 2,
        description: "Feed the QUOKKA daily",
      })
    ).location,
  );
  await act(w, w.bob, `/studios/general/notes/${ids.note}`, "add_comment", { text: "the quokka smiles" });
  ids.comment = (await db.comment.findFirstOrThrow({ where: { subjectId: ids.note } })).id;
  // A studio of the same tenant that alice and bob are not in.
  const secret = await db.studio.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      handle: "secret",
      name: "Secret",
      inviteCode: newId(10),
      createdById: w.carol.id,
      members: { create: { userId: w.carol.id, tenantId: w.tenant.id, role: "admin" } },
    },
  });
  ids.secret = last(
    (
      await act(w, w.carol, `/studios/${secret.handle}/notes`, "create_note", {
        text: "hidden quokka burrow",
      })
    ).location,
  );
  ids.foreign = last(
    (await act(other, other.alice, "/studios/general/notes", "create_note", { text: "foreign quokka" }))
      .location,
  );
});
afterAll(async () => app.close());

/** [kind, path] of every hit on a markdown results page. */
function hits(markdown: string): string[][] {
  return [...markdown.matchAll(/^- \*\*(\w+)\*\* \[[^\]]*\]\(([^)]+)\)/gm)].map((m) => [m[1]!, m[2]!]);
}

describe("visibility", () => {
  it("finds notes, decisions, commitments and comments in the actor's studios only", async () => {
    const res = await md(app, w, w.alice, "GET", "/search?q=quokka");
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("# Search: quokka");
    expect(res.body).toContain("4 results for “quokka”.");
    expect(hits(res.body).sort()).toEqual(
      [
        ["note", `/studios/general/notes/${ids.note}`],
        ["decision", `/studios/general/decisions/${ids.decision}`],
        ["commitment", `/studios/general/commitments/${ids.commitment}`],
        ["comment", `/studios/general/notes/${ids.note}`],
      ].sort(),
    );
    for (const leak of ["burrow", "foreign", ids.secret, ids.foreign, "secret"])
      expect(res.body).not.toContain(leak);
    expect(actionNames(res.body)).toEqual(["search"]);
  });

  it("shows a non-member only their own studio's content", async () => {
    const res = await md(app, w, w.carol, "GET", "/search?q=quokka");
    expect(hits(res.body)).toEqual([["note", `/studios/secret/notes/${ids.secret}`]]);
    expect(res.body).toContain("hidden quokka burrow");
  });

  it("never shows another tenant's content", async () => {
    const res = await md(app, other, other.alice, "GET", "/search?q=quokka");
    expect(hits(res.body)).toEqual([["note", `/studios/general/notes/${ids.foreign}`]]);
    const none = await md(app, other, other.alice, "GET", "/search?q=habitat");
    expect(none.body).toContain("Nothing matches “habitat”.");
    expect(hits(none.body)).toEqual([]);
  });

  it("needs a signed-in actor", async () => {
    const res = await app.inject({
      method: "GET",
      url: "/search?q=quokka",
      headers: { host: w.host, accept: "text/markdown" },
    });
    expect(res.statusCode).toBe(401);
    expect(res.body).not.toContain("quokka");
  });
});

describe("queries", () => {
  it("matches substrings and treats % and _ literally", async () => {
    const world = await makeWorld("srch");
    await act(world, world.alice, "/studios/general/notes", "create_note", { text: "prices are 50% off" });
    await act(world, world.alice, "/studios/general/notes", "create_note", { text: "snake_case names" });
    await act(world, world.alice, "/studios/general/notes", "create_note", { text: "plain words" });
    const count = async (q: string) =>
      hits((await md(app, world, world.bob, "GET", `/search?q=${encodeURIComponent(q)}`)).body).length;
    expect(await count("50%")).toBe(1);
    expect(await count("%")).toBe(1);
    expect(await count("e_c")).toBe(1);
    expect(await count("_")).toBe(1);
    expect(await count("wor")).toBe(1);
    expect(await count("prices")).toBe(1);
  });

  it("answers odd queries without an error", async () => {
    for (const q of ["%00", "a%00b", "%27%22%5C", "%21%26%7C", "OR%20-", "%E2%80%9C"]) {
      const res = await md(app, w, w.alice, "GET", `/search?q=${q}`);
      expect(res.statusCode, q).toBe(200);
    }
    const nul = await md(app, w, w.alice, "GET", "/search?q=%00");
    expect(hits(nul.body)).toEqual([]);
    const empty = await md(app, w, w.alice, "GET", "/search?q=%20");
    expect(empty.body).toContain("Search notes, decisions, commitments and comments in your studios.");
  });
});

describe("the search action", () => {
  it("runs from markdown, JSON and a browser form", async () => {
    const res = await md(app, w, w.bob, "POST", "/search/actions/search", { query: "quokka" });
    expect(res.statusCode).toBe(200);
    expect(hits(res.body)).toHaveLength(4);
    const b = await login(app, w, w.bob);
    const form = await b.post("/search/actions/search", { query: "adopt quokka" });
    expect(form.statusCode).toBe(303);
    expect(form.headers.location).toBe("/search?q=adopt+quokka");
    const page = await b.get(form.headers.location as string);
    expect(page.headers["content-type"]).toContain("text/html");
    expect(page.body).toContain(`href="/studios/general/decisions/${ids.decision}"`);
    const html = await b.get("/search?q=habitat");
    expect(html.body).toContain(`href="/studios/general/notes/${ids.note}"`);
  });

  it("rejects an empty or unknown param with 400, in both formats", async () => {
    const res = await md(app, w, w.bob, "POST", "/search/actions/search", { query: " ", q: "x" });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("`query`: must not be empty");
    expect(res.body).toContain("`q`: unknown parameter");
    const long = await md(app, w, w.bob, "POST", "/search/actions/search", { query: "x".repeat(201) });
    expect(long.body).toContain("`query`: at most 200 characters");
    const b = await login(app, w, w.bob);
    const form = await b.post("/search/actions/search", { query: "" });
    expect(form.statusCode).toBe(400);
    expect(issuesOf(form.body).query).toBe("must not be empty");
  });
});

describe("pagination", () => {
  it("pages through every hit exactly once, even when ranks and times tie", async () => {
    const world = await makeWorld("srch");
    const createdAt = new Date();
    await db.note.createMany({
      data: Array.from({ length: 100 }, () => ({
        id: newId(),
        tenantId: world.tenant.id,
        studioId: world.studio.id,
        authorId: world.alice.id,
        text: "zebra crossing",
        createdAt,
      })),
    });
    const seen: string[] = [];
    for (let page = 1; page <= 5; page++) {
      const res = await md(app, world, world.bob, "GET", `/search?q=zebra&page=${page}`);
      expect(res.body).toContain("100 results for “zebra”.");
      expect(res.body).toContain(`Page ${page} of 5 (100 in all)`);
      if (page < 5) expect(res.body).toContain(`[Next](/search?q=zebra&page=${page + 1})`);
      const found = hits(res.body).map((h) => h[1]!);
      expect(found).toHaveLength(20);
      seen.push(...found);
    }
    expect(new Set(seen).size).toBe(100);
    const beyond = await md(app, world, world.bob, "GET", "/search?q=zebra&page=6");
    expect(hits(beyond.body)).toEqual([]);
  });
});
