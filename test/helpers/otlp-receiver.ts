// A real OTLP/HTTP receiver in the test process: a node http server taking what the SDK's
// exporter POSTs to /v1/traces (OTLP JSON), keeping each body as received and decoding its
// spans. It can be stopped (connections cut, port closed) and started again on its port.
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string }[];
  status: { code?: number };
  service: string;
}

const anyValue = (v: AnyValue): unknown =>
  v.stringValue ??
  (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
  v.doubleValue ??
  v.boolValue ??
  v.arrayValue?.values?.map(anyValue);

const attrs = (kvs: KeyValue[] | undefined) =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, anyValue(kv.value)]));

interface Payload {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: { spans?: Record<string, unknown>[] }[];
  }[];
}

function decode(body: Payload): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const service = String(attrs(rs.resource?.attributes)["service.name"] ?? "");
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId as string,
        spanId: s.spanId as string,
        parentSpanId: (s.parentSpanId as string) || undefined,
        name: s.name as string,
        kind: s.kind as number,
        attributes: attrs(s.attributes as KeyValue[]),
        events: ((s.events as { name: string; attributes?: KeyValue[] }[]) ?? []).map((e) => ({
          name: e.name,
          attributes: attrs(e.attributes),
        })),
        links: ((s.links as { traceId: string; spanId: string }[]) ?? []).map((l) => ({
          traceId: l.traceId,
          spanId: l.spanId,
        })),
        status: (s.status as { code?: number }) ?? {},
        service,
      })),
    );
  });
}

export interface OtlpReceiver {
  url: string;
  /** Every body as received, raw: what the leak test greps. */
  bodies: string[];
  /** The headers of each export. */
  headers: Record<string, string | string[] | undefined>[];
  spans: ReceivedSpan[];
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startReceiver(): Promise<OtlpReceiver> {
  const bodies: string[] = [];
  const headers: OtlpReceiver["headers"] = [];
  const spans: ReceivedSpan[] = [];
  const sockets = new Set<Socket>();
  let port = 0;
  let server: Server | null = null;

  const listen = async () => {
    const s = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        if (req.method !== "POST" || req.url !== "/v1/traces") {
          res.writeHead(404).end();
          return;
        }
        bodies.push(text);
        headers.push(req.headers);
        spans.push(...decode(JSON.parse(text) as Payload));
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    s.on("connection", (c) => {
      sockets.add(c);
      c.on("close", () => sockets.delete(c));
    });
    await new Promise<void>((r) => s.listen(port, "127.0.0.1", r));
    port = (s.address() as AddressInfo).port;
    server = s;
  };
  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    headers,
    spans,
    async stop() {
      const s = server;
      server = null;
      if (!s) return;
      for (const c of sockets) c.destroy();
      await new Promise((r) => s.close(r));
    },
    start: listen,
  };
}

/** The spans of one trace, by name. */
export const named = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
