// An action's params as JSON Schema, derived from its zod schema: the one source of the
// tool schemas MCP clients and the navigator's model see (labels and descriptions come from
// each param's `describe`/`meta`, limits from its checks).
import { z } from "zod";
import type { ActionDef } from "./types.ts";

export type JsonSchema = {
  type: "object";
  properties?: Record<string, object>;
  required?: string[];
} & Record<string, unknown>;

const cache = new WeakMap<ActionDef, JsonSchema>();

export function paramsJsonSchema(a: ActionDef): JsonSchema {
  let schema = cache.get(a);
  if (!schema) {
    // The input side (before transforms): what a caller sends.
    const { $schema: _, ...rest } = z.toJSONSchema(a.params, { io: "input", unrepresentable: "any" });
    schema = rest as JsonSchema;
    cache.set(a, schema);
  }
  return schema;
}
