// The one `available` of the actions only an agent's managers take — correcting its memory,
// clearing what it read, restoring its versions, keeping its test cases, running its
// experiments: a person who manages it (ownership.ts mayManage), never an agent. Each says
// what it is the managers' to do.
import { mayManage } from "../agents/core/ownership.ts";
import type { Ctx, Scope } from "../registry/types.ts";

export const managersOnly = (doing: string) => (ctx: Ctx, scope: Scope) =>
  ctx.actor.kind !== "person" || (scope.agent && !mayManage(ctx.actor, scope.agent))
    ? `only the agent's managers ${doing}`
    : null;
