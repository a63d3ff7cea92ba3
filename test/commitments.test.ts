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

const db = testPrisma();
let app: FastifyInstance;
let w: World;
beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("com");
});
afterAll(async () => app.close());

const typesFor = async (world: World, subjectId: string) =>
  (
    await db.event.findMany({
      where: { tenantId: world.tenant.id, subjectId },
      orderBy: { createdAt: "asc" },
    })
  ).map((e) => e.type);
const counts = async (world: World) => ({
  commitments: await db.commitment.count({ where: { tenantId: world.tenant.id } }),
  participants: await db.commitmentParticipant.count({ where: { tenantId: world.tenant.id } }),
  comments: await db.comment.count({ where: { tenantId: world.tenant.id } }),
  events: await db.event.count({ where: { tenantId: world.tenant.id } }),
});

async function propose(world: World, who: Person, criticalMass: number, title = "Clean the kitchen") {
  const out = await act(world, who, "/studios/general/commitments", "create_commitment", {
    title,
    critical_mass: criticalMass,
  });
  return { id: out.location.split("/").pop()!, path: out.location };
}

/** A fourth studio member, so critical masses above 2 can be reached. */
async function addMember(world: World, handle: string): Promise<Person> {
  const u = await db.user.create({
    data: { id: newId(), tenantId: world.tenant.id, handle, name: handle, kind: "person" },
  });
  await db.studioMember.create({
    data: { studioId: world.studio.id, userId: u.id, tenantId: world.tenant.id },
  });
  return { id: u.id, handle, name: handle, email: "", token: "" };
}

describe("create_commitment", () => {
  it("creates a pending commitment with a commitment.created event", async () => {
    const res = await md(app, w, w.bob, "POST", "/studios/general/commitments/actions/create_commitment", {
      title: "Run the retro",
      critical_mass: 3,
      description: "Everyone brings one topic",
    });
    expect(res.statusCode).toBe(201);
    const id = res.headers.location!.split("/").pop()!;
    expect(res.headers.location).toBe(`/studios/general/commitments/${id}`);
    expect(res.body).toContain("**Pending**: 0 of 3 needed have joined; 3 more and it becomes active.");
    expect(res.body).toContain("> Everyone brings one topic");
    expect(actionNames(res.body)).toEqual(["join_commitment", "add_comment", "subscribe", "unsubscribe"]);
    const c = await db.commitment.findUniqueOrThrow({ where: { id } });
    expect(c).toMatchObject({
      title: "Run the retro",
      criticalMass: 3,
      authorId: w.bob.id,
      activatedAt: null,
    });
    expect(await typesFor(w, id)).toEqual(["commitment.created"]);
    const list = await md(app, w, w.alice, "GET", "/studios/general/commitments");
    expect(list.body).toContain(`[Run the retro](/studios/general/commitments/${id}) — 0/3 joined`);
  });

  it("accepts a browser form, coercing critical_mass from a string", async () => {
    const b = await login(app, w, w.alice);
    const res = await b.post("/studios/general/commitments/actions/create_commitment", {
      title: "Form commitment",
      critical_mass: "2",
      description: "",
    });
    expect(res.statusCode).toBe(303);
    const id = (res.headers.location as string).split("/").pop()!;
    expect((await db.commitment.findUniqueOrThrow({ where: { id } })).criticalMass).toBe(2);
    const page = await b.get(res.headers.location as string);
    expect(page.body).toContain("Commitment proposed");
    expect(page.body).toContain('data-action="join_commitment"');
  });

  it("rejects bad input naming every field, writing nothing", async () => {
    const before = await counts(w);
    const url = "/studios/general/commitments/actions/create_commitment";
    const res = await md(app, w, w.alice, "POST", url, { title: "", critical_mass: 0, owner: "me" });
    expect(res.statusCode).toBe(400);
    for (const f of [
      "`title`: must not be empty",
      "`critical_mass`: at least 1",
      "`owner`: unknown parameter",
    ])
      expect(res.body).toContain(f);
    const frac = await md(app, w, w.alice, "POST", url, { title: "t", critical_mass: 1.5 });
    expect(frac.body).toContain("`critical_mass`: a whole number");
    const big = await md(app, w, w.alice, "POST", url, { title: "t", critical_mass: 10_001 });
    expect(big.body).toContain("`critical_mass`: at most 10000");
    const missing = await md(app, w, w.alice, "POST", url, { title: "t" });
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("`critical_mass`: required");
    const b = await login(app, w, w.bob);
    const form = await b.post(url, { title: "Kept title", critical_mass: "lots" });
    expect(form.statusCode).toBe(400);
    expect(form.body).toMatch(/id="f-create_commitment--critical_mass-error"/);
    expect(form.body).toContain('value="Kept title"');
    expect(await counts(w)).toEqual(before);
  });
});

describe("join_commitment", () => {
  it("activates exactly when critical mass is reached, once", async () => {
    const world = await makeWorld("com");
    const dave = await addMember(world, "dave");
    const c = await propose(world, world.alice, 2);
    const first = await md(app, world, world.alice, "POST", `${c.path}/actions/join_commitment`, {});
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain("**You joined**");
    expect(first.body).toContain("**Pending**: 1 of 2 needed");
    expect((await db.commitment.findUniqueOrThrow({ where: { id: c.id } })).activatedAt).toBeNull();
    expect(await typesFor(world, c.id)).toEqual(["commitment.created", "commitment.joined"]);

    const second = await md(app, world, world.bob, "POST", `${c.path}/actions/join_commitment`, {});
    expect(second.statusCode).toBe(200);
    expect(second.body).toContain("critical mass reached, the commitment is active");
    expect(second.body).toContain("**Active** since");
    expect((await db.commitment.findUniqueOrThrow({ where: { id: c.id } })).activatedAt).toBeInstanceOf(Date);

    const third = await act(world, dave, c.path, "join_commitment", {});
    expect(third.notice).toBe("You joined");
    expect(await typesFor(world, c.id)).toEqual([
      "commitment.created",
      "commitment.joined",
      "commitment.joined",
      "commitment.activated",
      "commitment.joined",
    ]);
    const list = await md(app, world, world.bob, "GET", "/studios/general/commitments");
    expect(list.body).toContain("3/2 joined · **active**");
  });

  it("activates at once when the critical mass is 1", async () => {
    const c = await propose(w, w.alice, 1, "Solo");
    const out = await act(w, w.bob, c.path, "join_commitment", {});
    expect(out.notice).toContain("critical mass reached");
    expect(await typesFor(w, c.id)).toEqual([
      "commitment.created",
      "commitment.joined",
      "commitment.activated",
    ]);
  });

  it("joining twice is a 409 and writes nothing", async () => {
    const c = await propose(w, w.alice, 5, "Twice");
    await act(w, w.bob, c.path, "join_commitment", {});
    const before = await counts(w);
    const res = await md(app, w, w.bob, "POST", `${c.path}/actions/join_commitment`, {});
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain("already joined");
    expect(await counts(w)).toEqual(before);
  });

  it("two concurrent joins reaching critical mass activate it exactly once", async () => {
    for (let i = 0; i < 5; i++) {
      const c = await propose(w, w.alice, 2, `Race ${i}`);
      const [a, b] = await Promise.all([
        md(app, w, w.alice, "POST", `${c.path}/actions/join_commitment`, {}),
        md(app, w, w.bob, "POST", `${c.path}/actions/join_commitment`, {}),
      ]);
      expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
      const activatedNotices = [a.body, b.body].filter((x) => x.includes("critical mass reached"));
      expect(activatedNotices).toHaveLength(1);
      const types = await typesFor(w, c.id);
      expect(types.filter((t) => t === "commitment.activated")).toHaveLength(1);
      expect(types.filter((t) => t === "commitment.joined")).toHaveLength(2);
      expect(await db.commitmentParticipant.count({ where: { commitmentId: c.id } })).toBe(2);
    }
  });

  it("the same person joining concurrently gets one 200 and one 409", async () => {
    const c = await propose(w, w.alice, 3, "Double click");
    const res = await Promise.all([
      md(app, w, w.bob, "POST", `${c.path}/actions/join_commitment`, {}),
      md(app, w, w.bob, "POST", `${c.path}/actions/join_commitment`, {}),
    ]);
    expect(res.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(await db.commitmentParticipant.count({ where: { commitmentId: c.id } })).toBe(1);
  });

  it("rejects params it does not take, and joins from a browser form", async () => {
    const c = await propose(w, w.alice, 4, "Params");
    const bad = await md(app, w, w.bob, "POST", `${c.path}/actions/join_commitment`, { user: "carol" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("`user`: unknown parameter (expected: none)");
    expect(await db.commitmentParticipant.count({ where: { commitmentId: c.id } })).toBe(0);
    const b = await login(app, w, w.bob);
    const res = await b.post(`${c.path}/actions/join_commitment`, {});
    expect(res.statusCode).toBe(303);
    const page = await b.get(c.path);
    expect(page.body).toContain("You joined");
    expect(page.body).toContain("Participants (1)");
  });
});

describe("visibility and comments", () => {
  it("is 404 for non-members, unknown ids and other tenants", async () => {
    const c = await propose(w, w.alice, 2, "Private");
    const before = await counts(w);
    for (const url of ["/studios/general/commitments", c.path])
      expect((await md(app, w, w.carol, "GET", url)).statusCode).toBe(404);
    expect((await md(app, w, w.carol, "POST", `${c.path}/actions/join_commitment`, {})).statusCode).toBe(404);
    expect((await md(app, w, w.bob, "GET", `/studios/general/commitments/${newId()}`)).statusCode).toBe(404);
    const other = await makeWorld("com");
    expect(
      (await md(app, other, other.alice, "POST", `${c.path}/actions/join_commitment`, {})).statusCode,
    ).toBe(404);
    expect(await counts(w)).toEqual(before);
  });

  it("comments on a commitment with a comment.created event", async () => {
    const c = await propose(w, w.alice, 2, "Discuss");
    const res = await md(app, w, w.bob, "POST", `${c.path}/actions/add_comment`, {
      text: "Count me in soon",
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe(c.path);
    expect(res.body).toContain("> Count me in soon");
    const comment = await db.comment.findFirstOrThrow({ where: { subjectId: c.id } });
    expect(comment.subjectType).toBe("commitment");
    const ev = await db.event.findFirstOrThrow({ where: { subjectId: comment.id } });
    expect(ev).toMatchObject({ type: "comment.created", actorId: w.bob.id });
    expect(ev.parentChain).toEqual([{ type: "commitment", id: c.id }]);
    const bad = await md(app, w, w.bob, "POST", `${c.path}/actions/add_comment`, { reply_to: "nope!" });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("`text`: required");
    expect(bad.body).toContain("`reply_to`: not a valid id");
  });
});
