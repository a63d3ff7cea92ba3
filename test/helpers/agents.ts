// Real workers on real Redis, with the fake LLM over HTTP: a runtime per test file,
// under its own queue prefix, closed and obliterated afterwards.
import { Queue } from "bullmq";
import { inject } from "vitest";
import type { Config } from "../../src/config.ts";
import type { PrismaClient } from "../../src/db/prisma.ts";
import { createRedis } from "../../src/db/redis.ts";
import { type FakeLlm, type Script, startFakeLlm } from "../../src/dev/fake-llm.ts";
import { QUEUE_NAMES } from "../../src/jobs/queues.ts";
import { startRuntime } from "../../src/jobs/runtime.ts";
import { newId } from "../../src/lib/ids.ts";
import type { Logger } from "../../src/lib/logger.ts";
import { GRANTABLE } from "../../src/services/agents/policy/capabilities.ts";
import { createApiToken } from "../../src/services/tokens.ts";
import { type Person, testConfig, testPrisma, type World, waitFor } from "./app.ts";

export interface AgentEnv {
  llm: FakeLlm;
  config: Config;
  runtime: Awaited<ReturnType<typeof startRuntime>>;
  close(): Promise<void>;
}

export async function startAgents(
  name: string,
  overrides: Record<string, string> = {},
  script: Script = [],
  /** The worker's log (test/helpers/logs.ts reads it); silent when absent. */
  log?: Logger,
  /** A database client of the worker's own (the fault tests terminate its connections). */
  prisma: PrismaClient = testPrisma(),
): Promise<AgentEnv> {
  const llm = await startFakeLlm({ script });
  const prefix = `${inject("queuePrefix")}-${name}`;
  const config = testConfig({
    QUEUE_PREFIX: prefix,
    LLM_BASE_URL: llm.url,
    LLM_API_KEY: "test-key",
    LLM_DEFAULT_MODEL: "fake-model",
    LLM_MAX_RETRIES: "2",
    RUN_HEARTBEAT_MS: "100",
    RUN_LEASE_SECONDS: "3",
    SWEEP_INTERVAL_MS: "500",
    ...overrides,
  });
  const connection = createRedis(config.REDIS_URL, "worker");
  const runtime = await startRuntime({ config, prisma, connection, log });
  return {
    llm,
    config,
    runtime,
    async close() {
      await runtime.close();
      for (const q of QUEUE_NAMES) {
        const queue = new Queue(q, { connection, prefix });
        await queue.obliterate({ force: true });
        await queue.close();
      }
      connection.disconnect();
      await llm.close();
    },
  };
}

export interface Agent extends Person {
  ownerId: string;
}

/**
 * A subagent owned by `owner`, member of the world's studio, granted every content action
 * (as agents made before new ones started restrictive were by their migration) unless
 * `config` says otherwise.
 */
export async function makeAgent(
  w: World,
  owner: Person,
  handle = "scout",
  config: Record<string, unknown> = {},
): Promise<Agent> {
  const db = testPrisma();
  const agent = await db.user.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      handle,
      name: `Agent ${handle}`,
      kind: "subagent",
      parentId: owner.id,
      agentConfig: {
        identity_prompt: "You help the team.",
        max_steps: 10,
        capabilities: [...GRANTABLE],
        ...config,
      },
    },
  });
  await db.studioMember.create({ data: { studioId: w.studio.id, userId: agent.id, tenantId: w.tenant.id } });
  const { token } = await createApiToken(db, w.tenant.id, agent.id, "test", { scope: "manage" });
  return { id: agent.id, handle, name: agent.name, email: "", token, ownerId: owner.id };
}

export async function runsOf(agentId: string) {
  return testPrisma().subagentTaskRun.findMany({ where: { agentId }, orderBy: { createdAt: "asc" } });
}

export async function waitForRun(
  agentId: string,
  pred: (status: string) => boolean = (s) => ["completed", "failed", "cancelled", "timed_out"].includes(s),
  timeoutMs = 20_000, // as waitFor's: the run's end is the event waited for
) {
  return waitFor(async () => {
    const runs = await runsOf(agentId);
    return runs.find((r) => pred(r.status)) ?? null;
  }, timeoutMs);
}

export const tool = (name: string, args: unknown) => ({ tool: { name, args } });
