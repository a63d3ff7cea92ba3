// An agent calling a tool of a connected MCP server, in a run: one action through the same
// pipeline as every other (the guard, the policy judging it as the tool it calls, the
// transaction that records its step, resources and audit event), then the call itself once
// that transaction has committed (`afterCommit`): a retried job finds the step recorded and
// never calls again, so a call reaches its server at most once. A server that fails, refuses
// or is slow gives the tool's result, which the run reads as a page; it never fails the run.
import { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.ts";
import { ForbiddenError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { capabilityDenial } from "../agents/policy/capabilities.ts";
import { judgedConfig } from "../agents/policy/policy.ts";
import { resultSource, type ToolResolution, toolForRun } from "../agents/policy/tool-grants.ts";
import { emit } from "../events.ts";
import type { ActionCtx, ActionOutcome, Ctx, WriteAudience } from "../registry/types.ts";
import { defineAction } from "../registry/types.ts";
import { callTool } from "../tools/index.ts";

/** The page a run calls its tools on, and where a call's result is read. */
export const TOOLS_PATH = "/tools";
export const callPath = (id: string) => `${TOOLS_PATH}?call=${id}`;

let timeoutMs = 30_000;

/** How long a call may take before its result is "timed out" (TOOL_CALL_TIMEOUT_MS, set at start). */
export function configureToolCalls(config: { TOOL_CALL_TIMEOUT_MS: number }) {
  timeoutMs = config.TOOL_CALL_TIMEOUT_MS;
}

const params = z.object({
  tool: z.string().max(64).describe("the tool's name, <connection>__<tool>"),
  arguments: z
    .record(z.string(), z.unknown())
    .default({})
    .describe("the tool's arguments, as its input schema says"),
});
type Params = z.infer<typeof params>;

// The policy and the action read the same resolution: one per call (the registry hands both
// the same params object).
const resolutions = new WeakMap<object, Promise<ToolResolution>>();

function resolve(ctx: ActionCtx, sent: Params): Promise<ToolResolution> {
  let resolution = resolutions.get(sent);
  if (!resolution) {
    resolution = resolveNow(ctx, sent.tool);
    resolutions.set(sent, resolution);
  }
  return resolution;
}

/** Granted (capabilities.ts, as for any action), then where the call may go (tool-grants.ts). */
async function resolveNow(ctx: ActionCtx, name: string): Promise<ToolResolution> {
  // First: an agent's token outside a run hears this, not whether the tool is granted.
  if (!ctx.run) return { refused: NOT_IN_A_RUN };
  const runId = ctx.run.id;
  const [agent, run] = await Promise.all([
    ctx.tx.user.findUniqueOrThrow({
      where: { id: ctx.actor.id },
      select: { id: true, tenantId: true, parentId: true, ownerStudioId: true, agentConfig: true },
    }),
    ctx.tx.subagentTaskRun.findUnique({ where: { id: runId }, select: { viewerIds: true } }),
  ]);
  const granted = judgedConfig(ctx, agent.agentConfig).capabilities;
  const denial = capabilityDenial(name, granted);
  if (denial) return { refused: denial };
  // The viewers as the run's row keeps them: an approved call, run later outside the run's
  // own context, goes where the run's call would have gone.
  return toolForRun(ctx.tx, agent, name, run?.viewerIds ?? []);
}

/** A call writes to whoever can read its connection's server; the policy uses the call's own (standsFor). */
const toConnection: WriteAudience = {
  what: "tool call",
  to: () => ({ outside: true }),
};

const NOT_IN_A_RUN = "an agent calls its tools only in its runs, where what it has read is known";

// Only agents call tools. An agent outside a run may still send a call (its params are
// checked like any action's) and hears why it is refused (resolveNow).
const agentsOnly = (ctx: Ctx) =>
  ctx.actor.kind === "subagent"
    ? null
    : "agents call their tools in their runs; a connection's own page tests one";

export const callToolAction = defineAction({
  name: "call_tool",
  description: "Call a tool of a connected service (typed as <connection>__<tool> in a run)",
  params,
  writes: true,
  audience: toConnection,
  available: agentsOnly,
  async standsFor(ctx, sent) {
    const resolution = await resolve(ctx, sent);
    if ("refused" in resolution)
      return { name: sent.tool, params: sent.arguments, refused: resolution.refused };
    const { tool } = resolution;
    return {
      name: sent.tool,
      params: sent.arguments,
      audience: tool.audience,
      what: tool.what,
      where: tool.where,
      ...(tool.review && { review: tool.review }),
    };
  },
  async execute(ctx, sent) {
    // Again here: an approved call skips the policy, never this.
    const resolution = await resolve(ctx, sent);
    if ("refused" in resolution) throw new ForbiddenError(resolution.refused);
    const { tool } = resolution;
    const id = newId();
    const server = new URL(tool.connection.url).host;
    await ctx.tx.toolCall.create({
      data: {
        id,
        tenantId: ctx.tenant.id,
        agentId: ctx.actor.id,
        runId: ctx.run?.id ?? null,
        connectionId: tool.connection.id,
        connectionName: tool.connection.name,
        tool: tool.name,
        server,
        arguments: sent.arguments as Prisma.InputJsonValue,
        source: (resultSource(tool.connection) ?? undefined) as Prisma.InputJsonValue | undefined,
      },
    });
    await emit(ctx, {
      type: "tool.called",
      subjectType: "tool_call",
      subjectId: id,
      payload: { tool: tool.name, server },
    });
    const location = callPath(id);
    const outcome: ActionOutcome = {
      status: 200,
      location,
      notice: `Called ${tool.name} on ${server}`,
      recorded: { toolCall: id, server },
    };
    outcome.afterCommit = () => callOut(ctx, id, tool, sent.arguments, location);
    return outcome;
  },
});

/** The call itself, once its record committed; its result (or why there is none) written to that record. */
async function callOut(
  ctx: ActionCtx,
  id: string,
  tool: Extract<ToolResolution, { tool: unknown }>["tool"],
  args: Record<string, unknown>,
  location: string,
): Promise<ActionOutcome> {
  const started = performance.now();
  const result = await callTool(ctx.db, tool.connection, tool.definition.name, args, { timeoutMs });
  const status = !result.ok ? "failed" : result.isError ? "error" : "done";
  await ctx.db.toolCall.updateMany({
    where: { id, status: { in: ["calling", "interrupted"] } },
    data: {
      status,
      result: result.text,
      durationMs: Math.round(performance.now() - started),
      finishedAt: new Date(),
    },
  });
  const said =
    status === "done"
      ? "the server answered"
      : status === "error"
        ? "the tool answered with an error"
        : "it could not be called";
  return { status: 200, location, notice: `Called ${tool.name}: ${said} (the result is below)` };
}
