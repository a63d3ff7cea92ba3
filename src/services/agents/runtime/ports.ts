// What the navigator's loop (loop.ts) does through the world, passed in rather than reached
// for: reading a page, running an action, recording a step, charging a call, the model call,
// and one `emit` sink for what others watch (metrics, traces, live text, logs). navigator.ts
// wires the real ones (Postgres, the catalog, the LLM client); test/helpers/navigator-ports.ts
// keeps them in memory, so every loop decision is testable without a server.
import type { Prisma } from "../../../generated/prisma/client.ts";
import type { MarkdownPage } from "../../catalog/markdown-api.ts";
import type { Budget, UsageEntry } from "../../money/ledger.ts";
import type { Rehearsed } from "../../registry/types.ts";
import type { StepRecord } from "../core/steps.ts";
import type { Decision } from "../prompt/protocol.ts";
import type { LlmRequest, LlmResponse } from "./llm.ts";

/** A step as the loop makes it, before it has its number. */
export type Step = Omit<StepRecord, "number">;

/** What an action's transaction hands the step it records (registry ActionOutcome's part). */
export interface ActOutcome {
  notice: string;
  location: string;
  pending?: { id: string; waits: boolean };
  /** What the step keeps beside the notice (a tool call's id and server). */
  recorded?: Record<string, string>;
  /** A dry run's action: what the policy would have made of it (registry/rehearsal.ts). */
  rehearsed?: Rehearsed;
}

export interface ActRequest {
  /** The page it runs on. */
  path: string;
  action: string;
  params: Record<string, unknown>;
  reason?: string;
  /** The number its step is recorded with. */
  stepNumber: number;
  /** The step to record in the action's own transaction, made from its outcome there. */
  step: (outcome: ActOutcome) => Step;
}

export type ActResult =
  | { ok: true; page: MarkdownPage; pending?: ActOutcome["pending"]; recorded: Step }
  | { ok: false; status: number; markdown: string; message: string };

/** What `charge` leaves: the budget the next limit check reads, and whether its step was written. */
export interface Charged {
  budget: Budget;
  /** With a step: false when this worker lost the run's lease. */
  stepped: boolean;
}

/** What the loop tells its watchers; none of it changes what the loop does next. */
export type NavigatorEvent =
  /** A step was recorded (metrics, the run's trace). */
  | { type: "step_recorded"; step: Step }
  /** The model decided (the run's trace judges it by the agent's rules). */
  | { type: "decided"; decision: Decision; agentConfig: Prisma.JsonValue }
  /** A model call no notified row precedes is out: watchers show "thinking…". */
  | { type: "call_started"; stepNumber: number }
  /** The reply of step `stepNumber` so far, its whole text each time (live text). */
  | { type: "text"; stepNumber: number; text: string }
  /** The step's call ended: its text is the step's now. */
  | { type: "text_end" }
  | { type: "warning"; fields: Record<string, unknown>; message: string };

export interface NavigatorPorts {
  /** A page as the agent reads it now, listing actions by `agentConfig` (its last known one). */
  readPage(path: string, agentConfig: Prisma.JsonValue): Promise<MarkdownPage>;
  /** The run's first page, /whoami, as the claim read it: no second read. */
  readFirstPage(agentConfig: Prisma.JsonValue): Promise<MarkdownPage>;
  /** Runs an action as the agent, its step recorded in the action's transaction. */
  act(request: ActRequest): Promise<ActResult>;
  /** Records a step on its own (not a call's: those go with `charge`). */
  recordStep(record: StepRecord): Promise<void>;
  /** Writes a call's ledger row, with its step when the step is only a record. */
  charge(spent: UsageEntry, record?: StepRecord): Promise<Charged>;
  /** Asks `model` (the run's, or a fallback) through the run's endpoint. */
  callModel(model: string, request: LlmRequest): Promise<LlmResponse>;
  /** An experiment's run, before each call: why it must stop (its experiment's cost cap), or null. */
  experimentStop?(): Promise<string | null>;
  /** The run reached its monthly cost limit: the agent pauses until its owner acts. */
  pauseAtCostLimit(budget: Budget): Promise<void>;
  /** The provider refused the run's own key: its owner sees it marked failed. */
  markKeyFailed(keyId: string, message: string): Promise<void>;
  emit(event: NavigatorEvent): void;
}
