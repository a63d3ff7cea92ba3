// What a tool is, as a connection's server lists it, and the hash that pins it: an owner allows
// a tool as it was described to them, so any change to its name, description or input schema
// is a different tool until they accept it (DESIGN.md "Tools at the edge of the workspace").
import { createHash } from "node:crypto";
import { canonical } from "../../lib/canonical-json.ts";

export interface ToolDefinitionInput {
  name: string;
  description?: string;
  inputSchema?: unknown;
}

/** sha256 (hex) of the canonical JSON of `{ name, description, inputSchema }`; key order does not count. */
export function definitionHash(def: ToolDefinitionInput): string {
  const pinned = { name: def.name, description: def.description ?? "", inputSchema: def.inputSchema ?? {} };
  return createHash("sha256").update(canonical(pinned)).digest("hex");
}

/** What is pinned beside the hash, so a review can show the allowed definition against the current one. */
export function pinnedDefinition(def: ToolDefinitionInput) {
  return { name: def.name, description: def.description ?? "", inputSchema: def.inputSchema ?? {} };
}

/** A connection's slug: the namespace of its tools to agents, `<slug>__<tool>`. */
export const SLUG_PATTERN = /^[a-z0-9_]{1,24}$/;

/** The name an agent calls a connection's tool by. */
export const namespacedToolName = (slug: string, tool: string) => `${slug}__${tool}`;
