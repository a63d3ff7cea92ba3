// The MCP SDK's own client against the app on a real port. Node's fetch cannot send a Host
// header and Node does not resolve `*.localhost`, so the client's fetch is a small one over
// node:http that connects to 127.0.0.1 and names the tenant's host.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FastifyInstance } from "fastify";
import type { World } from "./app.ts";

export function hostFetch(host: string, port: number) {
  return (url: string | URL, init: RequestInit = {}): Promise<Response> =>
    new Promise((resolve, reject) => {
      const u = new URL(url);
      const headers: Record<string, string> = { host };
      new Headers(init.headers).forEach((v, k) => {
        headers[k] = v;
      });
      const req = http.request(
        { host: "127.0.0.1", port, path: `${u.pathname}${u.search}`, method: init.method ?? "GET", headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers))
              if (typeof v === "string") h.set(k, v);
              else if (Array.isArray(v)) for (const x of v) h.append(k, x);
            const body = res.statusCode === 204 || res.statusCode === 304 ? null : Buffer.concat(chunks);
            resolve(new Response(body, { status: res.statusCode, headers: h }));
          });
        },
      );
      req.on("error", reject);
      init.signal?.addEventListener("abort", () => req.destroy(new Error("aborted")));
      if (init.body)
        req.write(typeof init.body === "string" ? init.body : Buffer.from(init.body as ArrayBuffer));
      req.end();
    });
}

/** The port the app listens on (it must be listening). */
export const portOf = (app: FastifyInstance) => (app.server.address() as AddressInfo).port;

/** A connected MCP client for `world`, authenticated with `token`. */
export async function mcpClient(app: FastifyInstance, w: World, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`http://${w.host}/mcp`), {
    fetch: hostFetch(w.host, portOf(app)),
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "cadre-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}
