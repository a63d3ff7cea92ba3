// A manager's corrections to an agent's scratchpad (its memory across runs): replace the
// text, or clear it; and the agent's own update_scratchpad, which keeps it itself.
import { z } from "zod";
import { emit } from "../events.ts";
import { toAgentManagers, toSelf } from "../registry/audiences.ts";
import { defineAction } from "../registry/types.ts";
import { writeScratchpad } from "../scratchpad.ts";
import { managersOnly } from "./managers-only.ts";

/** People who manage the agent; loadAgent lets only them reach the page, this says so to anyone else. */
const onlyManagers = managersOnly("correct its memory");

const memoryOf = (handle: string) => `/subagents/${handle}/memory`;

export const editScratchpad = defineAction({
  name: "edit_scratchpad",
  needs: ["agent"],
  description:
    "Replace its scratchpad with your text: it reads it at the start of every run, as your words (it may repeat them anywhere it writes)",
  params: z.object({
    text: z
      .string()
      .max(4000, "at most 4000 characters")
      .meta({ multiline: true, description: "the scratchpad's new text" }),
  }),
  writes: true,
  audience: toAgentManagers("scratchpad"),
  available: onlyManagers,
  current: (scope) => ({ text: scope.agent?.scratchpad ?? "" }),
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const base = { tenantId: ctx.tenant.id, agentId: agent.id, authorId: ctx.actor.id };
    const kind = params.text.trim() ? "edit" : "clear";
    await writeScratchpad(ctx.tx, { ...base, kind, text: params.text });
    // The audit trail: who changed it and when (the history keeps what it said before).
    await emit(ctx, {
      type: kind === "edit" ? "scratchpad.edited" : "scratchpad.cleared",
      subjectType: "user",
      subjectId: agent.id,
    });
    return { status: 200, location: memoryOf(agent.handle), notice: "Scratchpad saved" };
  },
});

export const clearScratchpad = defineAction({
  name: "clear_scratchpad",
  needs: ["agent"],
  description: "Empty its scratchpad: its next run starts with no notes from earlier runs",
  params: z.object({}),
  writes: true,
  audience: toAgentManagers("scratchpad"),
  available: onlyManagers,
  async execute(ctx, _params, scope) {
    const { agent } = scope;
    const base = { tenantId: ctx.tenant.id, agentId: agent.id, authorId: ctx.actor.id };
    await writeScratchpad(ctx.tx, { ...base, kind: "clear", text: "" });
    await emit(ctx, { type: "scratchpad.cleared", subjectType: "user", subjectId: agent.id });
    return { status: 200, location: memoryOf(agent.handle), notice: "Scratchpad cleared" };
  },
});

export const updateScratchpad = defineAction({
  name: "update_scratchpad",
  description: "Replace your scratchpad: notes to yourself that you will see at the start of every run",
  params: z.object({ text: z.string().max(4000, "at most 4000 characters").meta({ multiline: true }) }),
  writes: true,
  audience: toSelf("scratchpad"),
  available: (ctx) => (ctx.actor.kind === "subagent" ? null : "only subagents have a scratchpad"),
  async execute(ctx, params) {
    // The scratchpad carries the label of what its writer had read (added to what it carried),
    // so a later run reading it takes that in too: memory cannot launder content.
    const write = { tenantId: ctx.tenant.id, agentId: ctx.actor.id, authorId: ctx.actor.id };
    await writeScratchpad(
      ctx.tx,
      { ...write, kind: "write", text: params.text, runId: ctx.run?.id },
      ctx.flow?.label() ?? [],
    );
    return { status: 200, location: "/whoami", notice: "Scratchpad saved" };
  },
});
