// The LLM boundary: any OpenAI-compatible base URL through llm-http.ts (the openai SDK's
// retry rules and error classes without its request path), and Anthropic's own SDK for an
// Anthropic key (its Messages API caches prompts: llm-anthropic.ts). Both retry 408/409/429/
// 5xx and network errors with exponential backoff and honour Retry-After; we add per-call
// cancellation and classify failures for the run record.
// Every message is masked here, the one place a request leaves for a model, so no
// message, however it was built, carries a credential out (secret-masking.ts).
import type {
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { sha256 } from "../../../lib/ids.ts";
import type { Endpoint } from "../../money/keys.ts";
import type { Usage } from "../../money/pricing.ts";
import { anthropicClient } from "../../money/provider-clients.ts";
import { type MaskCounts, maskDeep, maskText } from "../core/secret-masking.ts";
import { JSON_MODE_INSTRUCTIONS, TOOLS, toolsJson } from "../prompt/protocol.ts";
import { fingerprintJson } from "../prompt/step-prompt.ts";
import type { StablePart } from "./cache-blocks.ts";
import { agentsFor, createNodeFetch } from "./http-fetch.ts";
import { streamMessage } from "./llm-anthropic.ts";
import { anthropicBody } from "./llm-anthropic-body.ts";
import { llmError } from "./llm-errors.ts";
import { chatClient } from "./llm-http.ts";
import { cacheFields, cacheHintsFor, messagesWithBreakpoints } from "./llm-openai-cache.ts";
import { ONE_TOOL_CALL, STREAM_FIELDS, streamCompletion } from "./llm-stream.ts";
import { traceAttempts } from "./traced-fetch.ts";

const MAX_CLIENTS = 200;

export interface Prompt {
  model: string;
  messages: ChatCompletionMessageParam[];
  jsonMode: boolean;
  /**
   * Not an agent's step (a grader's call, rubric-grader.ts): no tools and no protocol of
   * theirs, a JSON object asked for in its own words.
   */
  noTools?: boolean;
  /** The step's tools (protocol.ts toolsFor); the fixed ones when absent. */
  tools?: readonly ChatCompletionTool[];
  /** The user message's first characters that stay the same step after step (prompt.ts buildPrompt). */
  stableChars?: number;
  /** Where inside them its cache blocks start, and the page window's (prompt.ts BuiltPrompt). */
  stableCuts?: readonly number[];
  stableWindow?: number;
  stableBefore?: number;
  /** Requests that share a prefix share this key (OpenAI's `prompt_cache_key`): the agent's id. */
  cacheKey?: string;
}

/** A prompt as it leaves for the model: masked, fingerprinted, and encoded once. */
export interface EncodedPrompt {
  /** The API its body is for (apiOf of the endpoint it is sent to). */
  api: Api;
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

export { LlmError, type LlmErrorKind } from "./llm-errors.ts";

export interface LlmOptions {
  timeoutMs: number;
  maxRetries: number;
  /** Connections per endpoint (LLM_MAX_CONNECTIONS); unset, no limit. */
  maxConnections?: number;
}

export type LlmClient = (endpoint: Endpoint, req: LlmRequest) => Promise<LlmResponse>;

/** The wire protocol an endpoint speaks: the one place that decides it, for the encoding and the call alike. */
export type Api = "openai" | "anthropic";
export const apiOf = (endpoint: Pick<Endpoint, "provider">): Api =>
  endpoint.provider === "anthropic" ? "anthropic" : "openai";

/**
 * Clients by endpoint and key. They keep their HTTP connections alive, so they are
 * reused, but only a bounded number: each one holds a plaintext key, and a revoked key's
 * client should not linger.
 */
function pool<Client>(make: (endpoint: Endpoint) => Client): (endpoint: Endpoint) => Client {
  const clients = new Map<string, Client>();
  // A run keeps its endpoint object: its key is hashed once per run, not once per call.
  const keys = new WeakMap<Endpoint, string>();
  return (endpoint) => {
    let key = keys.get(endpoint);
    if (key === undefined) {
      key = `${endpoint.baseURL}\n${sha256(endpoint.apiKey)}`;
      keys.set(endpoint, key);
    }
    let client = clients.get(key);
    if (client !== undefined) {
      clients.delete(key); // re-insert: Map order is the LRU order
    } else {
      client = make(endpoint);
      if (clients.size >= MAX_CLIENTS) clients.delete(clients.keys().next().value!);
    }
    clients.set(key, client);
    return client;
  };
}

export function createLlmClient(opts: LlmOptions): LlmClient {
  // One set of HTTP agents for all clients: the connection limit is per endpoint, however
  // many keys call it, and whichever API. Anthropic's SDK traces its attempts through its
  // fetch; llm-http.ts traces its own.
  const agents = agentsFor(opts.maxConnections);
  const fetch = traceAttempts(createNodeFetch(opts.maxConnections, agents));
  const sdk = { timeoutMs: opts.timeoutMs, maxRetries: opts.maxRetries, fetch };
  const openai = pool((e) => chatClient(e, agents, opts));
  const anthropic = pool((e) => anthropicClient(e.baseURL, e.apiKey, sdk));

  return async (endpoint, req) => {
    const { body, masked, fingerprint } = req.prompt;
    const api = apiOf(endpoint);
    // A bug, not a provider's failure: the navigator encodes for the endpoint it calls.
    if (req.prompt.api !== api)
      throw new Error(`a prompt encoded for ${req.prompt.api} sent to an ${api} endpoint`);
    const started = performance.now();
    // A run passes one signal to all its calls, and the SDK adds an abort listener to the
    // signal it is given without ever removing it: each call gets its own, linked here and
    // unlinked when the call ends, so a long run does not pile up listeners on its signal.
    const call = new AbortController();
    const onAbort = () => call.abort(req.signal.reason);
    if (req.signal.aborted) onAbort();
    else req.signal.addEventListener("abort", onAbort, { once: true });
    try {
      const read = { idleMs: opts.timeoutMs, onText: req.onText };
      // The bytes as they are, for every attempt (Anthropic's SDK passes a byte body through too).
      const { message, usage, model, finishReason } =
        api === "anthropic"
          ? await streamMessage(anthropic(endpoint), body, call, read)
          : await streamCompletion(openai(endpoint), body, call, read);
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
      throw llmError(err, req.signal, endpoint.apiKey);
    } finally {
      req.signal.removeEventListener("abort", onAbort);
    }
  };
}

/** The messages as sent, masked; their JSON is what the fingerprint is of, whichever API they go to. */
function maskMessages(prompt: Prompt) {
  const counts: MaskCounts = {};
  const messages = maskDeep(
    prompt.jsonMode
      ? [...prompt.messages, { role: "system", content: JSON_MODE_INSTRUCTIONS }]
      : prompt.messages,
    counts,
  ) as ChatCompletionMessageParam[];
  const json = JSON.stringify(messages);
  return {
    messages,
    json,
    fingerprint: fingerprintJson(json),
    ...(Object.keys(counts).length && { masked: counts }),
  };
}

/**
 * The user message's stable part and its cuts once masked: masking changes lengths, and a
 * secret cannot straddle the part's end (a blank line and a heading follow it) or a cut
 * (before a newline, between two log entries).
 */
function stableOf(prompt: Prompt, sent: ChatCompletionMessageParam[]): StablePart | undefined {
  const user = prompt.messages.find((m) => m.role === "user");
  if (prompt.stableChars === undefined || typeof user?.content !== "string") return undefined;
  const text = user.content;
  // Nothing masked (the usual case): the offsets are the sent text's as they are.
  const same = sent.find((m) => m.role === "user")?.content === text;
  const masked = (at: number) => (same ? at : maskText(text.slice(0, at)).length);
  return {
    chars: masked(prompt.stableChars),
    ...(prompt.stableCuts && { cuts: prompt.stableCuts.map(masked) }),
    ...(prompt.stableWindow !== undefined && { window: masked(prompt.stableWindow) }),
    ...(prompt.stableBefore !== undefined && { before: masked(prompt.stableBefore) }),
  };
}

/**
 * Masks, fingerprints and encodes a prompt, once, for the API it goes to (apiOf): a call
 * waiting on the model then holds its bytes (one byte a character, where the messages'
 * strings take two as soon as one character is beyond Latin-1, as a page's breadcrumb is),
 * not the messages, and the JSON of the messages is made once for the fingerprint and the
 * OpenAI body alike. Anthropic's body is the same messages reshaped (llm-anthropic-body.ts).
 */
export function encodePrompt(prompt: Prompt, api: Api = "openai"): EncodedPrompt {
  const { messages, json, fingerprint, masked } = maskMessages(prompt);
  const tools = prompt.jsonMode || prompt.noTools ? undefined : (prompt.tools ?? TOOLS);
  if (api === "anthropic")
    return {
      api,
      model: prompt.model,
      body: Buffer.from(
        JSON.stringify(anthropicBody(prompt.model, messages, tools, stableOf(prompt, messages))),
      ),
      fingerprint,
      ...(masked && { masked }),
    };
  const rest =
    prompt.jsonMode || prompt.noTools
      ? `"response_format":{"type":"json_object"}`
      : `"tools":${toolsJson(tools ?? TOOLS)},"tool_choice":"auto",${ONE_TOOL_CALL}`;
  const hints = cacheHintsFor(prompt.model);
  const sent = hints === "breakpoints" ? messagesWithBreakpoints(messages, stableOf(prompt, messages)) : json;
  const cache = cacheFields(hints, prompt.cacheKey);
  return {
    api,
    model: prompt.model,
    body: Buffer.from(
      `{"model":${JSON.stringify(prompt.model)},"messages":${sent},${rest},${STREAM_FIELDS}${cache}}`,
    ),
    fingerprint,
    ...(masked && { masked }),
  };
}
