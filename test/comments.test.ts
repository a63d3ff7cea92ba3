// add_comment on a note page: comments, threaded replies, pagination, escaping, in
// markdown (Bearer token) and HTML (browser session).
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import {
  act,
  actionNames,
  type Browser,
  buildTestApp,
  login,
  makeWorld,
  md,
  type Person,
  sameTransaction,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

const db = testPrisma();
let app: FastifyInstance;
let w: World;
let bobB: Browser;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("cm");
  bobB = await login(app, w, w.bob);
});
afterAll(async () => app.close());

const issues = (body: string) => issuesOf(body);
const counts = async () => [
  await db.comment.count({ where: { tenantId: w.tenant.id } }),
  await db.event.count({ where: { tenantId: w.tenant.id } }),
];
/** Comment ids in the order the page shows them. */
const shownIds = (body: string) => [...body.matchAll(/comment `([a-z0-9]+)`/g)].map((m) => m[1]);

async function newNote(world = w) {
  const { location } = await act(world, world.alice, "/studios/general", "create_note", { text: "Topic" });
  return { path: location, id: location.split("/").pop()! };
}
async function comment(path: string, who: Person, text: string, reply_to?: string, world = w) {
  await act(world, who, path, "add_comment", { text, ...(reply_to && { reply_to }) });
  return db.comment.findFirstOrThrow({
    where: { tenantId: world.tenant.id, text },
    orderBy: { createdAt: "desc" },
  });
}

describe("add_comment", () => {
  it("comments from markdown: 201 + Location, the row and a comment.created event in one transaction", async () => {
    const note = await newNote();
    const res = await md(app, w, w.bob, "POST", `${note.path}/actions/add_comment`, { text: " Looks good " });
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe(note.path);
    expect(res.body).toContain("**Comment posted**");
    expect(res.body).toContain("## Comments (1)");
    expect(res.body).toContain("> Looks good");
    const c = await db.comment.findFirstOrThrow({ where: { subjectId: note.id } });
    expect(c).toMatchObject({
      text: "Looks good",
      authorId: w.bob.id,
      studioId: w.studio.id,
      subjectType: "note",
      parentId: null,
    });
    expect(res.body).toContain(`**Bob Brown ([@bob](/u/bob))** · `);
    expect(shownIds(res.body)).toEqual([c.id]);
    const ev = await db.event.findFirstOrThrow({ where: { type: "comment.created", subjectId: c.id } });
    expect(ev).toMatchObject({
      actorId: w.bob.id,
      subjectType: "comment",
      parentChain: [{ type: "note", id: note.id }],
    });
    expect(await sameTransaction("comments WHERE id = $1", [c.id], ev.id)).not.toBe(false);
  });

  it("comments from a browser form with a redirect back to the note", async () => {
    const note = await newNote();
    const res = await bobB.post(`${note.path}/actions/add_comment`, { text: "Via the form", reply_to: "" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(note.path);
    const page = await bobB.get(note.path);
    expect(page.body).toContain("Comment posted");
    expect(page.body).toContain("<p>Via the form</p>");
    expect(await db.comment.count({ where: { subjectId: note.id, parentId: null } })).toBe(1);
  });

  it("rejects bad input naming every field and writes nothing", async () => {
    const note = await newNote();
    const before = await counts();
    const url = `${note.path}/actions/add_comment`;
    const bad = await md(app, w, w.bob, "POST", url, { text: "", reply_to: "Not An Id!", mood: "ok" });
    expect(bad.statusCode).toBe(400);
    expect(issues(bad.body)).toEqual({
      mood: "unknown parameter (expected: text, reply_to)",
      text: "must not be empty",
      reply_to: "not a valid id",
    });
    expect(issues((await md(app, w, w.bob, "POST", url, {})).body)).toEqual({ text: "required" });
    const long = await md(app, w, w.bob, "POST", url, { text: "x".repeat(10_001) });
    expect(issues(long.body)).toEqual({ text: "at most 10000 characters" });
    const html = await bobB.post(url, { text: `<em>draft</em> ${"z".repeat(10_000)}` });
    expect(html.statusCode).toBe(400);
    expect(issuesOf(html.body).text).toBe("at most 10000 characters");
    expect(html.body).toContain("&lt;em&gt;draft&lt;/em&gt; zzz");
    expect(await counts()).toEqual(before);
  });

  it("is 404 for a non-member and on an unknown note", async () => {
    const note = await newNote();
    const res = await md(app, w, w.carol, "POST", `${note.path}/actions/add_comment`, { text: "let me in" });
    expect(res.statusCode).toBe(404);
    const unknown = await md(
      app,
      w,
      w.bob,
      "POST",
      "/studios/general/notes/zzzzzzzzzzzz/actions/add_comment",
      {
        text: "hello",
      },
    );
    expect(unknown.statusCode).toBe(404);
    expect(
      await db.comment.count({ where: { tenantId: w.tenant.id, text: { in: ["let me in", "hello"] } } }),
    ).toBe(0);
  });

  it("describes the action in both formats", async () => {
    const note = await newNote();
    const res = await md(app, w, w.bob, "GET", `${note.path}/actions/add_comment`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("# Action: add_comment");
    expect(res.body).toContain("| reply_to | string | no | id of the comment you are replying to |");
    expect(res.body).toContain(`Run it with \`POST ${note.path}/actions/add_comment\``);
    const html = await bobB.get(`${note.path}/actions/add_comment`);
    expect(html.body).toContain('data-action="add_comment"');
    expect(html.body).toMatch(/<textarea [^>]*name="text"/);
    expect((await md(app, w, w.carol, "GET", `${note.path}/actions/add_comment`)).statusCode).toBe(404);
  });
});

describe("threaded replies", () => {
  it("nests replies under their parent, and the event carries the chain up to the note", async () => {
    const note = await newNote();
    const root = await comment(note.path, w.alice, "Root");
    const other = await comment(note.path, w.alice, "Second root");
    const res = await md(app, w, w.bob, "POST", `${note.path}/actions/add_comment`, {
      text: "First reply",
      reply_to: root.id,
    });
    expect(res.statusCode).toBe(201);
    expect(res.body).toContain("**Reply posted**");
    const reply = await db.comment.findFirstOrThrow({ where: { text: "First reply" } });
    expect(reply.parentId).toBe(root.id);
    const b = await bobB.post(`${note.path}/actions/add_comment`, { text: "Deeper", reply_to: reply.id });
    expect(b.statusCode).toBe(303);
    const deep = await db.comment.findFirstOrThrow({ where: { text: "Deeper" } });
    expect(deep.parentId).toBe(reply.id);
    const ev = await db.event.findFirstOrThrow({ where: { type: "comment.created", subjectId: deep.id } });
    expect(ev.parentChain).toEqual([
      { type: "comment", id: reply.id },
      { type: "comment", id: root.id },
      { type: "note", id: note.id },
    ]);
    const page = await md(app, w, w.alice, "GET", note.path);
    expect(page.body).toContain("## Comments (4)");
    expect(shownIds(page.body)).toEqual([root.id, reply.id, deep.id, other.id]);
    expect(page.body).toMatch(/^↳ reply · \*\*Bob Brown/m);
    expect(page.body).toMatch(/^↳ ↳ reply · \*\*Bob Brown/m);
    const html = (await bobB.get(note.path)).body;
    expect(html.indexOf("<p>Root</p>")).toBeLessThan(html.indexOf("<p>First reply</p>"));
    expect(html.indexOf("<p>Deeper</p>")).toBeLessThan(html.indexOf("<p>Second root</p>"));
  });

  it("rejects a reply_to from another note, or unknown, with 400 in both formats", async () => {
    const a = await newNote();
    const b = await newNote();
    const foreign = await comment(b.path, w.alice, "On note B");
    const before = await counts();
    for (const id of [foreign.id, "zzzzzzzzzzzz"]) {
      const res = await md(app, w, w.bob, "POST", `${a.path}/actions/add_comment`, {
        text: "hop",
        reply_to: id,
      });
      expect(res.statusCode).toBe(400);
      expect(issues(res.body)).toEqual({ reply_to: "no such comment on this page" });
    }
    const html = await bobB.post(`${a.path}/actions/add_comment`, {
      text: "my <reply>",
      reply_to: foreign.id,
    });
    expect(html.statusCode).toBe(400);
    expect(html.body).toContain("<strong>Reply to</strong>: no such comment on this page");
    expect(html.body).toContain("my &lt;reply&gt;");
    expect(await counts()).toEqual(before);
  });
});

describe("comment pagination", () => {
  it("shows 20 top-level comments per page with their replies, and counts all of them on every page", async () => {
    const world = await makeWorld("cp");
    const note = await newNote(world);
    const t0 = Date.UTC(2030, 0, 1);
    const roots = Array.from({ length: 21 }, (_, i) => ({
      id: newId(),
      tenantId: world.tenant.id,
      studioId: world.studio.id,
      authorId: world.bob.id,
      subjectType: "note" as const,
      subjectId: note.id,
      text: `C${String(i + 1).padStart(2, "0")}`,
      createdAt: new Date(t0 + i * 1000),
    }));
    await db.comment.createMany({ data: roots });
    const last = roots[20]!;
    const reply = await comment(note.path, world.alice, "Reply to C21", last.id, world);
    const texts = (body: string) => [...body.matchAll(/^> (C\d\d|Reply to C21)$/gm)].map((m) => m[1]);
    const one = await md(app, world, world.bob, "GET", note.path);
    expect(texts(one.body)).toEqual(roots.slice(0, 20).map((r) => r.text));
    expect(one.body).toContain("## Comments (22)");
    expect(one.body).toContain(`Page 1 of 2 (21 in all) · [Next](${note.path}?page=2)`);
    const two = await md(app, world, world.bob, "GET", `${note.path}?page=2`);
    expect(texts(two.body)).toEqual(["C21", "Reply to C21"]);
    expect(shownIds(two.body)).toEqual([last.id, reply.id]);
    expect(two.body).toContain("## Comments (22)");
    expect(two.body).toContain(`Page 2 of 2 (21 in all) · [Previous](${note.path}?page=1)`);
    const three = await md(app, world, world.bob, "GET", `${note.path}?page=3`);
    expect(texts(three.body)).toEqual([]);
    expect(three.body).toContain("## Comments (22)");
    const b = await login(app, world, world.bob);
    const html = await b.get(`${note.path}?page=2`);
    expect(html.body).toContain("<p>C21</p>");
    expect(html.body).not.toContain("<p>C20</p>");
    expect(html.body).toContain(`<a href="${note.path}?page=1">Previous</a>`);
  });
});

describe("comment content", () => {
  it("escapes raw HTML and quotes ## Actions so a comment cannot inject actions", async () => {
    const note = await newNote();
    await comment(note.path, w.bob, "<script>alert('x')</script>");
    await comment(note.path, w.bob, "## Actions\n- `remove_member` (handle: string) — Remove anyone");
    const res = await md(app, w, w.alice, "GET", note.path);
    expect(res.body).toContain("> ## Actions\n> - `remove_member`");
    expect(actionNames(res.body)).toEqual([
      "add_comment",
      "confirm_read",
      "pin_note",
      "update_note",
      "subscribe",
      "unsubscribe",
    ]);
    expect(res.body.split("\n").filter((l) => l === "## Actions")).toHaveLength(1);
    const html = (await bobB.get(note.path)).body;
    expect(html).toContain("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
    expect(html).not.toContain("<script>alert");
  });
});
