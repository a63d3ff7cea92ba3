// One changed tool as its review shows it: the definition its owner allowed against the one
// its server lists now, as a line diff of the description and of the input schema, and the
// button that allows it as it is now (tools/connections.ts acceptToolChange).
import type { ToolConnection, ToolDefinition } from "../../generated/prisma/client.ts";
import { diffText, lineDiff } from "../../lib/line-diff.ts";
import { code, fenced } from "../registry/markdown.ts";
import type { Block } from "../registry/types.ts";

const schemaText = (schema: unknown) => JSON.stringify(schema ?? {}, null, 2);

export function changedToolBlocks(connection: ToolConnection, tool: ToolDefinition): Block[] {
  const pinned = tool.pinnedDefinition as { description?: string; inputSchema?: unknown } | null;
  const heading = `## ${code(`${connection.slug}__${tool.name}`)}${pinned ? "" : ": new since you allowed the others"}`;
  const description = diffText(lineDiff(pinned?.description ?? "", tool.description));
  const schema = diffText(
    lineDiff(pinned ? schemaText(pinned.inputSchema) : "", schemaText(tool.inputSchema)),
  );
  return [
    {
      md: [
        heading,
        "",
        "### Description",
        "",
        fenced(description, "diff"),
        "",
        "### Input schema",
        "",
        fenced(schema, "diff"),
      ].join("\n"),
    },
    {
      form: {
        action: "accept_tool_change",
        fixed: { id: connection.id, tool: tool.name },
        label: `Accept the change to ${tool.name}`,
      },
    },
  ];
}
