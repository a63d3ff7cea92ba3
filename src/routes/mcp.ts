// /mcp on a tenant's host: the workspace for MCP clients (Claude Desktop, Cursor, agent
// SDKs), over Streamable HTTP, stateless: each POST carries its own JSON-RPC message and is
// answered in JSON. The official SDK negotiates the protocol; the tools come from the
// registry (services/catalog/mcp-tools.ts). Authentication is the API's own Bearer token, checked on
// every request by the auth plugin: a missing or bad one gets 401 with `WWW-Authenticate`.
// The SDK's web-standard transport answers with a Response that Fastify sends, so the route
// keeps Fastify's whole lifecycle (its hooks, limits and audit) instead of hijacking the socket.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AppError, TooManyRequestsError } from "../lib/errors.ts";
import { isTransient } from "../lib/transient.ts";
import { callMcpTool, mcpTools } from "../services/catalog/mcp-tools.ts";
import type { Ctx } from "../services/registry/types.ts";
import { ctxOf } from "./page-context.ts";

const VERSION = "0.1.0";
const CHALLENGE = 'Bearer realm="cadre", error="invalid_token"';

/** A JSON-RPC error body: what an MCP client parses from any answer. */
function rpcError(reply: FastifyReply, status: number, message: string) {
  return reply
    .code(status)
    .type("application/json; charset=utf-8")
    .send({ jsonrpc: "2.0", error: { code: status === 401 ? -32001 : -32000, message }, id: null });
}

function mcpServer(ctx: Ctx, req: FastifyRequest): Server {
  const server = new Server(
    { name: "cadre", title: `Cadre: ${ctx.tenant.name}`, version: VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        "Cadre is a team workspace where every page is markdown with a list of actions. Read /whoami first, then follow links; call an action's tool with the `page` that lists it.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await mcpTools(ctx) }));
  server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
    try {
      // The audit trail (plugins/audit.ts) records the tool, the page and action it named,
      // and the tool's own outcome in place of the POST's 200.
      return await callMcpTool(ctx, params.name, params.arguments ?? {}, (call) => {
        Object.assign(req.audit, call);
      });
    } catch (err) {
      // A bug is ours to log; the client gets a tool error, never a broken session.
      req.log.error({ err, tool: params.name }, "MCP tool call failed");
      req.audit.status = 500;
      return {
        content: [{ type: "text", text: `Something went wrong on our side (request ${req.id}).` }],
        isError: true,
      };
    }
  });
  return server;
}

/** Before the CSRF check (cookie requests): /mcp takes tokens only, so anything else is a 401. */
async function tokenOnly(req: FastifyRequest, reply: FastifyReply) {
  if (req.authVia === "token") return;
  reply.header("WWW-Authenticate", 'Bearer realm="cadre"');
  return rpcError(
    reply,
    401,
    "Send an API token: Authorization: Bearer <token> (create one in your settings).",
  );
}

async function handle(req: FastifyRequest, reply: FastifyReply, manageOverMcp: boolean) {
  const ctx = ctxOf(req);
  const scope = req.tokenScope ?? "read";
  const server = mcpServer({ ...ctx, auth: { via: "token", scope, mcp: { manageOverMcp } } }, req);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers))
      if (typeof value === "string") headers.set(key, value);
      else if (Array.isArray(value)) for (const x of value) headers.append(key, x);
    const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers });
    const res = await transport.handleRequest(request, { parsedBody: req.body });
    reply.code(res.status);
    res.headers.forEach((v, k) => {
      reply.header(k, v);
    });
    return reply.send(res.body ? Buffer.from(await res.arrayBuffer()) : "");
  } finally {
    await server.close();
  }
}

/** `manage`: whether MCP clients may manage tokens and keys with a `manage` token (MCP_MANAGE_ACTIONS). */
export default async function mcpRoutes(app: FastifyInstance, opts: { manage: boolean }) {
  app.setErrorHandler(async (err: FastifyError, req, reply) => {
    if (err instanceof TooManyRequestsError) reply.header("Retry-After", String(err.retryAfterSeconds));
    if (err instanceof AppError) {
      if (err.status === 401) reply.header("WWW-Authenticate", CHALLENGE);
      return rpcError(reply, err.status, err.message);
    }
    if (isTransient(err)) {
      req.log.warn({ err }, "transient failure on /mcp, answered 503");
      reply.header("Retry-After", "2");
      return rpcError(reply, 503, "Briefly unavailable; nothing was done. Send it again in a moment.");
    }
    if (err.statusCode && err.statusCode < 500) return rpcError(reply, err.statusCode, err.message);
    req.log.error({ err }, "/mcp failed");
    return rpcError(reply, 500, `Something went wrong on our side (request ${req.id}).`);
  });
  app.post("/mcp", { onRequest: tokenOnly }, (req, reply) => handle(req, reply, opts.manage));
  // Stateless: no server-initiated stream to open and no session to end.
  for (const method of ["GET", "DELETE"] as const)
    app.route({
      method,
      url: "/mcp",
      handler: async (_req, reply) => {
        reply.header("Allow", "POST");
        return rpcError(reply, 405, "This server is stateless: POST each JSON-RPC message to /mcp.");
      },
    });
}
