// The LLM client's fetch, seen by the call's `chat` span (tracing.ts): each attempt that
// failed (the SDK retries 5xx, 429 and network errors itself) becomes an event on it, so a
// retried call shows in its trace. The span is found by the request's body, which the SDK
// passes to every attempt as it got it: no active context needed (lib/telemetry.ts says why).
import type { Span } from "@opentelemetry/api";
import type { Fetch } from "./http-fetch.ts";

/** The `chat` span of each call in flight, by its encoded body (tracing.ts sets and clears it). */
export const callSpans = new WeakMap<object, Span>();

export function traceAttempts(fetch: Fetch): Fetch {
  return async (input, init) => {
    const span = init?.body && typeof init.body === "object" ? callSpans.get(init.body) : undefined;
    if (!span) return fetch(input, init);
    try {
      const res = await fetch(input, init);
      if (res.status >= 400)
        span.addEvent("cadre.llm.attempt_failed", { "http.response.status_code": res.status });
      return res;
    } catch (err) {
      span.addEvent("cadre.llm.attempt_failed", { "error.type": (err as Error)?.name ?? "Error" });
      throw err;
    }
  };
}
