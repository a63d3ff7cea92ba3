// An agent's fallback models (agent config `fallback_models`): when its model's endpoint
// fails for a reason retrying the same model will not fix — the model is not found (404),
// the provider still answers 5xx after the client's retries, or it refuses the key for that
// model (401/403) — the step is asked again of the next model in the list. Passing failures
// (timeouts, 429s, the network) are the client's retries' business, not a reason to switch.
// The ledger row and the step name the model that answered (turn.ts measured), so the run page
// and the usage dashboards show which one it was.
import type { LlmError } from "./llm.ts";

const FALLS_BACK: LlmError["kind"][] = ["not_found", "server", "auth"];

export class ModelChain {
  private readonly models: string[];

  constructor(
    /** The model the run resolved: its own, the agent's, or a default. */
    readonly primary: string,
    fallbacks: readonly string[],
  ) {
    this.models = [primary, ...fallbacks.filter((model) => model !== primary)];
  }

  /**
   * The model to ask next after `current` failed with `err`, or null when the failure is
   * not one to fall back on or the list is used up (the run then fails as it always did).
   * The loop logs the switch (loop.ts), through its one sink.
   */
  next(current: string, err: LlmError): string | null {
    if (!FALLS_BACK.includes(err.kind)) return null;
    const at = this.models.indexOf(current);
    return (at >= 0 ? this.models[at + 1] : undefined) ?? null;
  }

  /** The model that answered, when it was not the run's own: what its step records. */
  answeredBy(current: string): { model: string } | undefined {
    return current === this.primary ? undefined : { model: current };
  }
}
