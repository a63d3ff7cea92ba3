// One model call of a run: the prompt a step sends (built from its state), and what the call
// is recorded with — its ledger entry and its step's measures.
import type { UsageEntry } from "../../money/ledger.ts";
import { priceCall } from "../../money/pricing.ts";
import type { PromptFacts } from "../core/steps.ts";
import { ownerText } from "../core/whoami-read.ts";
import { buildPrompt, capPage } from "../prompt/prompt.ts";
import { promptInput, toolsHash } from "../prompt/step-prompt.ts";
import { unrunCalls } from "../prompt/tool-calls.ts";
import { apiOf, type EncodedPrompt, encodePrompt, type LlmResponse } from "./llm.ts";
import type { LoopRun, StepState } from "./step-state.ts";

/** A step's prompt as it leaves, with how it was made. */
export interface StepPrompt {
  encoded: EncodedPrompt;
  /** How it was made, but for the fingerprint the reply carries (step-prompt.ts). */
  facts: Omit<PromptFacts, "hash">;
  /** The typed tools it offered: a call of one is an execute decision. */
  typed: string[];
}

/** One LLM call and what it is recorded with. */
export interface Turn {
  reply: LlmResponse;
  spent: UsageEntry;
  /** performance.now() when its step began. */
  startedAt: number;
  prompt: StepPrompt["facts"];
  typed: string[];
}

/** This step's prompt, from the run's memory and current page, and how it was made (for its step). */
export function stepPrompt(run: LoopRun, state: StepState): StepPrompt {
  const { run: claimed, agent, tenant, whoami } = run.start;
  const budget = state.promptBudget ?? run.promptBudget;
  const page = { path: state.page.path, markdown: state.page.markdown };
  const input = promptInput({
    agent,
    owner: ownerText(whoami.user),
    workspace: tenant.name,
    run: claimed,
    steps: state.memory,
    page,
    feedback: state.feedback,
    budget,
    jsonMode: state.jsonMode,
    usable: run.usable,
    lookup: run.lookup,
    connected: run.connected,
  });
  // The run's typed actions are tools of this call, beside the fixed three.
  const typed = (input.tools ?? []).map((tool) => (tool.type === "function" ? tool.function.name : ""));
  const facts: StepPrompt["facts"] = {
    budget,
    ...(state.jsonMode && { json: true as const }),
    ...(state.feedback && { feedback: state.feedback }),
    ...(!state.pageRecorded && { page: { path: page.path, markdown: capPage(page.markdown) } }),
    ...(input.tools && { tools: toolsHash(typed) }),
  };
  const { messages, stableChars } = buildPrompt(input);
  const encoded = encodePrompt(
    {
      model: state.model,
      messages,
      stableChars,
      jsonMode: state.jsonMode,
      tools: input.tools,
      cacheKey: agent.id,
    },
    apiOf(run.prepared.endpoint),
  );
  return { encoded, facts, typed };
}

/** The call's ledger entry: charged whatever happens to its step. */
export function spentOn(run: LoopRun, state: StepState, reply: LlmResponse): UsageEntry {
  const { run: claimed, agent } = run.start;
  return {
    tenantId: claimed.tenantId,
    agentId: agent.id,
    ownerId: agent.parentId,
    runId: claimed.id,
    stepNumber: state.stepCount + 1,
    apiKeyId: run.prepared.endpoint.keyId ?? null,
    model: state.model,
    usage: reply.usage,
    latencyMs: reply.latencyMs,
    price: priceCall(state.model, reply.usage, run.prices),
  };
}

/** What a step records of the call it came from, measured now. */
export function measured(run: LoopRun, turn: Turn) {
  const { usage, latencyMs, masked, message, fingerprint } = turn.reply;
  // The text a model may send beside its tool call: its reasoning, shown with the step.
  const text = message.tool_calls?.length ? message.content?.trim() : undefined;
  const unrun = unrunCalls(message);
  return {
    inputTokens: usage.input,
    outputTokens: usage.output,
    llmMs: latencyMs,
    masked,
    durationMs: performance.now() - turn.startedAt,
    prompt: { ...turn.prompt, hash: fingerprint },
    ...(text && { modelText: text }),
    ...run.chain.answeredBy(turn.spent.model),
    ...(unrun && { unrun }),
  };
}
