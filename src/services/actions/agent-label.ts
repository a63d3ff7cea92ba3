// Clearing an agent's label (what its tokens and MCP sessions have read, agents/policy/labels.ts
// agentTokenFlow): a manager's decision that what it read may go wherever it writes with
// them, unreviewed. Worded as that decision, like editing its scratchpad.
import { z } from "zod";
import { emit } from "../events.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { managersOnly } from "./managers-only.ts";

const onlyManagers = managersOnly("clear what it read");

export const clearAgentLabel = defineAction({
  name: "clear_agent_label",
  needs: ["agent"],
  description:
    "Forget what its tokens and MCP sessions have read: what they write next is no longer held for your review, even if it repeats what they read",
  destructive:
    "This is your decision to disclose: whatever its tokens read (the places listed above) may then be written, unreviewed, anywhere its tokens write.",
  params: z.object({}),
  writes: true,
  audience: toAgentManagers("label"),
  available: onlyManagers,
  async execute(ctx, _params, scope) {
    const { agent } = scope;
    // Every token's too: a token's own label would bring it back (agentTokenFlow merges both).
    await ctx.tx.$executeRaw`UPDATE users SET agent_label = '[]' WHERE id = ${agent.id}`;
    await ctx.tx.$executeRaw`UPDATE api_tokens SET label = '[]' WHERE user_id = ${agent.id}`;
    await emit(ctx, { type: "agent_label.cleared", subjectType: "user", subjectId: agent.id });
    return {
      status: 200,
      location: `/subagents/${agent.handle}/memory`,
      notice: `Cleared: what @${agent.handle}'s tokens read no longer holds what they write`,
    };
  },
});
