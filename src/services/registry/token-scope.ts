// What an API token may do, by its scope, checked by the registry with every other reason an
// action is refused (so a page lists only what the token may use, and running anything else
// is a 403 saying why):
//   read   — pages, and actions that write nothing (search);
//   act    — every action but those that make or end credentials (`manage` on the action) or
//            change what guards the workspace (`confirmRecent`: a session re-confirms for it);
//   manage — those too: a token that can mint tokens can copy itself before it is revoked,
//            so it is asked for on purpose, and over MCP only with the operator's leave.
// A session is its person, and an agent's run in process is its agent: no scope applies.
import type { ActionDef, Ctx } from "./types.ts";

export function scopeDenial(ctx: Ctx, action: ActionDef): string | null {
  const auth = ctx.auth;
  if (auth?.via !== "token") return null;
  if (auth.scope === "read" && action.writes) return "this API token may only read (its scope is `read`)";
  if (!action.manage && !action.confirmRecent) return null;
  if (auth.scope !== "manage")
    return action.manage
      ? `managing tokens and keys needs a signed-in session or a token with the \`manage\` scope (this one is \`${auth.scope}\`)`
      : `changing what guards the workspace (agents' capabilities and rules, its settings, signing secrets) needs a signed-in session or a token with the \`manage\` scope (this one is \`${auth.scope}\`)`;
  if (action.manage && auth.mcp && !auth.mcp.manageOverMcp)
    return "managing tokens and keys is not offered over MCP here: use the markdown API with a `manage` token, or your settings page";
  return null;
}
