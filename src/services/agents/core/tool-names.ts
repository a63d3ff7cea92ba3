// The name an agent knows a connection's tool by, `<slug>__<tool>` (services/tools/definitions.ts
// namespacedToolName): a capability of its own, a rule's action, a typed tool in a run. Function
// names of the model APIs are at most 64 of [A-Za-z0-9_-]; a tool whose name does not fit one is
// listed on the capabilities page as not offered, never renamed behind its owner's back.

/** A connection's slug, two underscores, the tool's name as its server lists it. */
const TOOL_NAME = /^[a-z0-9_]{1,24}__[A-Za-z0-9_-]+$/;

export const MAX_TOOL_NAME = 64;

/** Whether `name` is a tool's name rather than an action's: what the capability sets and rules tell apart by. */
export function isToolName(name: string): boolean {
  return name.length <= MAX_TOOL_NAME && TOOL_NAME.test(name);
}
