// Recovery: a worker process SIGKILLed mid-run (another worker resumes the run without
// repeating its action), and Redis losing its queues (the sweeper and the outbox relay
// bring the work back from Postgres).
//
// This file runs on its OWN database, created here from prisma/migrations: relays and
// sweepers are global to a database, so on the shared one another file's runtime would
// claim these runs (and these runtimes theirs) whenever files run in parallel.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createPrisma, type PrismaClient } from "../src/db/prisma.ts";
import { createRedis } from "../src/db/redis.ts";
import { deploy } from "../src/db/schema-engine.ts";
import { type ChatRequest, type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { startEventRelay } from "../src/jobs/event-relay.ts";
import { createQueues, QUEUE_NAMES } from "../src/jobs/queues.ts";
import { startRuntime } from "../src/jobs/runtime.ts";
import { newId } from "../src/lib/ids.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import type { Actor } from "../src/services/registry/types.ts";
import { tool } from "./helpers/agents.ts";
import { testConfig, waitFor } from "./helpers/app.ts";
import { killAllWorkers, killGroup, spawnWorker as spawnProcess } from "./helpers/workers.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const dbUrl = new URL(inject("databaseUrl"));
dbUrl.pathname = `${dbUrl.pathname}_rcv`;
const databaseUrl = dbUrl.toString();
const prefixes: string[] = [];
let db: PrismaClient;
let redis: Redis;
let llm: FakeLlm;

async function dropDatabase() {
  const admin = new URL(databaseUrl);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS "${dbUrl.pathname.slice(1)}" WITH (FORCE)`);
  await client.end();
}

beforeAll(async () => {
  await dropDatabase();
  await deploy({
    databaseUrl,
    schemaPath: path.join(root, "prisma/schema.prisma"),
    migrationsDir: path.join(root, "prisma/migrations"),
  });
  db = createPrisma(databaseUrl, 5);
  redis = createRedis(inject("redisUrl"), "worker");
  llm = await startFakeLlm();
});

afterAll(async () => {
  // Whatever happened, no worker outlives the file: SIGKILL each process group.
  killAllWorkers();
  for (const prefix of prefixes)
    for (const name of QUEUE_NAMES) {
      const q = new Queue(name, { connection: redis, prefix });
      await q.obliterate({ force: true });
      await q.close();
    }
  redis?.disconnect();
  await llm?.close();
  await db?.$disconnect();
  await dropDatabase();
});

function newPrefix(name: string) {
  const prefix = `${inject("queuePrefix")}-rcv-${name}`;
  prefixes.push(prefix);
  return prefix;
}

const spawnWorker = (prefix: string) => spawnProcess({ databaseUrl, llmUrl: llm.url, prefix });

/** A runtime in this process, on this file's database. */
async function inProcess(prefix: string) {
  const config = testConfig({
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: prefix,
    LLM_BASE_URL: llm.url,
    LLM_API_KEY: "test-key",
    LLM_DEFAULT_MODEL: "fake-model",
    RUN_LEASE_SECONDS: "2",
    RUN_HEARTBEAT_MS: "200",
    SWEEP_INTERVAL_MS: "500",
  });
  return startRuntime({ config, prisma: db, connection: redis });
}

interface World {
  tenant: Awaited<ReturnType<PrismaClient["tenant"]["create"]>>;
  alice: Actor;
  agent: Actor;
  note: string;
}

/** A tenant with alice, studio general, her subagent `fixer` in it, and a note. */
async function makeWorld(): Promise<World> {
  const sub = `rcv${newId(8)}`;
  const tenant = await db.tenant.create({ data: { id: newId(), subdomain: sub, name: sub } });
  const alice = await db.user.create({
    data: { id: newId(), tenantId: tenant.id, handle: "alice", name: "Alice", kind: "person" },
  });
  const agent = await db.user.create({
    data: {
      id: newId(),
      tenantId: tenant.id,
      handle: "fixer",
      name: "Fixer",
      kind: "subagent",
      parentId: alice.id,
      agentConfig: { identity_prompt: "You fix things.", max_steps: 10 },
    },
  });
  await db.studio.create({
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
          { userId: agent.id, tenantId: tenant.id, role: "member" },
        ],
      },
    },
  });
  const world = { tenant, alice, agent, note: "" };
  world.note = (
    await act(world, alice, "/studios/general", "create_note", { title: "Bug", text: "Fix it" })
  ).location;
  return world;
}

function act(w: Pick<World, "tenant">, actor: Actor, page: string, action: string, params: object) {
  return registry.run({ db, tenant: w.tenant, actor }, page, action, { ...params }, { form: false });
}

const runTask = async (w: World, task: string) =>
  (await act(w, w.alice, "/subagents/fixer/run", "run_task", { task })).location.split("/").pop()!;
const getRun = (id: string) => db.subagentTaskRun.findUniqueOrThrow({ where: { id } });
const waitStatus = (id: string, status: string, ms = 20_000) =>
  waitFor(async () => {
    const r = await getRun(id);
    return r.status === status ? r : null;
  }, ms);
const userText = (r: ChatRequest) => String(r.messages.find((m) => m.role === "user")?.content ?? "");

describe("a worker process killed mid-run", () => {
  it("is recovered by another worker: attempts 2, the action done once, steps 1..N", {
    timeout: 120_000,
  }, async () => {
    const w = await makeWorld();
    const noteId = w.note.split("/").pop()!;
    let afterKill = false;
    // Navigate to the note (step 2), comment (step 3); the next call hangs until the worker dies.
    llm.setScript((req) => {
      const u = userText(req);
      if (u.includes("execute add_comment"))
        return afterKill ? tool("finish", { message: "fixed" }) : { hang: true };
      if (u.includes(`# Current page: ${w.note}`))
        return tool("execute_action", { action: "add_comment", params: { text: "Fixed it." } });
      return tool("navigate", { path: w.note });
    });
    const comments = () => db.comment.findMany({ where: { subjectId: noteId, authorId: w.agent.id } });
    const steps = () => db.subagentTaskRunStep.findMany({ where: { runId }, orderBy: { number: "asc" } });
    const prefix = newPrefix("kill");
    const from = llm.requests.length;
    const first = spawnWorker(prefix);
    await first.ready;
    const runId = await runTask(w, "Fix the bug on the note");
    const hung = await waitFor(
      async () => llm.requests.slice(from).find((r) => userText(r.body).includes("execute add_comment")),
      30_000,
    );
    // Mid-run: the comment and its step are committed, the worker waits on the model.
    expect(await getRun(runId)).toMatchObject({ status: "running", attempts: 1, stepsCount: 3 });
    expect(await comments()).toHaveLength(1);
    killGroup(first.child, "SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    const killedAt = Date.now();
    afterKill = true;
    const second = spawnWorker(prefix);
    try {
      await second.ready;
      const done = await waitStatus(runId, "completed", 30_000);
      expect(done).toMatchObject({
        attempts: 2,
        stopReason: "finished",
        finalMessage: "fixed",
        leaseOwner: null,
      });
      expect(done.completedAt!.getTime()).toBeGreaterThan(killedAt);
      const [comment, ...more] = await comments();
      expect(more).toEqual([]);
      expect(comment!.text).toBe("Fixed it.");
      const all = await steps();
      expect(all.map((s) => s.number)).toEqual([1, 2, 3, 4]);
      expect(done.stepsCount).toBe(4);
      expect(all.map((s) => [s.type, s.path])).toEqual([
        ["navigate", "/whoami"],
        ["navigate", w.note],
        ["execute", w.note],
        ["finish", expect.stringContaining(noteId)],
      ]);
      const resources = await db.subagentTaskRunResource.findMany({ where: { runId } });
      expect(resources).toEqual([
        expect.objectContaining({ resourceType: "comment", resourceId: comment!.id }),
      ]);
      // The recovered worker asked the model once, remembering the comment it had made.
      const resumed = llm.requests.slice(from).filter((r) => r.at > hung.at);
      expect(resumed).toHaveLength(1);
      expect(userText(resumed[0]!.body)).toMatch(/3\. execute add_comment\(.*Fixed it\./);
    } finally {
      killGroup(second.child, "SIGKILL");
      await second.exited;
    }
  });
});

describe("Redis losing its data loses no work", () => {
  it("a queued run whose job was lost is re-enqueued by the sweeper and completes", async () => {
    const w = await makeWorld();
    llm.setScript(() => tool("finish", { message: "done" }));
    const prefix = newPrefix("lost");
    const runId = await runTask(w, "Say done");
    // A relay publishes the run.queued event while no worker runs; then Redis loses it all.
    const queues = createQueues(redis, prefix);
    const relay = startEventRelay({ databaseUrl, queues });
    await relay.ready;
    await relay.stop();
    const event = await db.event.findFirstOrThrow({ where: { type: "run.queued", subjectId: runId } });
    expect(event.publishedAt).not.toBeNull();
    // A queued run goes straight to agent-runs, not through the events queue.
    expect(await queues["agent-runs"].getJob(`run-${event.id}`)).toBeTruthy();
    expect(await queues.events.getJob(event.id)).toBeFalsy();
    for (const name of ["events", "agent-runs"] as const) await queues[name].obliterate({ force: true });
    expect(await queues["agent-runs"].getJob(`run-${event.id}`)).toBeFalsy();
    await Promise.all(Object.values(queues).map((q) => q.close()));
    expect((await getRun(runId)).status).toBe("queued");
    const rt = await inProcess(prefix);
    try {
      const done = await waitStatus(runId, "completed");
      expect(done).toMatchObject({ attempts: 1, finalMessage: "done" });
      const jobs = await rt.queues["agent-runs"].getJobs(["completed", "active", "waiting", "failed"]);
      expect(jobs.length).toBeGreaterThan(0);
      for (const j of jobs) expect(j.id).toMatch(new RegExp(`^sweep-${runId}-0-\\d+$`));
    } finally {
      await rt.close();
    }
  });

  it("an event written while no relay runs is published when one starts, and its trigger runs", async () => {
    const w = await makeWorld();
    llm.setScript(() => tool("finish", { message: "seen" }));
    const prefix = newPrefix("relay");
    await act(w, w.alice, w.note, "add_comment", { text: "@fixer can you look?" });
    const event = await db.event.findFirstOrThrow({
      where: { tenantId: w.tenant.id, type: "comment.created" },
    });
    await new Promise((r) => setTimeout(r, 300));
    expect((await db.event.findUniqueOrThrow({ where: { id: event.id } })).publishedAt).toBeNull();
    expect(await db.subagentTaskRun.count({ where: { agentId: w.agent.id } })).toBe(0);
    const rt = await inProcess(prefix);
    try {
      const published = await waitFor(
        async () => (await rt.queues.events.getJob(event.id))?.finishedOn,
        10_000,
      );
      expect(published).toBeGreaterThan(0);
      expect((await db.event.findUniqueOrThrow({ where: { id: event.id } })).publishedAt).not.toBeNull();
      const run = await waitFor(
        async () => db.subagentTaskRun.findFirst({ where: { agentId: w.agent.id, status: "completed" } }),
        20_000,
      );
      expect(run).toMatchObject({ triggerKind: "mention", triggerEventId: event.id, finalMessage: "seen" });
    } finally {
      await rt.close();
    }
  });
});
