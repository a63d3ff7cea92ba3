// A real MCP server (the official SDK's McpServer over Streamable HTTP) in the test process, on
// a random loopback port: the far end of a tool connection. Stateless, a new McpServer per
// request built from the current tool list, so a test can change a description between two
// listings, hold calls, take the server down and count what reached it.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { ZodRawShape } from "zod";

export interface TestTool {
  name: string;
  description: string;
  /** A zod raw shape, as McpServer.registerTool takes it; absent: no arguments. */
  inputSchema?: ZodRawShape;
  annotations?: ToolAnnotations;
  /** What a call answers; default: the arguments echoed as JSON text. */
  handler?: (args: Record<string, unknown>) => CallToolResult | Promise<CallToolResult>;
}

export interface TestMcpServer {
  /** The Streamable HTTP endpoint (`http://127.0.0.1:<port>/mcp`). */
  url: string;
  /** Calls each tool received (counted when they arrive, before any hold). */
  calls: Map<string, number>;
  /** Requests that reached the endpoint (any method), and how many were refused for a bad token. */
  requests: { total: number; unauthorized: number };
  setDescription(tool: string, description: string): void;
  addTool(tool: TestTool): void;
  removeTool(name: string): void;
  /** Calls wait until `release()` (or the test's abort): a slow server without a timer. */
  hold(): void;
  release(): void;
  /** Resolves when the next call arrives (for a held call: once it is waiting). */
  nextCall(): Promise<string>;
  /** Down: every request answers 503 until `up()`. */
  down(): void;
  up(): void;
  close(): Promise<void>;
}

export interface McpServerOptions {
  tools: TestTool[];
  /** When set, requests without `Authorization: Bearer <token>` get 401. */
  bearer?: string;
  /** Accept a bearer token by its own check (the OAuth tests' tokens); wins over `bearer`. */
  verifyToken?: (token: string) => boolean | Promise<boolean>;
  /** The WWW-Authenticate header sent with a 401 (OAuth: the protected-resource metadata's URL). */
  challenge?: string;
  path?: string;
}

export async function startMcpServer(options: McpServerOptions): Promise<TestMcpServer> {
  const tools = new Map(options.tools.map((tool) => [tool.name, { ...tool }]));
  const calls = new Map<string, number>();
  const requests = { total: 0, unauthorized: 0 };
  const path = options.path ?? "/mcp";
  let held: Promise<void> | null = null;
  let releaseHeld = () => {};
  let isDown = false;
  const callWaiters: ((name: string) => void)[] = [];

  const build = () => {
    const server = new McpServer({ name: "test-tools", version: "1.0.0" });
    for (const tool of tools.values()) {
      server.registerTool(
        tool.name,
        { description: tool.description, inputSchema: tool.inputSchema ?? {}, annotations: tool.annotations },
        async (args: Record<string, unknown>) => {
          calls.set(tool.name, (calls.get(tool.name) ?? 0) + 1);
          for (const waiter of callWaiters.splice(0)) waiter(tool.name);
          if (held) await held;
          return tool.handler
            ? tool.handler(args)
            : { content: [{ type: "text" as const, text: JSON.stringify(args) }] };
        },
      );
    }
    return server;
  };

  const authorized = async (req: IncomingMessage) => {
    if (!options.bearer && !options.verifyToken) return true;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (!token) return false;
    return options.verifyToken ? options.verifyToken(token) : token === options.bearer;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (!req.url?.startsWith(path)) return void res.writeHead(404).end();
    requests.total++;
    if (isDown) return void res.writeHead(503).end("down");
    if (!(await authorized(req))) {
      requests.unauthorized++;
      const headers: Record<string, string> = { "content-type": "application/json" };
      headers["www-authenticate"] = options.challenge ?? 'Bearer error="invalid_token"';
      return void res.writeHead(401, headers).end(JSON.stringify({ error: "invalid_token" }));
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    const server = build();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    });
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  const { port } = http.address() as AddressInfo;

  const release = () => {
    releaseHeld();
    held = null;
  };
  return {
    url: `http://127.0.0.1:${port}${path}`,
    calls,
    requests,
    setDescription(name, description) {
      const tool = tools.get(name);
      if (!tool) throw new Error(`no test tool ${name}`);
      tool.description = description;
    },
    addTool(tool) {
      tools.set(tool.name, { ...tool });
    },
    removeTool(name) {
      tools.delete(name);
    },
    hold() {
      held ??= new Promise((resolve) => {
        releaseHeld = resolve;
      });
    },
    release,
    nextCall: () => new Promise((resolve) => callWaiters.push(resolve)),
    down() {
      isDown = true;
    },
    up() {
      isDown = false;
    },
    async close() {
      release();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
