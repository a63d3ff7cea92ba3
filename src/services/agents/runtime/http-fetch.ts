// A `fetch` for the openai SDK over node:http(s) with keep-alive agents. The global fetch
// builds web streams for every request and response: measured on the worker's hot path it
// cost 1.13 ms of CPU per chat completion through the SDK, against 0.61 ms with this one,
// and an agent step makes one call. Completions are small JSON bodies, so the response is
// buffered whole before it resolves (which also puts the body under the SDK's timeout). A
// streamed reply (server-sent events, llm-stream.ts) resolves at its headers instead, its
// body the socket's own stream: the SDK iterates any async-iterable body as it comes,
// without a web stream in between.
import http from "node:http";
import https from "node:https";

export type Agents = Record<"http:" | "https:", http.Agent>;

/**
 * Keep-alive agents with at most `maxSockets` connections per endpoint (host and port):
 * by default none, so a worker's calls never queue behind a socket limit it did not ask
 * for (a limit of 512 once made 1,000 waiting runs take two rounds per step).
 */
export const agentsFor = (maxSockets = Infinity): Agents => ({
  "http:": new http.Agent({ keepAlive: true, maxSockets }),
  "https:": new https.Agent({ keepAlive: true, maxSockets }),
});

const abortError = (signal: AbortSignal) =>
  signal.reason instanceof Error && signal.reason.name === "AbortError"
    ? signal.reason
    : new DOMException("This operation was aborted", "AbortError");

function bodyOf(body: RequestInit["body"]): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError("nodeFetch sends only string or byte bodies");
}

/**
 * A Response over a body already buffered: its text() and json() read the buffer. A
 * Response built with a body wraps it in a web stream and reads it back through one, which
 * cost as much again as the rest of the response's handling; the SDK only reads bodies
 * whole. `body` (the stream) is null and blob() is empty: this fetch is not for streaming.
 */
class BufferedResponse extends Response {
  // Fields, not methods: the DOM typings declare Response's readers as properties.
  override readonly text: () => Promise<string>;
  override readonly json: () => Promise<unknown>;
  override readonly arrayBuffer: () => Promise<ArrayBuffer>;

  constructor(buffer: Buffer, init: ResponseInit) {
    super(null, init);
    this.text = async () => buffer.toString("utf8");
    this.json = async () => JSON.parse(buffer.toString("utf8"));
    this.arrayBuffer = async () =>
      buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;
  }
}

/** A streamed reply: its body is the node response itself (async-iterable bytes), read once by the SDK. */
class StreamedResponse extends Response {
  constructor(res: http.IncomingMessage, init: ResponseInit) {
    super(null, init);
    // Own properties over the prototype's getters (the typings call them fields).
    Object.defineProperty(this, "body", { value: res });
    Object.defineProperty(this, "bodyUsed", { get: () => res.readableEnded });
  }
}

/** A reply's headers as name/value pairs, repeated ones kept (a Headers or a Response takes them). */
export const headerPairs = (res: http.IncomingMessage) => {
  const raw = res.rawHeaders;
  const headers: [string, string][] = [];
  for (let index = 0; index + 1 < raw.length; index += 2) headers.push([raw[index]!, raw[index + 1]!]);
  return headers;
};

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * A fetch over agents of its own, with at most `maxConnections` per endpoint (LLM_MAX_CONNECTIONS),
 * or over `agents` shared with another client (llm-http.ts), so the limit holds across both.
 */
export function createNodeFetch(maxConnections?: number, agents = agentsFor(maxConnections)): Fetch {
  return (input, init) => send(agents, input, init);
}

/** A fetch without a connection limit. */
export const nodeFetch: Fetch = createNodeFetch();

function send(agents: Agents, input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const agent = agents[url.protocol as keyof Agents];
    if (!agent) return reject(new TypeError(`fetch failed: unsupported protocol ${url.protocol}`));
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return reject(abortError(signal));
    const body = bodyOf(init.body);
    const headers: Record<string, string> = {};
    (init.headers instanceof Headers ? init.headers : new Headers(init.headers)).forEach((value, name) => {
      headers[name] = value;
    });
    if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));

    const onAbort = () => {
      req.destroy();
      reject(abortError(signal!));
    };
    const fail = (cause: unknown) => {
      signal?.removeEventListener("abort", onAbort);
      reject(new TypeError("fetch failed", { cause }));
    };
    const mod = url.protocol === "https:" ? https : http;
    const req = mod.request(url, { method: init.method ?? "GET", headers, agent }, (res) => {
      const status = res.statusCode ?? 502;
      if (status < 300 && res.headers["content-type"]?.startsWith("text/event-stream")) {
        // An abort still destroys the request (and so ends this body) until the body ends.
        res.once("close", () => signal?.removeEventListener("abort", onAbort));
        resolve(
          new StreamedResponse(res, { status, statusText: res.statusMessage, headers: headerPairs(res) }),
        );
        return;
      }
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", fail);
      res.on("end", () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(
          new BufferedResponse(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), {
            status,
            statusText: res.statusMessage,
            headers: headerPairs(res),
          }),
        );
      });
    });
    req.on("error", fail);
    signal?.addEventListener("abort", onAbort, { once: true });
    req.end(body);
  });
}
