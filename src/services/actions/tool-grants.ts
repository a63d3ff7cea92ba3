// An owner granting an agent one connected tool, beside the built-in actions on its settings
// page: the same three levels, stored in the same lists (`capabilities`, `requires_approval`)
// under the tool's name, `<connection>__<tool>`, so rules, approvals, the backtest and the
// run's trace treat a tool as they treat an action. A tool that does not say it only reads
// (`readOnlyHint`), or says it destroys (`destructiveHint`), starts as "after your approval".
import { z } from "zod";
import { NotFoundError } from "../../lib/errors.ts";
import { offeredTools } from "../agents/policy/tool-grants.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { LEVELS, peopleOnly, saveConfig } from "./agent-settings.ts";

const without = (list: unknown, name: string) =>
  (Array.isArray(list) ? list.map(String) : []).filter((entry) => entry !== name);

export const setToolLevel = defineAction({
  name: "set_tool_level",
  needs: ["agent"],
  description: "Choose whether it may call one connected tool, and whether each call waits for your approval",
  params: z.object({
    tool: z.string().max(64).meta({ label: "Tool", pickedBeside: true }),
    level: z
      .enum(LEVELS)
      .optional()
      .meta({
        label: "It may call it",
        optionLabels: { off: "Not allowed", on: "Allowed", approval: "Allowed, after your approval" },
      })
      .describe("absent: granted as the tool's annotations say (after your approval unless it only reads)"),
  }),
  writes: true,
  confirmRecent: true,
  audience: toAgentManagers("setting"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const tool = (await offeredTools(ctx.tx, agent)).find((offered) => offered.name === params.tool);
    if (!tool)
      throw new NotFoundError(
        `No tool \`${params.tool}\` among the connections @${agent.handle}'s owner can grant from`,
      );
    const level = params.level ?? (tool.readOnly ? "on" : "approval");
    const location = await saveConfig(ctx, agent, (config) => {
      const capabilities = without(config.capabilities, tool.name);
      const approval = without(config.requires_approval, tool.name);
      config.capabilities = level === "off" ? capabilities : [...capabilities, tool.name];
      config.requires_approval = level === "approval" ? [...approval, tool.name] : approval;
    });
    const said = { off: "not allowed", on: "allowed", approval: "allowed after your approval" }[level];
    return { status: 200, location, notice: `${tool.name}: ${said}` };
  },
});
