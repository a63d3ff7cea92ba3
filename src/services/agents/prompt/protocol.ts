// The protocol any OpenAI-compatible model drives the navigator with: three fixed function
// tools (navigate, finish, ask_owner) and, typed, each action the current page lists, its
// params' JSON Schema from the registry (registry/json-schema.ts, the one source MCP uses
// too); a JSON-mode fallback for endpoints without tool calling. The typed actions take at
// most their share of the prompt budget: those that do not fit are reached through the
// untyped `execute_action {action, params}`, offered then (and always understood).
//
// Every tool takes an optional `note`, the model's memory for the run (memory.ts). An
// argument rather than the text a model may send beside a tool call: many models send no
// text with tool calls, the schema tells every model the note exists and what it is for,
// and JSON mode (no tools) carries it the same way.
import type { ChatCompletionMessage, ChatCompletionTool } from "openai/resources/chat/completions";
import { z } from "zod";
import { paramsJsonSchema } from "../../registry/json-schema.ts";
import type { ActionDef } from "../../registry/types.ts";
import { NOTE_CHARS } from "./memory.ts";

const NOTE = {
  type: "string",
  description: `Your memory for this run (at most ${NOTE_CHARS} characters): what you learned that you will need later, and what you plan next`,
};

/** The tools every step offers, whatever the page. */
export const TOOLS: ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "navigate",
      description: "Open a page of the workspace and read its markdown and actions.",
      parameters: {
        type: "object",
        properties: {
          path: { type: "string", description: "A path such as /studios/general or /search?q=offsite" },
          note: NOTE,
        },
        required: ["path"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "finish",
      description: "End the run with a short summary of what you did.",
      parameters: {
        type: "object",
        properties: { message: { type: "string" }, note: NOTE },
        required: ["message"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "ask_owner",
      description: "Ask your owner a question; the run pauses until they answer.",
      parameters: {
        type: "object",
        properties: { question: { type: "string" }, note: NOTE },
        required: ["question"],
        additionalProperties: false,
      },
    },
  },
];

const actionTools = new WeakMap<ActionDef, ChatCompletionTool>();

// Bare here: every typed action repeats them, and the system prompt says once what they
// are for (a description per tool cost ~20 tokens each on a page of five actions).
const REASON = { type: "string" };
const SHORT_NOTE = { type: "string" };

/** The untyped way to any action of the current page: offered when the typed ones do not all fit. */
const EXECUTE_TOOL: ChatCompletionTool = {
  type: "function",
  function: {
    name: "execute_action",
    description:
      "Run an action listed under '## Actions' on the current page that has no tool of its own here.",
    parameters: {
      type: "object",
      properties: {
        action: { type: "string", description: "The action's name, e.g. add_comment" },
        params: { type: "object", description: "The action's parameters", additionalProperties: true },
        reason: REASON,
        note: SHORT_NOTE,
      },
      required: ["action", "params"],
      additionalProperties: false,
    },
  },
};

// Providers render tool schemas in a format of their own; half the JSON's characters
// counts them generously (test/token-estimate.test.ts checks it against real tokenizers).
// A tool's JSON is the same bytes in every request that offers it: made once per tool.
const toolJsons = new WeakMap<ChatCompletionTool, string>();

function toolJson(chatCompletionTool: ChatCompletionTool): string {
  let json = toolJsons.get(chatCompletionTool);
  if (json === undefined) {
    json = JSON.stringify(chatCompletionTool);
    toolJsons.set(chatCompletionTool, json);
  }
  return json;
}

/** JSON.stringify(tools), from each tool's JSON made once (a run's tools are the same objects step after step). */
export const toolsJson = (tools: readonly ChatCompletionTool[]): string =>
  `[${tools.map(toolJson).join(",")}]`;

const toolSizes = new WeakMap<ChatCompletionTool, number>();
/**
 * A tool's tokens, counted high: half its characters, where our tools' JSON runs 4.0–4.9
 * characters to a token in o200k and cl100k alike (test/typed-tools.test.ts checks every
 * registry action). A third would charge them nearer their size and leave the memory more
 * room; on the benchmark's walks that kept more of the log and cost more effective tokens.
 */
export function toolTokens(tools: readonly ChatCompletionTool[]): number {
  let count = 0;
  for (const tool of tools) {
    let size = toolSizes.get(tool);
    if (size === undefined) {
      size = Math.ceil(toolJson(tool).length / 2);
      toolSizes.set(tool, size);
    }
    count += size;
  }
  return count;
}

/**
 * A schema as a model needs it: without `pattern`s, `minLength` and long `maxLength`s. Regexes
 * cost a model many tokens and tell it little, "at least 1 character" says what `required`
 * says, and a limit of thousands of characters is one no model meets by chance; the action's
 * own validation answers a bad value with the field's message. A short limit (a title's 200)
 * stays: a model would otherwise spend a step finding it.
 */
const LONG_LIMIT = 1000;
function forModel(node: unknown): object {
  if (Array.isArray(node)) return node.map(forModel);
  if (!node || typeof node !== "object") return node as object;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key, value]) => !dropForModel(key, value))
      .map(([key, value]) => [key, typeof value === "object" ? forModel(value) : value]),
  );
}
const dropForModel = (key: string, value: unknown) =>
  (key === "pattern" && typeof value === "string") ||
  (key === "minLength" && typeof value === "number") ||
  (key === "maxLength" && typeof value === "number" && value > LONG_LIMIT);

/** An action of the current page as a typed tool: its params, your reason, your note. */
function actionTool(actionDef: ActionDef): ChatCompletionTool {
  let tool = actionTools.get(actionDef);
  if (!tool) {
    tool = {
      type: "function",
      function: {
        name: actionDef.name,
        description: actionDef.description,
        parameters: {
          type: "object",
          properties: { params: forModel(paramsJsonSchema(actionDef)), reason: REASON, note: SHORT_NOTE },
          required: ["params"],
          additionalProperties: false,
        },
      },
    };
    actionTools.set(actionDef, tool);
  }
  return tool;
}

/** A connected tool a run may call, as its connection's owner allowed it (its pinned definition). */
export interface ConnectedTool {
  /** `<slug>__<tool>`. */
  name: string;
  description: string;
  inputSchema: unknown;
  /** The connection's name ("GitHub"), said in the description. */
  connection: string;
}

const connectedTools = new WeakMap<ConnectedTool, ChatCompletionTool>();

/**
 * A connected tool as a typed tool beside the actions: its params are the tool's arguments.
 * Its description is its server's text, said to be so (the system prompt: data from outside).
 */
export function connectedTool(connected: ConnectedTool): ChatCompletionTool {
  let tool = connectedTools.get(connected);
  if (!tool) {
    const schema =
      connected.inputSchema && typeof connected.inputSchema === "object" ? connected.inputSchema : {};
    tool = {
      type: "function",
      function: {
        name: connected.name,
        description: `${connected.connection}'s tool (outside Cadre): ${connected.description}`.slice(
          0,
          1024,
        ),
        parameters: {
          type: "object",
          properties: { params: { type: "object", ...forModel(schema) }, reason: REASON, note: SHORT_NOTE },
          required: ["params"],
          additionalProperties: false,
        },
      },
    };
    connectedTools.set(connected, tool);
  }
  return tool;
}

/**
 * The tools of a step: the fixed three and actions, typed, taken in order while they fit in
 * `maxTokens` (once one does not, none after it), then listed in `rank`'s order when given;
 * the rest through `execute_action`.
 */
export function toolsFor(
  actions: readonly ActionDef[],
  maxTokens = Number.POSITIVE_INFINITY,
  rank?: (action: ActionDef) => number,
): ChatCompletionTool[] {
  let left = maxTokens - toolTokens(TOOLS) - toolTokens([EXECUTE_TOOL]);
  const typed: ActionDef[] = [];
  for (const action of actions) {
    const size = toolTokens([actionTool(action)]);
    if (size > left) break;
    typed.push(action);
    left -= size;
  }
  if (rank) typed.sort((x, y) => rank(x) - rank(y));
  const tools = [...TOOLS, ...typed.map(actionTool)];
  if (typed.length < actions.length) tools.push(EXECUTE_TOOL);
  return tools;
}

export const JSON_MODE_INSTRUCTIONS = `Answer with exactly one JSON object and nothing else, one of:
{"type":"navigate","path":"/some/path","note":"your note"}
{"type":"execute","action":"action_name","params":{...},"reason":"why","note":"your note"}
{"type":"finish","message":"what you did"}
{"type":"ask_owner","question":"what you need to know","note":"your note"}
"note" is optional: your memory for this run, at most ${NOTE_CHARS} characters.`;

// A long note is cut, not refused: refusing would cost the model a step for being thorough.
const note = z
  .string()
  .trim()
  .transform((s) => (s.length > NOTE_CHARS ? `${s.slice(0, NOTE_CHARS - 1)}…` : s))
  .optional()
  .catch(undefined);

const decisionSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("navigate"),
    path: z.string().trim().startsWith("/", "a path starts with /").max(500),
    note,
  }),
  z.object({
    type: z.literal("execute"),
    action: z
      .string()
      .trim()
      // A connected tool's name (`github__search_issues`) has digits, capitals or hyphens too.
      .regex(/^[A-Za-z0-9_-]{1,64}$/, "an action name such as add_comment"),
    params: z.record(z.string(), z.unknown()).default({}),
    reason: z.string().max(2000).optional(),
    note,
  }),
  z.object({ type: z.literal("finish"), message: z.string().max(5000).default(""), note }),
  z.object({ type: z.literal("ask_owner"), question: z.string().trim().min(1).max(2000), note }),
]);

export type Decision = z.infer<typeof decisionSchema>;

const TOOL_TYPES: Record<string, Decision["type"]> = {
  navigate: "navigate",
  execute_action: "execute",
  finish: "finish",
  ask_owner: "ask_owner",
};

/** A typed action's arguments as an execute decision; params sent flat (a common slip) count too. */
function typedCall(action: string, args: Record<string, unknown>) {
  const { params, reason, note, ...flat } = args ?? {};
  return { type: "execute", action, params: params ?? flat, reason, note };
}

export type Parsed = { ok: true; decision: Decision } | { ok: false; error: string };

function validate(candidate: unknown): Parsed {
  const parsed = decisionSchema.safeParse(candidate);
  if (parsed.success) return { ok: true, decision: parsed.data };
  return {
    ok: false,
    error: parsed.error.issues.map((i) => `${i.path.join(".") || "reply"}: ${i.message}`).join("; "),
  };
}

/**
 * Reads the model's reply: a tool call (one of the fixed tools, or one of `actions`, the
 * current page's typed actions), or (fallback) a JSON object in the content.
 */
export function parseDecision(
  message: Pick<ChatCompletionMessage, "content" | "tool_calls">,
  actions: readonly string[] = [],
): Parsed {
  const call = message.tool_calls?.[0];
  if (call) {
    if (call.type !== "function") return { ok: false, error: `unsupported tool call type ${call.type}` };
    const name = call.function.name;
    const type = TOOL_TYPES[name];
    const typed = !type && actions.includes(name);
    if (!type && !typed)
      return {
        ok: false,
        error: `unknown tool \`${name}\`; use navigate, finish, ask_owner or an action of the current page${actions.length ? ` (${actions.join(", ")})` : ""}`,
      };
    let args: unknown;
    try {
      args = JSON.parse(call.function.arguments || "{}");
    } catch {
      return { ok: false, error: `the arguments of \`${name}\` are not valid JSON` };
    }
    return validate(typed ? typedCall(name, args as Record<string, unknown>) : { ...(args as object), type });
  }
  const text = (message.content ?? "").trim();
  if (!text) return { ok: false, error: "empty reply: call one of the tools" };
  const json =
    /```(?:json)?\s*([\s\S]*?)```/.exec(text)?.[1] ??
    text.slice(text.indexOf("{"), text.lastIndexOf("}") + 1);
  try {
    return validate(JSON.parse(json));
  } catch {
    return { ok: false, error: "your reply was neither a tool call nor a JSON action object" };
  }
}
