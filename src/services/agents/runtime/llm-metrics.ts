// LLM metrics where each fact is known: a call's outcome and latency around the client
// (every call, charged or not); its tokens and cost are counted where the ledger charges
// it (money/ledger.ts, countCharged).

import { bounded, llmCalls } from "../../../metrics/metrics.ts";
import type { LlmClient } from "./llm.ts";
import { LlmError } from "./llm.ts";

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
