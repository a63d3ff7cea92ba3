// The workspace as MCP tools, generated from the registry, never a second list: `read_page`
// and one tool per action, its params' JSON Schema from the action's zod schema plus the
// `page` it is called on. A call goes through the in-process markdown API (readPage,
// runAction): the same resolve, guard, policy, approvals and transaction as every other path,
// so an MCP client gets the answers, refusals and "queued for approval" the HTTP API gives.
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { isTransient } from "../../lib/transient.ts";
import { agentConfig, tenantSettings } from "../agents/core/settings.ts";
import { usableBy } from "../agents/policy/capabilities.ts";
import { paramsJsonSchema } from "../registry/json-schema.ts";
import { scopeDenial } from "../registry/token-scope.ts";
import type { ActionDef, Ctx } from "../registry/types.ts";
import { registry } from "./catalog.ts";
import { readPage, runAction } from "./markdown-api.ts";

export const READ_PAGE = "read_page";

const readPageTool: Tool = {
  name: READ_PAGE,
  title: "Read a page",
  description:
    "Read a Cadre page as markdown: its content and, under `## Actions`, the actions you can call on it (each is also a tool here, called with this page's path as `page`). Start at /whoami.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", description: "the page's path, e.g. /whoami or /studios/general" },
    },
    required: ["path"],
  },
  annotations: { readOnlyHint: true },
};

/** The pages an action is listed on, as patterns: where a client can call it. */
function pagesOf(a: ActionDef): string[] {
  return registry.pages.filter((p) => p.actions.includes(a.name)).map((p) => p.pattern);
}

// Pages and schemas are fixed at start: each action's tool is built once, not per tools/list.
const built = new WeakMap<ActionDef, Tool>();

function actionTool(a: ActionDef): Tool {
  const ready = built.get(a);
  if (ready) return ready;
  const params = paramsJsonSchema(a);
  const where = pagesOf(a);
  const tool: Tool = {
    name: a.name,
    description: `${a.description}. Call it on the page that lists it (${where.join(", ")}); read that page first for its current choices.`,
    inputSchema: {
      ...params,
      type: "object",
      properties: {
        page: { type: "string", description: `the path of the page it is called on, e.g. ${where[0]}` },
        ...params.properties,
      },
      required: ["page", ...(params.required ?? [])],
    },
    annotations: { readOnlyHint: !a.writes },
  };
  built.set(a, tool);
  return tool;
}

/** What the actor may call: every action its token's scope allows, and for a subagent's, the ones its capabilities grant. */
export async function mcpTools(ctx: Ctx): Promise<Tool[]> {
  const actions = [...registry.actions.values()].filter((a) => pagesOf(a).length && !scopeDenial(ctx, a));
  if (ctx.actor.kind !== "subagent") return [readPageTool, ...actions.map(actionTool)];
  const agent = await ctx.db.user.findUniqueOrThrow({
    where: { id: ctx.actor.id },
    select: { agentConfig: true },
  });
  const granted = agentConfig(agent).capabilities;
  return [readPageTool, ...usableBy(actions, granted, tenantSettings(ctx.tenant).human_only).map(actionTool)];
}

const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: "text", text: t }],
  isError,
});

/**
 * What a call did, for the audit trail: the page it read or acted on, the action, and the
 * tool's own outcome as the markdown API would have answered it (200, 201, 202 queued for
 * approval, 400, 403, 404, 409…), not the /mcp POST's 200 that carries every answer.
 */
export interface McpCall {
  tool: string;
  page?: string;
  action?: string;
  status?: number;
}

export async function callMcpTool(
  ctx: Ctx,
  name: string,
  args: Record<string, unknown>,
  record: (call: McpCall) => void,
): Promise<CallToolResult> {
  const target = typeof (name === READ_PAGE ? args.path : args.page) === "string";
  if (!target) {
    record({ tool: name, status: 400 });
    return text(`\`${name === READ_PAGE ? "path" : "page"}\`: required, the page's path`, true);
  }
  try {
    if (name === READ_PAGE) {
      const path = args.path as string;
      record({ tool: name, page: path });
      const page = await readPage(ctx, path);
      record({ tool: name, status: page.status });
      return text(page.markdown, page.status !== 200);
    }
    if (!registry.actions.has(name)) {
      record({ tool: name, status: 404 });
      return text(`No tool \`${name}\`: list the tools, or read a page.`, true);
    }
    const { page: path, ...params } = args as { page: string } & Record<string, unknown>;
    record({ tool: name, page: path, action: name });
    const r = await runAction(ctx, path, name, params);
    record({ tool: name, status: r.ok ? r.outcome.status : r.status });
    if (!r.ok) return text(r.markdown, true);
    const head = [r.outcome.notice, `→ ${r.outcome.location}`].filter(Boolean).join("\n");
    return text(`${head}\n\n${r.page.markdown}`);
  } catch (err) {
    // A passing fault wrote nothing (the action's transaction rolled back): say so as a tool error.
    if (isTransient(err)) {
      record({ tool: name, status: 503 });
      return text("The workspace is busy for a moment and nothing was done: call again.", true);
    }
    throw err;
  }
}
