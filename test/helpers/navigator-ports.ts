// The navigator's loop in memory: a scripted model (its replies, or the LlmError a call
// fails with, in order) and ports that keep pages, steps, ledger rows and events in arrays,
// so test/navigator*.test.ts drive loop.ts with no server, Postgres or Redis.
import type { ChatCompletionMessage, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { Prisma } from "../../src/generated/prisma/client.ts";
import type { StepRecord } from "../../src/services/agents/core/steps.ts";
import { LlmError, type LlmRequest, type LlmResponse } from "../../src/services/agents/runtime/llm.ts";
import type {
  ActOutcome,
  ActRequest,
  ActResult,
  NavigatorEvent,
  NavigatorPorts,
} from "../../src/services/agents/runtime/ports.ts";
import type { MarkdownPage } from "../../src/services/catalog/markdown-api.ts";
import { type Budget, budgetAtStart, type UsageEntry } from "../../src/services/money/ledger.ts";

/** A call the scripted model received: the model asked and the request as it was encoded. */
export interface ModelCall {
  model: string;
  request: LlmRequest;
  messages: ChatCompletionMessageParam[];
  /** The request body as sent: tools, response_format. */
  body: Record<string, unknown>;
}

/** What the model does with one call: answer with a message, fail, or decide from the call. */
export type Scripted =
  | ChatCompletionMessage
  | LlmError
  | ((call: ModelCall) => ChatCompletionMessage | Promise<ChatCompletionMessage>);

/** A reply calling the given tools, in order (a model may send more than one). */
export function toolCalls(...calls: [name: string, args: Record<string, unknown>][]): ChatCompletionMessage {
  return {
    role: "assistant",
    content: null,
    refusal: null,
    tool_calls: calls.map(([name, args], index) => ({
      id: `call_${index}`,
      type: "function",
      function: { name, arguments: JSON.stringify(args) },
    })),
  };
}

export const toolCall = (name: string, args: Record<string, unknown>) => toolCalls([name, args]);

export const textReply = (content: string): ChatCompletionMessage => ({
  role: "assistant",
  content,
  refusal: null,
});

export const USAGE = { input: 100, output: 10, cached: 0 };

/** Where the pages are: the markdown each path renders and the actions it offers. */
export type Site = Record<string, { markdown: string; actions?: string[] }>;

export const SITE: Site = {
  "/whoami": { markdown: "# You are @scout\n\nYour studios: /studios/ops" },
  "/studios/ops": { markdown: "# Studio ops\n\nA note.", actions: ["add_comment", "delete_studio"] },
};

export interface WorldOptions {
  script: Scripted[];
  site?: Site;
  /** What a run action's transaction gives its step (default: done, back on its page); an Error refuses it. */
  outcome?: (request: ActRequest) => ActOutcome | Error;
  /** Charged per call, in micro-dollars. */
  costMicros?: number;
  /** The agent's configuration, as each charge's budget returns it (the run's, as a rule). */
  agentConfig?: Prisma.JsonValue;
}

/** What the loop did, as the ports saw it. */
export interface World {
  ports: NavigatorPorts;
  calls: ModelCall[];
  steps: StepRecord[];
  charges: UsageEntry[];
  events: NavigatorEvent[];
  acted: ActRequest[];
  failedKeys: string[];
  pausedAtLimit: Budget[];
}

function pageOf(site: Site, path: string): MarkdownPage {
  const page = site[path];
  if (!page) return { status: 404, path, markdown: `# Not found: ${path}`, actions: [], pageActions: [] };
  const actions = page.actions ?? [];
  return { status: 200, path, markdown: page.markdown, actions, pageActions: actions };
}

export function memoryWorld(options: WorldOptions): World {
  const site = options.site ?? SITE;
  const script = [...options.script];
  let spentMicros = 0n;
  const world: Omit<World, "ports"> = {
    calls: [],
    steps: [],
    charges: [],
    events: [],
    acted: [],
    failedKeys: [],
    pausedAtLimit: [],
  };
  const act = async (request: ActRequest): Promise<ActResult> => {
    world.acted.push(request);
    const outcome = options.outcome?.(request) ?? { notice: "Done.", location: request.path };
    if (outcome instanceof Error)
      return {
        ok: false,
        status: 403,
        markdown: `# Refused\n\n${outcome.message}`,
        message: outcome.message,
      };
    const recorded = request.step(outcome);
    world.steps.push({ ...recorded, number: request.stepNumber });
    return { ok: true, page: pageOf(site, outcome.location), pending: outcome.pending, recorded };
  };
  const callModel = async (model: string, request: LlmRequest): Promise<LlmResponse> => {
    const body = JSON.parse(request.prompt.body.toString("utf8")) as Record<string, unknown>;
    const call = { model, request, body, messages: body.messages as ChatCompletionMessageParam[] };
    world.calls.push(call);
    const next = script.shift();
    if (!next) throw new Error(`the script has no reply for call ${world.calls.length}`);
    if (next instanceof LlmError) throw next;
    const message = typeof next === "function" ? await next(call) : next;
    return { message, usage: USAGE, latencyMs: 5, fingerprint: request.prompt.fingerprint };
  };
  const ports: NavigatorPorts = {
    readPage: async (path) => pageOf(site, path),
    readFirstPage: async () => pageOf(site, "/whoami"),
    act,
    recordStep: async (record) => {
      world.steps.push(record);
    },
    charge: async (spent, record) => {
      world.charges.push(spent);
      if (record) world.steps.push(record);
      spentMicros += BigInt(options.costMicros ?? 0);
      return { budget: budgetAtStart(options.agentConfig ?? {}, spentMicros), stepped: true };
    },
    callModel,
    pauseAtCostLimit: async (budget) => {
      world.pausedAtLimit.push(budget);
    },
    markKeyFailed: async (keyId) => {
      world.failedKeys.push(keyId);
    },
    emit: (event) => {
      world.events.push(event);
    },
  };
  return { ...world, ports };
}
