// /metrics, for the web server (plugins/metrics.ts) and the worker (its own small listener,
// started only when METRICS_PORT is set). Not public: a scrape sends
// `Authorization: Bearer <METRICS_TOKEN>`; without METRICS_TOKEN there is no endpoint at all.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { registry } from "../metrics/metrics.ts";
import { sameToken } from "./csrf.ts";

export interface Scrape {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The answer to a scrape sending `authorization`, when the endpoint is on (`token` set). */
export async function scrape(token: string, authorization: string | undefined): Promise<Scrape> {
  const sent = /^Bearer\s+(\S+)$/i.exec(authorization ?? "")?.[1];
  if (!sent || !sameToken(sent, token))
    return {
      status: 401,
      headers: { "content-type": "text/plain; charset=utf-8", "www-authenticate": 'Bearer realm="metrics"' },
      body: "Send Authorization: Bearer <METRICS_TOKEN>.\n",
    };
  return { status: 200, headers: { "content-type": registry.contentType }, body: await registry.metrics() };
}

/** The worker's listener: GET /metrics and nothing else. */
export async function serveMetrics(o: { host: string; port: number; token: string }): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("Only GET /metrics here.\n");
      return;
    }
    scrape(o.token, req.headers.authorization).then(
      (s) => res.writeHead(s.status, s.headers).end(s.body),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  return server;
}

export const portOf = (server: Server) => (server.address() as AddressInfo).port;
