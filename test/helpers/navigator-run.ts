// A claimed run as the navigator's loop starts it, built in memory (no claim, no database),
// and the loop run on a memory world (navigator-ports.ts) to its end.
import type { Prisma, SubagentTaskRunStep, Tenant } from "../../src/generated/prisma/client.ts";
import type { ClaimedRun, RunAgent, RunStart } from "../../src/services/agents/core/run-start.ts";
import type { Finish } from "../../src/services/agents/core/runs.ts";
import { agentConfig } from "../../src/services/agents/core/settings.ts";
import type { Whoami } from "../../src/services/agents/core/whoami-read.ts";
import { navigate } from "../../src/services/agents/runtime/loop.ts";
import type { Prepared } from "../../src/services/agents/runtime/navigator-setup.ts";
import { type Resumable, setUpRun } from "../../src/services/agents/runtime/step-state.ts";
import { memoryWorld, type World, type WorldOptions } from "./navigator-ports.ts";

export const MODEL = "test-model";

export interface RunOptions extends WorldOptions {
  maxSteps?: number;
  timeoutSeconds?: number;
  /** Steps recorded before this attempt: a resumed run. */
  previous?: Pick<SubagentTaskRunStep, "number" | "type" | "path" | "detail">[];
  /** The endpoint's key row: a key of the agent's owner (BYOK). */
  keyId?: string;
  pauseRequested?: boolean;
  /** The run's stop signal (a stop request, a shutdown). */
  stop?: AbortSignal;
  /** The run's pause signal (the heartbeat's). */
  pause?: AbortSignal;
  /** What the worker's first attempt left. */
  resumable?: Resumable;
}

function claimedRun(options: RunOptions): ClaimedRun {
  return {
    id: "run_1",
    tenantId: "tenant_1",
    agentId: "agent_1",
    task: "Tidy the ops studio.",
    model: null,
    maxSteps: options.maxSteps ?? 10,
    timeoutSeconds: options.timeoutSeconds ?? 600,
    stepsCount: options.previous?.length ?? 0,
    status: "running",
    chainDepth: 0,
    attempts: 1,
    leaseOwner: "worker_1",
    triggerKind: "manual",
    label: [],
    pauseRequestedAt: options.pauseRequested ? new Date() : null,
    triggerTraceparent: null,
    traceparent: null,
    replayOfRunId: null,
    replayFromStep: null,
    policy: null,
    policyPinned: false,
    dry: false,
    lane: "",
    experimentId: null,
  };
}

function runAgent(config: Prisma.JsonValue): RunAgent {
  return {
    id: "agent_1",
    tenantId: "tenant_1",
    handle: "scout",
    name: "Scout",
    kind: "subagent",
    parentId: "owner_1",
    ownerStudioId: null,
    tenantAdmin: false,
    agentConfig: config,
  };
}

const tenant: Tenant = {
  id: "tenant_1",
  subdomain: "acme",
  name: "Acme",
  settings: {},
  twoFactorPolicy: "off",
  toolHosts: [],
  createdAt: new Date("2026-01-01T00:00:00Z"),
};

function whoamiOf(agent: RunAgent): Whoami {
  const owner = { name: "Olive", handle: "olive" };
  return {
    user: {
      handle: agent.handle,
      name: agent.name,
      kind: agent.kind,
      bio: null,
      agentConfig: agent.agentConfig,
      scratchpad: null,
      scratchpadLabel: null,
      parent: owner,
      ownerStudio: null,
    },
    studios: [],
    watching: [],
    unread: [],
    unreadCount: 0,
    spentMicros: 0n,
  } as unknown as Whoami;
}

export function runFixture(options: RunOptions): { start: RunStart; prepared: Prepared } {
  const config = options.agentConfig ?? {};
  const agent = runAgent(config);
  const start = { run: claimedRun(options), agent, tenant, whoami: whoamiOf(agent), viewers: [] };
  const previous = (options.previous ?? []).map(
    (step) =>
      ({
        id: `step_${step.number}`,
        runId: "run_1",
        tenantId: "tenant_1",
        inputTokens: 0,
        outputTokens: 0,
        llmMs: 0,
        durationMs: 10,
        modelText: null,
        replayed: false,
        createdAt: new Date(),
        ...step,
      }) satisfies SubagentTaskRunStep,
  );
  const endpoint = {
    baseURL: "http://127.0.0.1:9/v1",
    apiKey: "sk-test",
    ...(options.keyId && { keyId: options.keyId, label: "Work key (…test)" }),
  };
  return { start, prepared: { cfg: agentConfig(agent), model: MODEL, endpoint, previous } };
}

/** The loop run to its end on a memory world: what it ended with, and what it did. */
export async function runInMemory(options: RunOptions): Promise<World & { finish: Finish }> {
  const world = memoryWorld(options);
  const { start, prepared } = runFixture(options);
  const loopOptions = {
    ports: world.ports,
    stop: options.stop ?? new AbortController().signal,
    ...(options.pause && { pause: options.pause }),
    usable: [],
    lookup: () => undefined,
  };
  const finish = await navigate(setUpRun(start, prepared, loopOptions, options.resumable ?? {}));
  return { ...world, finish };
}
