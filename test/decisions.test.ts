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
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";

const db = testPrisma();
let app: FastifyInstance;
let w: World;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("dec");
});
afterAll(async () => app.close());

const events = (world: World, type: string) =>
  db.event.findMany({ where: { tenantId: world.tenant.id, type }, orderBy: { createdAt: "asc" } });
const counts = async (world: World) => ({
  decisions: await db.decision.count({ where: { tenantId: world.tenant.id } }),
  options: await db.decisionOption.count({ where: { tenantId: world.tenant.id } }),
  votes: await db.vote.count({ where: { tenantId: world.tenant.id } }),
  comments: await db.comment.count({ where: { tenantId: world.tenant.id } }),
  events: await db.event.count({ where: { tenantId: world.tenant.id } }),
});

async function decide(who: Person, question: string, options?: string[]) {
  const out = await act(w, who, "/studios/general/decisions", "create_decision", {
    question,
    ...(options && { options: options.join("\n") }),
  });
  const id = out.location.split("/").pop()!;
  const rows = await db.decisionOption.findMany({ where: { decisionId: id } });
  const byTitle = (t: string) => rows.find((o) => o.title === t)!;
  return { id, path: out.location, options: (options ?? []).map(byTitle) };
}

/** The results table as [title, accepted, preferred, your vote] rows, in ranked order. */
function results(markdown: string): string[][] {
  return [...markdown.matchAll(/^\| \d+ \| (.+?) \| `[a-z0-9]+` \| (\d+) \| (\d+) \| (.+?) \|$/gm)].map((m) =>
    m.slice(1, 5),
  );
}

describe("create_decision", () => {
  it("creates the decision with trimmed, de-duplicated options and a decision.created event", async () => {
    const res = await md(app, w, w.bob, "POST", "/studios/general/decisions/actions/create_decision", {
      question: "  Where do we meet?  ",
      description: "Context for @alice",
      options: " Park \n\nCafe\nPark\n",
    });
    expect(res.statusCode).toBe(201);
    const id = res.headers.location!.split("/").pop()!;
    expect(res.headers.location).toBe(`/studios/general/decisions/${id}`);
    expect(res.body).toContain("# Where do we meet?");
    expect(res.body).toContain("**Decision created**");
    expect(actionNames(res.body)).toEqual(["vote", "add_option", "add_comment", "subscribe", "unsubscribe"]);
    const d = await db.decision.findUniqueOrThrow({ where: { id }, include: { options: true } });
    expect(d).toMatchObject({ question: "Where do we meet?", authorId: w.bob.id, studioId: w.studio.id });
    expect(d.options.map((o) => o.title).sort()).toEqual(["Cafe", "Park"]);
    const [ev] = (await events(w, "decision.created")).filter((e) => e.subjectId === id);
    expect(ev).toMatchObject({ actorId: w.bob.id, studioId: w.studio.id, subjectType: "decision" });
    const list = await md(app, w, w.alice, "GET", "/studios/general/decisions");
    expect(list.body).toContain(`[Where do we meet?](/studios/general/decisions/${id})`);
  });

  it("works from a browser form: 303, flash, and the HTML page", async () => {
    const b = await login(app, w, w.alice);
    const res = await b.post("/studios/general/decisions/actions/create_decision", {
      question: "Form question",
      options: "One\nTwo",
      description: "",
    });
    expect(res.statusCode).toBe(303);
    const page = await b.get(res.headers.location as string);
    expect(page.headers["content-type"]).toContain("text/html");
    expect(page.body).toContain("Decision created");
    expect(page.body).toContain("Vote on “One”");
    expect(page.body).toContain('name="option_id"');
  });

  it("rejects bad input naming every bad field, writing nothing", async () => {
    const before = await counts(w);
    const res = await md(app, w, w.alice, "POST", "/studios/general/decisions/actions/create_decision", {
      question: "x".repeat(301),
      description: 5,
      colour: "red",
    });
    expect(res.statusCode).toBe(400);
    for (const f of ["`question`", "`description`", "`colour`"]) expect(res.body).toContain(f);
    const missing = await md(app, w, w.alice, "POST", "/studios/general/decisions/actions/create_decision", {
      question: "   ",
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("`question`: must not be empty");
    const longOption = await md(
      app,
      w,
      w.alice,
      "POST",
      "/studios/general/decisions/actions/create_decision",
      {
        question: "Q",
        options: `ok\n${"y".repeat(201)}`,
      },
    );
    expect(longOption.statusCode).toBe(400);
    expect(longOption.body).toContain("`options`");
    const tooMany = await md(app, w, w.alice, "POST", "/studios/general/decisions/actions/create_decision", {
      question: "Q",
      options: Array.from({ length: 51 }, (_, i) => `o${i}`).join("\n"),
    });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.body).toContain("`options`: at most 50 options");
    expect(await counts(w)).toEqual(before);
  });

  it("re-renders a failed browser form with the error and the input kept", async () => {
    const b = await login(app, w, w.bob);
    const before = await counts(w);
    const res = await b.post("/studios/general/decisions/actions/create_decision", {
      question: "",
      description: "Kept <context>",
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('class="field-error"');
    expect(issuesOf(res.body).question).toBe("must not be empty");
    expect(res.body).toContain("Kept &lt;context&gt;");
    expect(await counts(w)).toEqual(before);
  });
});

describe("visibility", () => {
  it("is 404 for non-members, unknown ids and other tenants' ids", async () => {
    const d = await decide(w.alice, "Members only?", ["Yes"]);
    const before = await counts(w);
    for (const url of ["/studios/general/decisions", d.path, `${d.path}/actions/vote`])
      expect((await md(app, w, w.carol, "GET", url)).statusCode).toBe(404);
    const post = await md(app, w, w.carol, "POST", `${d.path}/actions/add_option`, { title: "No" });
    expect(post.statusCode).toBe(404);
    expect((await md(app, w, w.alice, "GET", `/studios/general/decisions/${newId()}`)).statusCode).toBe(404);
    const other = await makeWorld("dec");
    const cross = await md(app, other, other.alice, "POST", `${d.path}/actions/vote`, {
      option_id: d.options[0]!.id,
      accept: true,
      prefer: true,
    });
    expect(cross.statusCode).toBe(404);
    expect((await md(app, other, other.alice, "GET", d.path)).statusCode).toBe(404);
    expect(await counts(w)).toEqual(before);
    expect(await db.event.count({ where: { tenantId: other.tenant.id } })).toBe(0);
  });

  it("describes actions and 404s unknown ones", async () => {
    const d = await decide(w.alice, "Describe?");
    const res = await md(app, w, w.bob, "GET", `${d.path}/actions/vote`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("# Action: vote");
    expect(res.body).toContain("| option_id | string | yes |");
    expect(res.body).toContain("| accept | boolean | yes |");
    const unknown = await md(app, w, w.bob, "POST", `${d.path}/actions/close_decision`, {});
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain("`vote`, `add_option`, `add_comment`");
  });

  it("paginates the decisions list", async () => {
    const world = await makeWorld("dec");
    const createdAt = new Date();
    await db.decision.createMany({
      data: Array.from({ length: 23 }, (_, i) => ({
        id: newId(),
        tenantId: world.tenant.id,
        studioId: world.studio.id,
        authorId: world.alice.id,
        question: `Question ${i}`,
        createdAt,
      })),
    });
    const ids = async (page: number) => {
      const res = await md(app, world, world.bob, "GET", `/studios/general/decisions?page=${page}`);
      return [...res.body.matchAll(/\/decisions\/([a-z0-9]{12})\)/g)].map((m) => m[1]!);
    };
    const [p1, p2] = [await ids(1), await ids(2)];
    expect(p1).toHaveLength(20);
    expect(p2).toHaveLength(3);
    expect(new Set([...p1, ...p2]).size).toBe(23);
  });
});

describe("add_option", () => {
  it("adds an option with an option.added event; a duplicate is a 409", async () => {
    const d = await decide(w.alice, "Lunch?", ["Soup"]);
    const res = await md(app, w, w.bob, "POST", `${d.path}/actions/add_option`, { title: " Salad " });
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe(d.path);
    expect(res.body).toContain("| Salad |");
    const opt = await db.decisionOption.findFirstOrThrow({ where: { decisionId: d.id, title: "Salad" } });
    expect(opt.authorId).toBe(w.bob.id);
    const ev = (await events(w, "option.added")).filter((e) => e.subjectId === d.id);
    expect(ev).toHaveLength(1);
    expect(ev[0]!.payload).toEqual({ title: "Salad" });

    const before = await counts(w);
    const dup = await md(app, w, w.alice, "POST", `${d.path}/actions/add_option`, { title: "Soup" });
    expect(dup.statusCode).toBe(409);
    expect(dup.body).toContain("already exists");
    expect(await counts(w)).toEqual(before);
  });

  it("rejects empty, long and unknown params, and a 51st option", async () => {
    const d = await decide(
      w.alice,
      "Many?",
      Array.from({ length: 50 }, (_, i) => `opt ${i}`),
    );
    const before = await counts(w);
    const bad = await md(app, w, w.bob, "POST", `${d.path}/actions/add_option`, { title: "", extra: 1 });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("`title`: must not be empty");
    expect(bad.body).toContain("`extra`: unknown parameter");
    const long = await md(app, w, w.bob, "POST", `${d.path}/actions/add_option`, { title: "z".repeat(201) });
    expect(long.statusCode).toBe(400);
    expect(long.body).toContain("`title`: at most 200 characters");
    const full = await md(app, w, w.bob, "POST", `${d.path}/actions/add_option`, { title: "one more" });
    expect(full.statusCode).toBe(409);
    expect(await counts(w)).toEqual(before);
  });
});

describe("vote", () => {
  it("records a vote with a vote.cast event, and a second vote replaces the first", async () => {
    const d = await decide(w.alice, "Colour?", ["Red", "Blue"]);
    const red = d.options[0]!;
    const res = await md(app, w, w.bob, "POST", `${d.path}/actions/vote`, {
      option_id: red.id,
      accept: true,
      prefer: false,
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("**Vote recorded for “Red”**");
    expect(results(res.body)[0]).toEqual(["Red", "1", "0", "accept"]);
    const again = await md(app, w, w.bob, "POST", `${d.path}/actions/vote`, {
      option_id: red.id,
      accept: true,
      prefer: true,
    });
    expect(results(again.body)[0]).toEqual(["Red", "1", "1", "accept, prefer"]);
    const votes = await db.vote.findMany({ where: { decisionId: d.id } });
    expect(votes).toHaveLength(1);
    expect(votes[0]).toMatchObject({ userId: w.bob.id, accepted: true, preferred: true });
    const ev = (await events(w, "vote.cast")).filter((e) => e.subjectId === d.id);
    expect(ev.map((e) => e.payload)).toEqual([
      { optionId: red.id, accept: true, prefer: false },
      { optionId: red.id, accept: true, prefer: true },
    ]);
    const aliceView = await md(app, w, w.alice, "GET", d.path);
    expect(results(aliceView.body).map((r) => r[3])).toEqual(["not voted", "not voted"]);
    expect(aliceView.body).toContain("1 person has voted. Leading: **Red**.");
  });

  it("ranks by acceptances, then preferences", async () => {
    const d = await decide(w.alice, "Ranking?", ["A", "B", "C"]);
    const [a, b, c] = [d.options[0]!, d.options[1]!, d.options[2]!];
    const v = (who: Person, option: { id: string }, accept: boolean, prefer: boolean) =>
      act(w, who, d.path, "vote", { option_id: option.id, accept, prefer });
    await v(w.alice, c, true, false);
    await v(w.bob, c, true, false);
    await v(w.alice, b, true, true);
    await v(w.bob, b, true, false);
    await v(w.alice, a, false, true);
    const res = await md(app, w, w.bob, "GET", d.path);
    expect(results(res.body).map((r) => r.slice(0, 3))).toEqual([
      ["B", "2", "1"],
      ["C", "2", "0"],
      ["A", "0", "1"],
    ]);
    expect(res.body).toContain("2 people have voted. Leading: **B**.");
  });

  it("rejects bad option ids and missing booleans, writing nothing", async () => {
    const d = await decide(w.alice, "Bad votes?", ["X"]);
    const other = await decide(w.alice, "Other?", ["Y"]);
    const before = await counts(w);
    const missing = await md(app, w, w.bob, "POST", `${d.path}/actions/vote`, { option_id: "!!" });
    expect(missing.statusCode).toBe(400);
    for (const f of ["`option_id`: not a valid id", "`accept`: required", "`prefer`: required"])
      expect(missing.body).toContain(f);
    const foreign = await md(app, w, w.bob, "POST", `${d.path}/actions/vote`, {
      option_id: other.options[0]!.id,
      accept: true,
      prefer: true,
    });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.body).toContain("`option_id`: no such option on this decision");
    const wrongType = await md(app, w, w.bob, "POST", `${d.path}/actions/vote`, {
      option_id: d.options[0]!.id,
      accept: "maybe",
      prefer: 1,
    });
    expect(wrongType.statusCode).toBe(400);
    expect(wrongType.body).toContain("`accept`");
    expect(wrongType.body).toContain("`prefer`");
    expect(await counts(w)).toEqual(before);
  });

  it("votes from the inline browser form; unchecked boxes mean false", async () => {
    const d = await decide(w.alice, "Form vote?", ["Tea", "Coffee"]);
    const b = await login(app, w, w.bob);
    const page = await b.get(d.path);
    expect(page.body).toContain(`name="option_id" value="${d.options[1]!.id}"`);
    const res = await b.post(`${d.path}/actions/vote`, { option_id: d.options[1]!.id, accept: "true" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(d.path);
    const vote = await db.vote.findFirstOrThrow({ where: { decisionId: d.id, userId: w.bob.id } });
    expect(vote).toMatchObject({ optionId: d.options[1]!.id, accepted: true, preferred: false });
    expect((await b.get(d.path)).body).toContain("Vote recorded for “Coffee”");
  });
});

describe("add_comment on a decision", () => {
  it("comments and replies with comment.created events; a foreign reply_to is a 400", async () => {
    const d = await decide(w.alice, "Comment?", ["Ok"]);
    const res = await md(app, w, w.bob, "POST", `${d.path}/actions/add_comment`, { text: "I think so" });
    expect(res.statusCode).toBe(201);
    expect(res.body).toContain("## Comments (1)");
    const c = await db.comment.findFirstOrThrow({ where: { subjectId: d.id } });
    expect(c).toMatchObject({ subjectType: "decision", authorId: w.bob.id, parentId: null });
    const reply = await md(app, w, w.alice, "POST", `${d.path}/actions/add_comment`, {
      text: "Agreed",
      reply_to: c.id,
    });
    expect(reply.statusCode).toBe(201);
    expect(reply.body).toContain("**Reply posted**");
    const r = await db.comment.findFirstOrThrow({ where: { parentId: c.id } });
    const ev = (await events(w, "comment.created")).find((e) => e.subjectId === r.id);
    expect(ev?.parentChain).toEqual([
      { type: "comment", id: c.id },
      { type: "decision", id: d.id },
    ]);

    const other = await decide(w.alice, "Elsewhere?");
    const before = await counts(w);
    const foreign = await md(app, w, w.bob, "POST", `${other.path}/actions/add_comment`, {
      text: "hi",
      reply_to: c.id,
    });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.body).toContain("`reply_to`: no such comment on this page");
    const empty = await md(app, w, w.bob, "POST", `${d.path}/actions/add_comment`, { text: " " });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain("`text`: must not be empty");
    expect(await counts(w)).toEqual(before);
  });
});
