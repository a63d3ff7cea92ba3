// The OpenAI-compatible chat call over node:http(s), without the openai SDK's request path:
// the SDK built a Headers object, a Request, its web-stream shims and a logger's details for
// every call, and that was a large part of the worker's CPU per step. What it guaranteed
// stays, each rule as the SDK 6.x has it (client.js makeRequest / shouldRetry / retryRequest):
// - 408, 409, 429 and 5xx, and network errors and timeouts, are retried up to `maxRetries`
//   times, `x-should-retry: true|false` overriding the status;
// - the wait is `retry-after-ms`, else `retry-after` (seconds or an HTTP date) when under a
//   minute, else 0.5 s doubling to 8 s, less up to 25 % jitter;
// - each attempt has `timeoutMs` until its headers (or its whole body, when it is not an
//   event stream); llm-stream.ts bounds the gaps of a stream;
// - failures are the SDK's own error classes (APIError.generate, APIConnectionError,
//   APIConnectionTimeoutError, APIUserAbortError), so llm-errors.ts classifies them as before.
// Unlike the SDK, a stop during a retry's wait ends the call at once, not after the wait.
// Headers: the key, the JSON body, what we accept, and the SDK's x-stainless-retry-count (no
// OS or runtime headers). Each failed attempt is an event on the call's `chat` span, as traced-fetch.ts does for the
// Anthropic path.
import http from "node:http";
import https from "node:https";
import { urlToHttpOptions } from "node:url";
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { pause } from "../../../lib/transient.ts";
import { type Agents, headerPairs } from "./http-fetch.ts";
import { callSpans } from "./traced-fetch.ts";

export interface ChatOptions {
  timeoutMs: number;
  maxRetries: number;
}

/** A reply whose status is 2xx: an event stream still to read, or a body read whole. */
export interface ChatReply {
  res: http.IncomingMessage;
  /** The body, when the reply is not an event stream (some proxies answer a streamed request in one piece). */
  body?: Buffer;
}

/** One endpoint and key: where the chat completions of a call go. Holds the key, as the SDK's client did. */
export interface ChatClient {
  readonly baseURL: string;
  /** Sends the encoded request, retried as the SDK would; aborted by `signal`, also while the body streams. */
  post(body: Buffer, signal: AbortSignal): Promise<ChatReply>;
}

/** The request options of every call to this endpoint, made once: node builds less per request. */
function target(baseURL: string, apiKey: string, agents: Agents) {
  // As the SDK joins them: one slash between the base URL and the path.
  const url = new URL(`${baseURL}${baseURL.endsWith("/") ? "" : "/"}chat/completions`);
  const agent = agents[url.protocol as keyof Agents];
  if (!agent) throw new TypeError(`unsupported protocol ${url.protocol}`);
  const headers = {
    authorization: `Bearer ${apiKey}`,
    "content-type": "application/json",
    accept: "text/event-stream, application/json",
  };
  return {
    request: url.protocol === "https:" ? https.request : http.request,
    options: { ...urlToHttpOptions(url), method: "POST", agent, headers },
  };
}

export function chatClient(
  endpoint: { baseURL: string; apiKey: string },
  agents: Agents,
  opts: ChatOptions,
): ChatClient {
  const requestTarget = target(endpoint.baseURL, endpoint.apiKey, agents);
  return {
    baseURL: endpoint.baseURL,
    post: (body, signal) => send(requestTarget, body, signal, opts),
  };
}

type Target = ReturnType<typeof target>;

async function send(
  requestTarget: Target,
  body: Buffer,
  signal: AbortSignal,
  opts: ChatOptions,
): Promise<ChatReply> {
  // The call's span, found by its body as traced-fetch.ts finds it (tracing.ts sets it).
  const span = callSpans.get(body);
  for (let left = opts.maxRetries; ; left--) {
    if (signal.aborted) throw new APIUserAbortError();
    let reply: ChatReply;
    try {
      reply = await attempt(requestTarget, body, signal, opts.timeoutMs, opts.maxRetries - left);
    } catch (err) {
      if (signal.aborted) throw new APIUserAbortError();
      const timedOut = err instanceof TimedOut || /timed? ?out/i.test(`${err} ${(err as Error).cause}`);
      // The names the traced fetch reported: an abort on the timer, or fetch's TypeError.
      span?.addEvent("cadre.llm.attempt_failed", { "error.type": timedOut ? "AbortError" : "TypeError" });
      if (left > 0) {
        await wait(defaultDelay(left, opts.maxRetries), signal);
        continue;
      }
      if (timedOut) throw new APIConnectionTimeoutError();
      throw new APIConnectionError({ message: undefined, cause: err as Error });
    }
    const status = reply.res.statusCode ?? 502;
    if (status >= 200 && status < 300) return reply;
    span?.addEvent("cadre.llm.attempt_failed", { "http.response.status_code": status });
    const headers = headersOf(reply.res);
    if (left > 0 && shouldRetry(status, headers)) {
      await wait(retryDelay(headers, left, opts.maxRetries), signal);
      continue;
    }
    throw statusError(status, reply.body ?? Buffer.alloc(0), headers);
  }
}

/** The SDK's error for a refused request: its class by status, its message from the body. */
function statusError(status: number, body: Buffer, headers: Headers): APIError {
  const text = body.toString("utf8");
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return APIError.generate(status, json, json ? undefined : text, headers);
}

class TimedOut extends Error {}

const EVENT_STREAM = "text/event-stream";

/**
 * One attempt: resolves at the headers of an event stream (a stop still destroys it until it
 * ends), or with the whole body of any other reply, all within `timeoutMs`.
 */
function attempt(
  t: Target,
  body: Buffer,
  signal: AbortSignal,
  timeoutMs: number,
  retry: number,
): Promise<ChatReply> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (err?: Error, reply?: ChatReply) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        signal.removeEventListener("abort", onAbort);
        req.destroy();
        reject(err);
      } else resolve(reply!);
    };
    const onAbort = () => {
      req.destroy();
      done(new APIUserAbortError());
    };
    const timer = setTimeout(() => done(new TimedOut()), timeoutMs);
    // The SDK's retry count, which providers read to tell a retry from a new request.
    const headers = { ...t.options.headers, "content-length": body.length, "x-stainless-retry-count": retry };
    const req = t.request({ ...t.options, headers }, (res) => {
      const status = res.statusCode ?? 502;
      if (status < 300 && res.headers["content-type"]?.startsWith(EVENT_STREAM)) {
        res.once("close", () => signal.removeEventListener("abort", onAbort));
        return done(undefined, { res });
      }
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", (err) => done(err));
      res.on("end", () => {
        signal.removeEventListener("abort", onAbort);
        done(undefined, { res, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
      });
    });
    req.on("error", (err) => done(err));
    signal.addEventListener("abort", onAbort, { once: true });
    req.end(body);
  });
}

const headersOf = (res: http.IncomingMessage) => new Headers(headerPairs(res));

function shouldRetry(status: number, headers: Headers): boolean {
  const said = headers.get("x-should-retry");
  if (said === "true") return true;
  if (said === "false") return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** How long the server asked us to wait, if under a minute, else the default backoff (the SDK's retryRequest). */
function retryDelay(headers: Headers, left: number, maxRetries: number): number {
  let milliseconds: number | undefined;
  const afterMs = headers.get("retry-after-milliseconds");
  if (afterMs && !Number.isNaN(Number.parseFloat(afterMs))) milliseconds = Number.parseFloat(afterMs);
  const after = headers.get("retry-after");
  if (after && !milliseconds) {
    const seconds = Number.parseFloat(after);
    milliseconds = Number.isNaN(seconds) ? Date.parse(after) - Date.now() : seconds * 1000;
  }
  return milliseconds !== undefined && milliseconds >= 0 && milliseconds < 60_000
    ? milliseconds
    : defaultDelay(left, maxRetries);
}

/** 0.5 s doubling per retry, at most 8 s, less up to 25 % jitter. */
function defaultDelay(left: number, maxRetries: number): number {
  const seconds = Math.min(0.5 * 2 ** (maxRetries - left), 8);
  return seconds * (1 - Math.random() * 0.25) * 1000;
}

/** Sleeps `ms`, or ends at once with the SDK's abort error when `signal` fires. */
async function wait(ms: number, signal: AbortSignal): Promise<void> {
  await pause(Math.max(0, ms), signal);
  if (signal.aborted) throw new APIUserAbortError();
}
