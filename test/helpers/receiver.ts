// A real HTTP server that receives outgoing webhooks: it records each request (headers and
// the raw body) and answers with the status the test sets.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Hit {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  hits: Hit[];
  /** The status to answer with from now on (default 200). */
  answer(status: number): void;
  close(): Promise<void>;
}

/** `host`: the loopback address to listen on (127.0.0.2: a host that is not the app's). */
export async function startReceiver(host = "127.0.0.1"): Promise<Receiver> {
  const hits: Hit[] = [];
  let status = 200;
  const srv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() });
      res.writeHead(status, { "content-type": "text/plain" }).end(status < 300 ? "ok" : "receiver says no");
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, host, resolve));
  return {
    url: `http://${host}:${(srv.address() as AddressInfo).port}/hook`,
    hits,
    answer: (s) => {
      status = s;
    },
    close: () => new Promise<void>((resolve) => srv.close(() => resolve())),
  };
}
