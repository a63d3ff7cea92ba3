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

// JSON Schema's own words; the registry's form hints (multiline, secret, label, optionLabels,
// pickedBeside) ride along in zod's meta and mean nothing to a client, so they are dropped.
const KEYWORDS = new Set([
  "type",
  "properties",
  "required",
  "description",
  "enum",
  "const",
  "items",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "pattern",
  "format",
  "default",
  "anyOf",
  "additionalProperties",
]);

function standard(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(standard);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node))
    if (KEYWORDS.has(key))
      out[key] =
        key === "properties"
          ? Object.fromEntries(
              Object.entries(value as object).map(([name, property]) => [name, standard(property)]),
            )
          : standard(value);
  return out;
}

export function paramsJsonSchema(action: ActionDef): JsonSchema {
  let schema = cache.get(action);
  if (!schema) {
    // The input side (before transforms): what a caller sends.
    const { $schema: _, ...rest } = z.toJSONSchema(action.params, { io: "input", unrepresentable: "any" });
    schema = standard(rest) as JsonSchema;
    cache.set(action, schema);
  }
  return schema;
}
