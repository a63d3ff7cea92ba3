// The "Connected tools" part of an agent's settings page: each tool its owner can grant it
// from their own and their studios' connections, with its level and the form beside it, and
// what is not offered and why (a changed definition waits for its connection's owner).
import { levelOf } from "../actions/agent-settings.ts";
import type { AgentConfig } from "../agents/core/settings.ts";
import { type OfferedTool, offeredTools } from "../agents/policy/tool-grants.ts";
import { mdEscape } from "../registry/markdown.ts";
import type { AgentScope, Block, PageCtx } from "../registry/types.ts";
import { excerpt } from "./format.ts";

const LEVEL_WORDS = { off: "not allowed", on: "allowed", approval: "allowed after your approval" };
const AUDIENCE_WORDS = {
  owner: "its owner's own account",
  studio: "the studio's",
  outside: "outside the workspace",
} as const;

function toolLine(tool: OfferedTool, config: AgentConfig): string {
  const level = levelOf(config, tool.name);
  const description = excerpt(tool.definition.description, 160);
  const notes = [
    `${mdEscape(tool.connection.name)}, ${AUDIENCE_WORDS[tool.connection.audience]}`,
    tool.readOnly ? "only reads" : "may change things: starts as after your approval",
    ...(tool.changed
      ? ["**changed since it was allowed: refused until its connection's owner reviews it**"]
      : []),
  ];
  return `- \`${tool.name}\` — ${mdEscape(description)} (${notes.join("; ")}): **${LEVEL_WORDS[level]}**`;
}

export async function connectedToolBlocks(
  ctx: PageCtx,
  agent: AgentScope,
  config: AgentConfig,
): Promise<Block[]> {
  const tools = await offeredTools(ctx.db, agent);
  const intro =
    "## Connected tools\n\nTools of the MCP servers its owner (or its studio) connected. A call sends its arguments to that server and is judged like an action: the levels here, then the rules below (name a tool as the rule's action), then what its run has read (a call to a server outside the workspace after reading a studio waits for you).";
  if (!tools.length)
    return [{ md: `${intro}\n\n_No connected tools to grant: connect a server on your settings first._` }];
  return [
    { md: `${intro}\n\n${tools.map((tool) => toolLine(tool, config)).join("\n")}` },
    ...tools.map(
      (tool): Block =>
        levelOf(config, tool.name) === "off"
          ? {
              form: {
                action: "set_tool_level",
                fixed: { tool: tool.name },
                fields: [],
                label: `Grant ${tool.name}`,
              },
            }
          : {
              form: {
                action: "set_tool_level",
                fixed: { tool: tool.name },
                fields: ["level"],
                values: { level: levelOf(config, tool.name) },
                label: `Save ${tool.name}`,
              },
            },
    ),
  ];
}
