// The LLM boundary: the `openai` SDK against any OpenAI-compatible base URL. The SDK
// retries 408/409/429/5xx and network errors with exponential backoff and honours
// Retry-After; we add per-call cancellation and classify failures for the run record.
// Every message is masked here, the one place a request leaves for a model, so no
// message, however it was built, carries a credential out (secret-masking.ts).
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { sha256 } from "../../../lib/ids.ts";
import type { Endpoint } from "../../money/keys.ts";
import type { Usage } from "../../money/pricing.ts";
import { type MaskCounts, maskDeep } from "../core/secret-masking.ts";
import { JSON_MODE_INSTRUCTIONS, TOOLS } from "../prompt/protocol.ts";
import { fingerprintJson } from "../prompt/step-prompt.ts";
import { createNodeFetch } from "./http-fetch.ts";
import { IdleError, NoChoicesError, ONE_TOOL_CALL, STREAM_FIELDS, streamCompletion } from "./llm-stream.ts";
import { traceAttempts } from "./traced-fetch.ts";

const MAX_CLIENTS = 200;

export interface Prompt {
  model: string;
  messages: ChatCompletionMessageParam[];
  jsonMode: boolean;
  /** The step's tools (protocol.ts toolsFor); the fixed ones when absent. */
  tools?: readonly ChatCompletionTool[];
  /** The user message's first characters that stay the same step after step (prompt.ts buildPrompt). */
  stableChars?: number;
}

/** A prompt as it leaves for the model: masked, fingerprinted, and encoded once. */
export interface EncodedPrompt {
  model: string;
  /** The request's JSON body, UTF-8. */
  body: Buffer;
  /** Of the messages exactly as sent (step-prompt.ts). */
  fingerprint: string;
  /** Secrets masked out of it, per kind; absent when there were none. */
  masked?: MaskCounts;
}

export interface LlmRequest {
  prompt: EncodedPrompt;
  signal: AbortSignal;
  /** The text of the reply so far, each time it grows (the run page shows it live). */
  onText?: (text: string) => void;
}

export interface LlmResponse {
  message: ChatCompletionMessage;
  usage: Usage;
  latencyMs: number;
  /** Secrets masked out of this request, per kind; absent when there were none. */
  masked?: MaskCounts;
  /** Of the messages exactly as sent (step-prompt.ts): the run page tells a rebuilt prompt from the real one by it. */
  fingerprint: string;
  /** The model that answered, and why it stopped, as the endpoint says (traces). */
  responseModel?: string;
  finishReason?: string;
}

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

export interface LlmOptions {
  timeoutMs: number;
  maxRetries: number;
  /** Connections per endpoint (LLM_MAX_CONNECTIONS); unset, no limit. */
  maxConnections?: number;
}

export type LlmClient = (endpoint: Endpoint, req: LlmRequest) => Promise<LlmResponse>;

export function createLlmClient(opts: LlmOptions): LlmClient {
  // Clients keep their HTTP connections alive, so they are reused, but only a bounded
  // number: each one holds a plaintext key, and a revoked key's client should not linger.
  const clients = new Map<string, OpenAI>();
  // One set of HTTP agents for all clients: the connection limit is per endpoint, however many keys call it.
  const fetch = traceAttempts(createNodeFetch(opts.maxConnections));
  // A run keeps its endpoint object: its key is hashed once per run, not once per call.
  const keys = new WeakMap<Endpoint, string>();
  const clientFor = (e: Endpoint) => {
    let key = keys.get(e);
    if (key === undefined) {
      key = `${e.baseURL}\n${sha256(e.apiKey)}`;
      keys.set(e, key);
    }
    let c = clients.get(key);
    if (c) {
      clients.delete(key); // re-insert: Map order is the LRU order
    } else {
      c = new OpenAI({
        baseURL: e.baseURL,
        apiKey: e.apiKey,
        timeout: opts.timeoutMs,
        maxRetries: opts.maxRetries,
        fetch,
      });
      if (clients.size >= MAX_CLIENTS) clients.delete(clients.keys().next().value!);
    }
    clients.set(key, c);
    return c;
  };

  return async (endpoint, req) => {
    const { body, masked, fingerprint } = req.prompt;
    const started = performance.now();
    // A run passes one signal to all its calls, and the SDK adds an abort listener to the
    // signal it is given without ever removing it: each call gets its own, linked here and
    // unlinked when the call ends, so a long run does not pile up listeners on its signal.
    const call = new AbortController();
    const onAbort = () => call.abort(req.signal.reason);
    if (req.signal.aborted) onAbort();
    else req.signal.addEventListener("abort", onAbort, { once: true });
    try {
      // The bytes as they are (the SDK passes a byte body through, and keeps it for its retries).
      const { message, usage, model, finishReason } = await streamCompletion(
        clientFor(endpoint),
        body,
        call,
        {
          idleMs: opts.timeoutMs,
          onText: req.onText,
        },
      );
      return {
        message,
        usage,
        latencyMs: Math.round(performance.now() - started),
        ...(masked && { masked }),
        fingerprint,
        ...(model && { responseModel: model }),
        ...(finishReason && { finishReason }),
      };
    } catch (err) {
      const e = classify(err, req.signal);
      // Providers echo (parts of) a refused key in their message: it must not reach a run record.
      if (endpoint.apiKey.length >= 8 && e.message.includes(endpoint.apiKey))
        throw new LlmError(e.kind, e.message.split(endpoint.apiKey).join("[key]"));
      throw e;
    } finally {
      req.signal.removeEventListener("abort", onAbort);
    }
  };
}

/**
 * Masks, fingerprints and encodes a prompt, once: a call waiting on the model then holds
 * its bytes (one byte a character, where the messages' strings take two as soon as one
 * character is beyond Latin-1, as a page's breadcrumb is), not the messages, and the JSON
 * of the messages is made once for the fingerprint and the body alike.
 */
export function encodePrompt(p: Prompt): EncodedPrompt {
  const counts: MaskCounts = {};
  const messages = maskDeep(
    p.jsonMode ? [...p.messages, { role: "system", content: JSON_MODE_INSTRUCTIONS }] : p.messages,
    counts,
  ) as ChatCompletionMessageParam[];
  const json = JSON.stringify(messages);
  const rest = p.jsonMode
    ? `"response_format":{"type":"json_object"}`
    : `"tools":${JSON.stringify(p.tools ?? TOOLS)},"tool_choice":"auto",${ONE_TOOL_CALL}`;
  return {
    model: p.model,
    body: Buffer.from(`{"model":${JSON.stringify(p.model)},"messages":${json},${rest},${STREAM_FIELDS}}`),
    fingerprint: fingerprintJson(json),
    ...(Object.keys(counts).length && { masked: counts }),
  };
}

function classify(err: unknown, signal: AbortSignal): LlmError {
  if (err instanceof LlmError) return err;
  if (err instanceof NoChoicesError) return new LlmError("server", err.message);
  if (err instanceof IdleError) return new LlmError("timeout", `the LLM endpoint timed out: ${err.message}`);
  if (signal.aborted || err instanceof APIUserAbortError)
    return new LlmError("aborted", "the LLM call was cancelled");
  if (err instanceof APIConnectionTimeoutError) return new LlmError("timeout", "the LLM endpoint timed out");
  if (err instanceof APIError) {
    const msg = `LLM endpoint answered ${err.status ?? "with an error"}: ${err.message}`;
    if (err.status === 401 || err.status === 403) return new LlmError("auth", msg);
    if (err.status === 429) return new LlmError("rate_limited", msg);
    if (err.status === 400 && /tool/i.test(err.message)) return new LlmError("no_tools", msg);
    if (err.status === 404) return new LlmError("not_found", msg);
    if (err.status && err.status < 500) return new LlmError("bad_request", msg);
    if (err.status) return new LlmError("server", msg);
    return new LlmError("network", `could not reach the LLM endpoint: ${err.message}`);
  }
  return new LlmError("network", `LLM call failed: ${(err as Error)?.message ?? String(err)}`);
}
