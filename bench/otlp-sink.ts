// A local OTLP/HTTP receiver for the agent-run benchmark (BENCH_TRACES=1): takes what the
// worker's exporter POSTs to /v1/traces (JSON) as a collector on the same machine would,
// and counts spans and bytes, so tracing's cost is measured with its export included.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export async function startSink() {
  const seen = { requests: 0, bytes: 0, spans: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      seen.requests += 1;
      seen.bytes += body.length;
      const parsed = JSON.parse(body.toString("utf8")) as {
        resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[];
      };
      for (const rs of parsed.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) seen.spans += ss.spans?.length ?? 0;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((r) => server.close(r)),
  };
}
