// LLM metrics where each fact is known: a call's outcome and latency around the client
// (every call, charged or not), its tokens and cost where the ledger charges it.
import type { LlmClient } from "../services/agents/llm.ts";
import { LlmError } from "../services/agents/llm.ts";
import type { UsageEntry } from "../services/money/ledger.ts";
import { bounded, llmCalls, llmCost, llmTokens } from "./metrics.ts";

/** The client, timing each call by model and outcome (`ok`, or the failure's kind). */
export function measured(llm: LlmClient): LlmClient {
  return async (endpoint, req) => {
    const t0 = performance.now();
    const model = bounded("model", req.prompt.model);
    try {
      const res = await llm(endpoint, req);
      llmCalls.observe({ model, outcome: "ok" }, res.latencyMs / 1000);
      return res;
    } catch (err) {
      const outcome = err instanceof LlmError ? err.kind : "error";
      llmCalls.observe({ model, outcome }, (performance.now() - t0) / 1000);
      throw err;
    }
  };
}

/** A call the ledger recorded: its tokens (input counts cached input too, as the ledger does) and cost. */
export function countCharged(e: Pick<UsageEntry, "model" | "usage" | "price">): void {
  const model = bounded("model", e.model);
  llmTokens.inc({ model, kind: "input" }, e.usage.input);
  llmTokens.inc({ model, kind: "cached" }, e.usage.cached);
  llmTokens.inc({ model, kind: "output" }, e.usage.output);
  llmCost.inc({ model }, e.price.costMicros / 1e6);
}
