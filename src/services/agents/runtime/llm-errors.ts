// What a failed model call was, for the run record and fallback.ts: one set of kinds,
// whichever SDK failed (`openai` for OpenAI-compatible endpoints, `@anthropic-ai/sdk` for
// Anthropic's), and a message that never carries the key the call was made with.
import {
  APIUserAbortError as AnthropicAbort,
  APIError as AnthropicApiError,
  APIConnectionTimeoutError as AnthropicTimeout,
} from "@anthropic-ai/sdk";
import { APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { IdleError, NoChoicesError } from "./llm-stream.ts";

export type LlmErrorKind =
  | "auth"
  | "rate_limited"
  | "server"
  | "network"
  | "timeout"
  | "aborted"
  | "bad_request"
  | "not_found"
  | "no_tools";

export class LlmError extends Error {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** `err` classified; `apiKey` cut out of its message (providers echo a refused key). */
export function llmError(err: unknown, signal: AbortSignal, apiKey: string): LlmError {
  const classified = classify(err, signal);
  if (apiKey.length >= 8 && classified.message.includes(apiKey))
    return new LlmError(classified.kind, classified.message.split(apiKey).join("[key]"));
  return classified;
}

function classify(err: unknown, signal: AbortSignal): LlmError {
  if (err instanceof LlmError) return err;
  if (err instanceof NoChoicesError) return new LlmError("server", err.message);
  if (err instanceof IdleError) return new LlmError("timeout", `the LLM endpoint timed out: ${err.message}`);
  if (signal.aborted || err instanceof APIUserAbortError || err instanceof AnthropicAbort)
    return new LlmError("aborted", "the LLM call was cancelled");
  if (err instanceof APIConnectionTimeoutError || err instanceof AnthropicTimeout)
    return new LlmError("timeout", "the LLM endpoint timed out");
  if (err instanceof APIError) {
    const msg = `LLM endpoint answered ${err.status ?? "with an error"}: ${err.message}`;
    if (!err.status) return new LlmError("network", `could not reach the LLM endpoint: ${err.message}`);
    return new LlmError(kindOf(err.status, err.message), msg);
  }
  if (err instanceof AnthropicApiError) return anthropic(err);
  return new LlmError("network", `LLM call failed: ${(err as Error)?.message ?? String(err)}`);
}

function kindOf(status: number, message: string): LlmErrorKind {
  if (status === 401 || status === 403) return "auth";
  if (status === 429) return "rate_limited";
  if (status === 400 && /tool/i.test(message)) return "no_tools";
  if (status === 404) return "not_found";
  if (status < 500) return "bad_request";
  return "server"; // 5xx, Anthropic's 529 "overloaded" among them
}

/** Anthropic's errors: by status, or, for an `error` event in the middle of a stream (no status), by Anthropic's error type. */
function anthropic(err: AnthropicApiError): LlmError {
  const said = err.apiMessage ?? err.message;
  const msg = `LLM endpoint answered ${err.status ?? err.type ?? "with an error"}: ${said}`;
  if (err.status) return new LlmError(kindOf(err.status, said), msg);
  const byType: Partial<Record<string, LlmErrorKind>> = {
    authentication_error: "auth",
    permission_error: "auth",
    rate_limit_error: "rate_limited",
    not_found_error: "not_found",
    invalid_request_error: "bad_request",
    overloaded_error: "server",
    api_error: "server",
  };
  const kind = err.type ? (byType[err.type] ?? "server") : undefined;
  if (kind) return new LlmError(kind, msg);
  return new LlmError("network", `could not reach the LLM endpoint: ${err.message}`);
}
