// A `fetch` for the openai SDK over node:http(s) with keep-alive agents. The global fetch
// builds web streams for every request and response: measured on the worker's hot path it
// cost 1.13 ms of CPU per chat completion through the SDK, against 0.61 ms with this one,
// and an agent step makes one call. Completions are small JSON bodies, so the response is
// buffered whole before it resolves (which also puts the body under the SDK's timeout).
import http from "node:http";
import https from "node:https";

const agents = {
  "http:": new http.Agent({ keepAlive: true, maxSockets: 512 }),
  "https:": new https.Agent({ keepAlive: true, maxSockets: 512 }),
};

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

/** No body for these statuses (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 204, 205, 304]);

export function nodeFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const url = new URL(input instanceof Request ? input.url : input);
    const agent = agents[url.protocol as keyof typeof agents];
    if (!agent) return reject(new TypeError(`fetch failed: unsupported protocol ${url.protocol}`));
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return reject(abortError(signal));
    const body = bodyOf(init.body);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => {
      headers[k] = v;
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
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", fail);
      res.on("end", () => {
        signal?.removeEventListener("abort", onAbort);
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers))
          if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(", ") : v);
        const status = res.statusCode ?? 502;
        resolve(
          new Response(NULL_BODY.has(status) ? null : Buffer.concat(chunks), {
            status,
            statusText: res.statusMessage,
            headers: h,
          }),
        );
      });
    });
    req.on("error", fail);
    signal?.addEventListener("abort", onAbort, { once: true });
    req.end(body);
  });
}
