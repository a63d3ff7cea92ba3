// Faults on demand, for the tests that show passing failures delay work and never fail it:
// a worker's or web app's own database connections (named, so they alone can be
// terminated), a private Redis that can be flushed, killed and restarted, and a burst of
// runs whose every action must land exactly once.
import { type ChildProcess, spawn } from "node:child_process";
import { connect, createServer, type Server, type Socket } from "node:net";
import { Redis } from "ioredis";
import pg from "pg";
import { createPrisma, type PrismaClient } from "../../src/db/prisma.ts";
import type { ChatRequest, FakeReply } from "../../src/dev/fake-llm.ts";
import { queueRun } from "../../src/services/agents/core/runs.ts";
import { agentOf, userPrompt } from "./agent-scripts.ts";
import { type Agent, tool } from "./agents.ts";
import { fileDatabaseUrl, testPrisma, type World } from "./app.ts";
import { freePort } from "./ports.ts";

/** This file's database, as a client that says who it is (`application_name`). */
export function namedUrl(name: string): string {
  const url = new URL(fileDatabaseUrl());
  url.searchParams.set("application_name", name);
  return url.toString();
}

export function namedPrisma(
  name: string,
  max: number,
  transactions?: { maxWait: number; timeout: number },
): PrismaClient {
  return createPrisma(namedUrl(name), max, { transactions });
}

/** Ends every connection to this file's database opened under `name`, as an operator or a failover would. */
export async function terminateBackends(name: string): Promise<number> {
  const admin = new pg.Client({ connectionString: fileDatabaseUrl() });
  await admin.connect();
  try {
    const { rows } = await admin.query(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
      [name],
    );
    return rows.length;
  } finally {
    await admin.end();
  }
}

/**
 * This file's database behind a TCP proxy of the test's own: `cut` drops every connection and
 * refuses new ones, as a network partition would; `restore` lets them through again.
 */
export async function databaseBehindProxy() {
  const target = new URL(fileDatabaseUrl());
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("error", () => undefined);
          s.on("close", () => sockets.delete(s));
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, "127.0.0.1", () => resolve());
    });
  await listen();
  const url = new URL(target);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.toString(),
    async cut() {
      const s = server as Server | null;
      server = null;
      for (const sock of sockets) sock.destroy();
      await new Promise((r) => (s ? s.close(r) : r(undefined)));
    },
    restore: listen,
  };
}

/** A redis-server of the test's own, which it may flush, kill and start again on the same port. */
export async function privateRedis() {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      {
        stdio: "ignore",
      },
    );
    // Ready when it accepts a connection.
    for (let i = 0; i < 100; i++) {
      const ok = await new Promise<boolean>((resolve) => {
        const sock = connect(port, "127.0.0.1");
        sock.once("connect", () => {
          sock.end();
          resolve(true);
        });
        sock.once("error", () => resolve(false));
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("redis-server did not start");
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    async flush() {
      const c = new Redis(`redis://127.0.0.1:${port}`);
      await c.flushall();
      c.disconnect();
    },
    kill() {
      child?.kill("SIGKILL");
      child = null;
    },
  };
}

/**
 * Each agent opens the studio, posts one note titled with its handle, and finishes; every
 * call takes `delayMs`, so runs are mid-flight when a fault lands.
 */
export function noteEachScript(delayMs: number) {
  return (req: ChatRequest): FakeReply => {
    const prompt = userPrompt(req);
    const page = /# Current page: (\S+)/.exec(prompt)?.[1];
    const reply = prompt.includes("execute create_note(")
      ? tool("finish", { message: "posted" })
      : page !== "/studios/general"
        ? tool("navigate", { path: "/studios/general" })
        : tool("execute_action", {
            action: "create_note",
            params: { title: `from ${agentOf(req)}`, text: "A note that must exist exactly once." },
          });
    return { ...reply, delayMs };
  };
}

/** One manual run per agent, queued through the outbox like the run form's. */
export async function queueRunsFor(w: World, agents: Agent[], timeoutSeconds = 60) {
  for (const a of agents)
    await queueRun(testPrisma(), {
      tenantId: w.tenant.id,
      agentId: a.id,
      initiatedById: w.alice.id,
      triggerKind: "manual",
      chainDepth: 0,
      task: "Post your note in #general",
      model: null,
      maxSteps: 10,
      timeoutSeconds,
    });
}

/** Each agent's notes titled with its handle: exactly one each when no action ran twice. */
export async function notesPerAgent(w: World, agents: Agent[]): Promise<number[]> {
  const notes = await testPrisma().note.findMany({ where: { tenantId: w.tenant.id } });
  return agents.map((a) => notes.filter((n) => n.title === `from ${a.handle}`).length);
}
