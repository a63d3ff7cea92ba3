// The navigator's state, explicit: what stays the same for a worker's attempt at a run
// (`LoopRun`), the one value each step reads and hands on (`StepState`), and what a step
// decided (`Next`). Nothing here writes anywhere; loop.ts threads the state through its steps.
import { DEFAULT_PROMPT_BUDGET } from "../../../config.ts";
import type { MarkdownPage } from "../../catalog/markdown-api.ts";
import { type Budget, budgetAtStart } from "../../money/ledger.ts";
import type { ActionDef } from "../../registry/types.ts";
import type { RunStart } from "../core/run-start.ts";
import type { Finish } from "../core/runs.ts";
import { tenantSettings } from "../core/settings.ts";
import { compact, type Remembered } from "../prompt/memory.ts";
import type { ConnectedTool } from "../prompt/protocol.ts";
import { CONVERSATION } from "../prompt/step-prompt.ts";
import { ModelChain } from "./fallback.ts";
import type { Prepared } from "./navigator-setup.ts";
import type { NavigatorPorts, Step } from "./ports.ts";

/** What carries over when a run resumes in the same worker after a transient failure. */
export interface Resumable {
  /** Date.now() by which the run ends: set by the first attempt, kept by the later ones. */
  deadline?: number;
}

/** What a worker's attempt at a run keeps from its start to its end. */
export interface LoopRun {
  start: RunStart;
  prepared: Prepared;
  ports: NavigatorPorts;
  /** The agent's model and its fallbacks (fallback.ts). */
  chain: ModelChain;
  /** The tenant's price overrides, parsed once per run. */
  prices: ReturnType<typeof tenantSettings>["pricing"];
  /** The actions the run may use: its typed tools (capabilities.ts runActions, step-prompt.ts). */
  usable: readonly ActionDef[];
  /** The registry's actions by name. */
  lookup: (name: string) => ActionDef | undefined;
  /** The connected tools it may call (run-tools.ts), typed after its actions. */
  connected: readonly ConnectedTool[];
  /** Their names: a call of one goes to `call_tool` (decisions.ts). */
  toolNames: ReadonlySet<string>;
  /** The most prompt tokens a step may send, unless a replay keeps its original's. */
  promptBudget: number;
  /** Steps recorded before this attempt that answered the run (an owner's answer, an approval): not counted against its limit. */
  answers: number;
  deadline: number;
  /** A stop request, or the worker shutting down or losing the lease. */
  stop: AbortSignal;
  /** Fired when its owner asks it to pause: it does before its next model call (pause.ts). */
  pause?: AbortSignal;
  /** The run's deadline passed: its timer's own signal, not the clock, says it cut a call short. */
  overtime: AbortSignal;
  /** What cuts every model call short: a stop or the deadline. */
  callSignal: AbortSignal;
}

export interface LoopOptions {
  ports: NavigatorPorts;
  stop: AbortSignal;
  pause?: AbortSignal;
  /** PROMPT_TOKEN_BUDGET */
  promptBudget?: number;
  usable: readonly ActionDef[];
  lookup: (name: string) => ActionDef | undefined;
  connected?: readonly ConnectedTool[];
}

export function setUpRun(
  start: RunStart,
  prepared: Prepared,
  options: LoopOptions,
  resumable: Resumable,
): LoopRun {
  const { run } = start;
  const spentMs = prepared.previous.reduce((total, step) => total + step.durationMs, 0);
  // Time lost to a transient failure and its retries counts too: a resumed attempt keeps the first one's deadline.
  resumable.deadline ??= Date.now() + run.timeoutSeconds * 1000 - spentMs;
  const deadline = resumable.deadline;
  // Every call is cut short by a stop or the run's deadline. One pair of signals per run, not
  // per call. A timer may fire a millisecond before Date.now() reaches the deadline: the
  // timer's own signal, not the clock, says the deadline cut the call short.
  const overtime = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
  return {
    start,
    prepared,
    ports: options.ports,
    chain: new ModelChain(prepared.model, prepared.cfg.fallback_models),
    prices: tenantSettings(start.tenant).pricing,
    usable: options.usable,
    lookup: options.lookup,
    connected: options.connected ?? [],
    toolNames: new Set((options.connected ?? []).map((tool) => tool.name)),
    promptBudget: options.promptBudget ?? DEFAULT_PROMPT_BUDGET,
    answers: prepared.previous.filter((step) => CONVERSATION.includes(step.type)).length,
    deadline,
    stop: options.stop,
    ...(options.pause && { pause: options.pause }),
    overtime,
    callSignal: AbortSignal.any([options.stop, overtime]),
  };
}

/** What each step reads and hands on. */
export interface StepState {
  /** The run's steps, oldest first: recorded ones and those this worker added, compacted. */
  readonly memory: Remembered[];
  /** The number of the last step recorded. */
  readonly stepCount: number;
  /** As the last recorded call left it: checked before every call, not once per run. */
  readonly budget: Budget;
  /** The model asked next: the run's own, or the fallback its failure moved to. */
  readonly model: string;
  readonly page: MarkdownPage;
  /** Whether a step row holds `page` (a navigation's): otherwise the next step keeps it, for its prompt. */
  readonly pageRecorded: boolean;
  readonly invalidInARow: number;
  /** What the model hears about its last reply (an error, a refusal), in its next prompt. */
  readonly feedback?: string;
  /** The endpoint takes no tools: decisions are asked for as JSON. */
  readonly jsonMode: boolean;
  /** A replay's prompt budget, the original's (replay-seed.ts). */
  readonly promptBudget?: number;
  /** Whether watchers must be told the next call started: true unless a row they were notified of just said so. */
  readonly announce: boolean;
  // The first step only records the /whoami read, so the model need not wait for it: it is
  // written while the first call is out, and awaited before that call is charged as step 2.
  readonly firstRecord: Promise<void>;
}

/** What a step decided: go on with the state it left, ask the model again, or end the run. */
export type Next =
  | { type: "continue"; state: StepState }
  | { type: "retry"; state: StepState; reason: "fallback" | "json_mode" }
  | { type: "end"; finish: Finish };

export const end = (finish: Finish): Next => ({ type: "end", finish });

/** The state a run begins with, before its first page is read. */
export function stateAtStart(run: LoopRun): Omit<StepState, "page" | "pageRecorded"> {
  const { start, prepared } = run;
  // A row's columns and prompt facts are the run page's, not the prompt's: memory keeps the rest.
  const memory = prepared.previous.map(({ number, type, path, detail }) => {
    const { prompt: _, ...rest } = (detail ?? {}) as Record<string, unknown>;
    return { number, type, path, detail: rest };
  });
  compact(memory);
  const stepCount = prepared.previous.length;
  return {
    memory,
    stepCount,
    // Read with the claim; every recorded call returns it as it leaves it.
    budget: budgetAtStart(
      start.agent.agentConfig,
      start.whoami.spentMicros,
      !tenantSettings(start.tenant).agents_enabled,
    ),
    model: prepared.model,
    invalidInARow: 0,
    jsonMode: false,
    // A fresh run's claim notified its watchers (running: thinking since it started); a resumed one's did not.
    announce: stepCount > 0,
    firstRecord: Promise.resolve(),
  };
}

/** The state once step `number` is recorded: in memory, as its row keeps it. */
export function remembered(run: LoopRun, state: StepState, number: number, step: Step): StepState {
  run.ports.emit({ type: "step_recorded", step });
  // As the row keeps it: the calls a reply carried beyond the first are in its detail (steps.ts).
  const detail = step.unrun ? { ...step.detail, unrun: step.unrun } : step.detail;
  const memory = [...state.memory, { number, type: step.type, path: step.path ?? null, detail }];
  compact(memory);
  return { ...state, memory, stepCount: number };
}

export function stopped(reason: unknown): Finish {
  if (reason === "stopped")
    return { status: "cancelled", stopReason: "stopped_by_owner", error: "Stopped by its owner." };
  if (reason === "lease_lost") return { status: "failed", stopReason: "lease_lost" };
  return { status: "failed", stopReason: "shutdown", error: "The worker shut down." };
}
