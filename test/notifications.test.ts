// The real pipeline: action → events row → relay (LISTEN/NOTIFY + poll) → BullMQ → worker
// → notifications. The queue prefix is unique to this file.
import { Queue } from "bullmq";
import type { FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPrisma, type PrismaClient } from "../src/db/prisma.ts";
import { createRedis } from "../src/db/redis.ts";
import type { Event } from "../src/generated/prisma/client.ts";
import { QUEUE_NAMES } from "../src/jobs/queues.ts";
import { startRuntime } from "../src/jobs/runtime.ts";
import { newId } from "../src/lib/ids.ts";
import {
  act,
  buildTestApp,
  fileDatabaseUrl,
  makeWorld,
  md,
  type Person,
  testConfig,
  testPrisma,
  type World,
  waitFor,
} from "./helpers/app.ts";

const db = testPrisma();
const prefix = `${inject("queuePrefix")}-notif`;
let app: FastifyInstance;
let redis: Redis;
let workerDb: PrismaClient;
let rt: Awaited<ReturnType<typeof startRuntime>>;

const start = () =>
  startRuntime({ config: testConfig({ QUEUE_PREFIX: prefix }), prisma: workerDb, connection: redis });

beforeAll(async () => {
  app = await buildTestApp();
  redis = createRedis(inject("redisUrl"), "worker");
  workerDb = createPrisma(fileDatabaseUrl(), 5);
  rt = await start();
});
afterAll(async () => {
  await rt.close();
  for (const name of QUEUE_NAMES) {
    const q = new Queue(name, { connection: redis, prefix });
    await q.obliterate({ force: true });
    await q.close();
  }
  await redis.quit();
  await workerDb.$disconnect();
  await app.close();
});

/** Runs `fn` and returns the events it wrote. */
async function emitted(w: World, fn: () => Promise<unknown>): Promise<Event[]> {
  const ids = async () => (await db.event.findMany({ where: { tenantId: w.tenant.id } })).map((e) => e.id);
  const before = new Set(await ids());
  await fn();
  return db.event.findMany({ where: { tenantId: w.tenant.id, id: { notIn: [...before] } } });
}

/**
 * Waits until the worker has processed the event and returns how many notifications the
 * job created. Another test file's relay may publish it to its own queue instead; then
 * only the database tells, after a grace period.
 */
async function settled(eventId: string): Promise<number | undefined> {
  const r = await waitFor(async () => {
    const job = await rt.queues.events.getJob(eventId);
    // finishedOn and returnvalue are written together when the job completes.
    if (job) return job.finishedOn ? { n: (job.returnvalue as { notified: number }).notified } : null;
    const ev = await db.event.findUniqueOrThrow({ where: { id: eventId } });
    return ev.publishedAt && Date.now() - ev.publishedAt.getTime() > 2000 ? { n: undefined } : null;
  }, 10_000);
  return r.n;
}

const notificationsOf = (w: World, p: Person) =>
  db.notification.findMany({ where: { tenantId: w.tenant.id, userId: p.id }, orderBy: { createdAt: "asc" } });
const all = (w: World) => db.notification.findMany({ where: { tenantId: w.tenant.id } });

async function note(w: World, who: Person, text: string) {
  let location = "";
  const [ev] = await emitted(w, async () => {
    location = (await act(w, who, "/studios/general/notes", "create_note", { text })).location;
  });
  return { event: ev!, path: location, id: location.split("/").pop()! };
}

async function comment(w: World, who: Person, path: string, text: string, replyTo?: string) {
  const [ev] = await emitted(w, () =>
    act(w, who, path, "add_comment", { text, ...(replyTo && { reply_to: replyTo }) }),
  );
  return { event: ev!, id: ev!.subjectId };
}

describe("mentions", () => {
  it("notifies a mentioned member once, and nobody else", async () => {
    const w = await makeWorld("ntf");
    const dave = await db.user.create({
      data: { id: newId(), tenantId: w.tenant.id, handle: "dave", name: "Dave", archivedAt: new Date() },
    });
    await db.studioMember.create({ data: { studioId: w.studio.id, userId: dave.id, tenantId: w.tenant.id } });
    const n = await note(w, w.alice, "Hi @bob and @BOB, also @carol, @alice, @dave and @nobody");
    expect(await settled(n.event.id)).toBe(1);
    const got = await all(w);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({
      userId: w.bob.id,
      actorId: w.alice.id,
      eventId: n.event.id,
      kind: "mention",
      path: n.path,
      excerpt: "Hi @bob and @BOB, also @carol, @alice, @dave and @nobody",
      dismissedAt: null,
    });
    const page = await md(app, w, w.bob, "GET", "/notifications");
    expect(page.body).toContain(`Alice Adams ([@alice](/u/alice)) mentioned you in [a note](${n.path})`);
    expect(page.body).toContain(`notification \`${got[0]!.id}\``);
    expect((await md(app, w, w.carol, "GET", "/notifications")).body).toContain("_You are all caught up._");
  });

  it("keeps an excerpt cut inside an emoji: its half becomes U+FFFD, the notification is written", async () => {
    const w = await makeWorld("ntf");
    // The excerpt is 500 UTF-16 units: the 500th is the first half of the emoji.
    const text = `@bob ${"a".repeat(494)}😀 and more`;
    const n = await note(w, w.alice, text);
    expect(await settled(n.event.id)).toBe(1);
    const [got] = await all(w);
    expect(got!.excerpt).toBe(`@bob ${"a".repeat(494)}\ufffd`);
  });

  it("ignores mentions in code spans and code blocks", async () => {
    const w = await makeWorld("ntf");
    const n = await note(w, w.alice, "About `@bob`:\n\n```\n@bob\n```\n\n    @bob indented");
    expect(await settled(n.event.id)).toBe(0);
    expect(await all(w)).toEqual([]);
  });

  it("finds mentions in lists, quotes, links and table cells", async () => {
    const w = await makeWorld("ntf");
    const dave = await db.user.create({
      data: { id: newId(), tenantId: w.tenant.id, handle: "dave", name: "D" },
    });
    await db.studioMember.create({ data: { studioId: w.studio.id, userId: dave.id, tenantId: w.tenant.id } });
    const n = await note(w, w.alice, "- item @bob\n\n| who | what |\n|---|---|\n| @dave | x |");
    expect(await settled(n.event.id)).toBe(2);
    expect((await all(w)).map((x) => x.userId).sort()).toEqual([w.bob.id, dave.id].sort());
  });

  it("notifies mentions in a decision's and a commitment's description", async () => {
    const w = await makeWorld("ntf");
    const [d] = await emitted(w, () =>
      act(w, w.alice, "/studios/general/decisions", "create_decision", {
        question: "Which day?",
        description: "@bob please weigh in",
      }),
    );
    const [c] = await emitted(w, () =>
      act(w, w.bob, "/studios/general/commitments", "create_commitment", {
        title: "Tidy up",
        critical_mass: 2,
        description: "with @alice",
      }),
    );
    expect(await settled(d!.id)).toBe(1);
    expect(await settled(c!.id)).toBe(1);
    const [toBob] = await notificationsOf(w, w.bob);
    const [toAlice] = await notificationsOf(w, w.alice);
    expect(toBob).toMatchObject({ kind: "mention", path: `/studios/general/decisions/${d!.subjectId}` });
    expect(toAlice).toMatchObject({ kind: "mention", path: `/studios/general/commitments/${c!.subjectId}` });
  });
});

describe("comments and replies", () => {
  it("notifies the content's author of a comment and the parent's author of a reply", async () => {
    const w = await makeWorld("ntf");
    const n = await note(w, w.bob, "A note by bob");
    expect(await settled(n.event.id)).toBe(0);

    const c1 = await comment(w, w.alice, n.path, "Nice note");
    expect(await settled(c1.event.id)).toBe(1);
    expect(await notificationsOf(w, w.bob)).toMatchObject([
      { kind: "comment", actorId: w.alice.id, path: n.path },
    ]);

    // bob replies to alice on his own note: alice hears of the reply, bob nothing.
    const c2 = await comment(w, w.bob, n.path, "Thanks", c1.id);
    expect(await settled(c2.event.id)).toBe(1);
    expect(await notificationsOf(w, w.alice)).toMatchObject([{ kind: "reply", actorId: w.bob.id }]);

    // A reply that also mentions the parent's author is one notification: the mention.
    const c3 = await comment(w, w.alice, n.path, "You're welcome @bob", c2.id);
    expect(await settled(c3.event.id)).toBe(1);
    const bobs = await notificationsOf(w, w.bob);
    expect(bobs.map((x) => x.kind)).toEqual(["comment", "mention"]);

    // Commenting on your own content notifies nobody.
    const c4 = await comment(w, w.bob, n.path, "Self comment");
    expect(await settled(c4.event.id)).toBe(0);
    expect(await all(w)).toHaveLength(3);
  });

  it("notifies authors of decisions and commitments about comments on them", async () => {
    const w = await makeWorld("ntf");
    const d = await act(w, w.alice, "/studios/general/decisions", "create_decision", { question: "Q?" });
    const c = await act(w, w.alice, "/studios/general/commitments", "create_commitment", {
      title: "C",
      critical_mass: 2,
    });
    const onDecision = await comment(w, w.bob, d.location, "On the decision");
    const onCommitment = await comment(w, w.bob, c.location, "On the commitment");
    expect(await settled(onDecision.event.id)).toBe(1);
    expect(await settled(onCommitment.event.id)).toBe(1);
    const got = await notificationsOf(w, w.alice);
    expect(got.map((x) => [x.kind, x.path]).sort()).toEqual(
      [
        ["comment", c.location],
        ["comment", d.location],
      ].sort(),
    );
  });
});

describe("delivery", () => {
  it("a re-delivered event notifies nobody twice", async () => {
    const w = await makeWorld("ntf");
    const n = await note(w, w.alice, "Ping @bob");
    expect(await settled(n.event.id)).toBe(1);
    const jobs = await Promise.all(
      ["again-1", "again-2"].map((suffix) =>
        rt.queues.events.add("event", { eventId: n.event.id }, { jobId: `${n.event.id}-${suffix}` }),
      ),
    );
    const results = await Promise.all(
      jobs.map((j) =>
        waitFor(async () => {
          const job = await rt.queues.events.getJob(j.id!);
          return job?.finishedOn ? job : null;
        }),
      ),
    );
    expect(results.map((j) => (j.returnvalue as { notified: number }).notified)).toEqual([0, 0]);
    // The relay publishing it again (same job id) is a no-op too.
    await db.event.update({ where: { id: n.event.id }, data: { publishedAt: null } });
    await waitFor(async () => (await db.event.findUniqueOrThrow({ where: { id: n.event.id } })).publishedAt);
    await new Promise((r) => setTimeout(r, 300));
    expect(await notificationsOf(w, w.bob)).toHaveLength(1);
  });

  it("the relay publishes events written while it was stopped", async () => {
    const w = await makeWorld("ntf");
    await rt.close();
    let written: { event: Event }[];
    try {
      written = [
        await note(w, w.alice, "While down: @bob"),
        await note(w, w.bob, "While down too: @alice"),
        await note(w, w.alice, "And again @bob"),
      ];
      await new Promise((r) => setTimeout(r, 200));
      expect(await all(w)).toEqual([]);
    } finally {
      rt = await start();
    }
    for (const n of written) expect(await settled(n.event.id)).toBe(1);
    expect((await notificationsOf(w, w.bob)).map((x) => x.eventId).sort()).toEqual(
      [written[0]!.event.id, written[2]!.event.id].sort(),
    );
    expect(await notificationsOf(w, w.alice)).toHaveLength(1);
    const unpublished = await db.event.count({
      where: { id: { in: written.map((n) => n.event.id) }, publishedAt: null },
    });
    expect(unpublished).toBe(0);
  });
});
