// The LLM boundary: the `openai` SDK against any OpenAI-compatible base URL. The SDK
// retries 408/409/429/5xx and network errors with exponential backoff and honours
// Retry-After; we add per-call cancellation and classify failures for the run record.
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import { JSON_MODE_INSTRUCTIONS, TOOLS } from "./protocol.ts";

export interface Endpoint {
  baseURL: string;
  apiKey: string;
}

export interface LlmRequest {
  model: string;
  messages: ChatCompletionMessageParam[];
  jsonMode: boolean;
  signal: AbortSignal;
}

export interface Usage {
  input: number;
  output: number;
  cached: number;
}

export interface LlmResponse {
  message: ChatCompletionMessage;
  usage: Usage;
  latencyMs: number;
}

export type LlmErrorKind =
  | "auth"
  | "rate_limited"
  | "server"
  | "network"
  | "timeout"
  | "aborted"
  | "bad_request"
  | "no_tools";

export class LlmError extends Error {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export interface LlmOptions {
  timeoutMs: number;
  maxRetries: number;
}

export type LlmClient = (endpoint: Endpoint, req: LlmRequest) => Promise<LlmResponse>;

export function createLlmClient(opts: LlmOptions): LlmClient {
  const clients = new Map<string, OpenAI>();
  const clientFor = (e: Endpoint) => {
    const key = `${e.baseURL}\n${e.apiKey}`;
    let c = clients.get(key);
    if (!c) {
      c = new OpenAI({
        baseURL: e.baseURL,
        apiKey: e.apiKey,
        timeout: opts.timeoutMs,
        maxRetries: opts.maxRetries,
      });
      clients.set(key, c);
    }
    return c;
  };

  return async (endpoint, req) => {
    const body: ChatCompletionCreateParamsNonStreaming = req.jsonMode
      ? {
          model: req.model,
          messages: [...req.messages, { role: "system", content: JSON_MODE_INSTRUCTIONS }],
          response_format: { type: "json_object" },
        }
      : { model: req.model, messages: req.messages, tools: TOOLS, tool_choice: "auto" };
    const started = performance.now();
    try {
      const res = await clientFor(endpoint).chat.completions.create(body, { signal: req.signal });
      const choice = res.choices?.[0];
      if (!choice?.message) throw new LlmError("server", "the model returned no choices");
      return {
        message: choice.message,
        usage: {
          input: res.usage?.prompt_tokens ?? 0,
          output: res.usage?.completion_tokens ?? 0,
          cached: res.usage?.prompt_tokens_details?.cached_tokens ?? 0,
        },
        latencyMs: Math.round(performance.now() - started),
      };
    } catch (err) {
      throw classify(err, req.signal);
    }
  };
}

function classify(err: unknown, signal: AbortSignal): LlmError {
  if (err instanceof LlmError) return err;
  if (signal.aborted || err instanceof APIUserAbortError)
    return new LlmError("aborted", "the LLM call was cancelled");
  if (err instanceof APIConnectionTimeoutError) return new LlmError("timeout", "the LLM endpoint timed out");
  if (err instanceof APIError) {
    const msg = `LLM endpoint answered ${err.status ?? "with an error"}: ${err.message}`;
    if (err.status === 401 || err.status === 403) return new LlmError("auth", msg);
    if (err.status === 429) return new LlmError("rate_limited", msg);
    if (err.status === 400 && /tool/i.test(err.message)) return new LlmError("no_tools", msg);
    if (err.status && err.status < 500) return new LlmError("bad_request", msg);
    if (err.status) return new LlmError("server", msg);
    return new LlmError("network", `could not reach the LLM endpoint: ${err.message}`);
  }
  return new LlmError("network", `LLM call failed: ${(err as Error)?.message ?? String(err)}`);
}
