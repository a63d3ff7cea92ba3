// The fixed protocol any OpenAI-compatible model drives the navigator with: four
// function tools, and a JSON-mode fallback for endpoints without tool calling.
//
// Every tool takes an optional `note`, the model's memory for the run (memory.ts). An
// argument rather than the text a model may send beside a tool call: many models send no
// text with tool calls, the schema tells every model the note exists and what it is for,
// and JSON mode (no tools) carries it the same way.
import type { ChatCompletionMessage, ChatCompletionTool } from "openai/resources/chat/completions";
import { z } from "zod";
import { NOTE_CHARS } from "./memory.ts";

const NOTE = {
  type: "string",
  description: `Your memory for this run (at most ${NOTE_CHARS} characters): what you learned that you will need later, and what you plan next`,
};

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
      name: "execute_action",
      description: "Run one of the actions listed under '## Actions' on the current page.",
      parameters: {
        type: "object",
        properties: {
          action: { type: "string", description: "The action's name, e.g. add_comment" },
          params: { type: "object", description: "The action's parameters", additionalProperties: true },
          reason: {
            type: "string",
            description: "Why, in a sentence: your owner sees it if the action needs approval",
          },
          note: NOTE,
        },
        required: ["action", "params"],
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
      .regex(/^[a-z_]{1,64}$/, "an action name such as add_comment"),
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

export type Parsed = { ok: true; decision: Decision } | { ok: false; error: string };

function validate(candidate: unknown): Parsed {
  const r = decisionSchema.safeParse(candidate);
  if (r.success) return { ok: true, decision: r.data };
  return {
    ok: false,
    error: r.error.issues.map((i) => `${i.path.join(".") || "reply"}: ${i.message}`).join("; "),
  };
}

/** Reads the model's reply: a tool call, or (fallback) a JSON object in the content. */
export function parseDecision(message: Pick<ChatCompletionMessage, "content" | "tool_calls">): Parsed {
  const call = message.tool_calls?.[0];
  if (call) {
    if (call.type !== "function") return { ok: false, error: `unsupported tool call type ${call.type}` };
    const type = TOOL_TYPES[call.function.name];
    if (!type)
      return {
        ok: false,
        error: `unknown tool \`${call.function.name}\`; use navigate, execute_action, finish or ask_owner`,
      };
    let args: unknown;
    try {
      args = JSON.parse(call.function.arguments || "{}");
    } catch {
      return { ok: false, error: `the arguments of \`${call.function.name}\` are not valid JSON` };
    }
    return validate({ ...(args as object), type });
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
