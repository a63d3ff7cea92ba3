// A step's prompt as Anthropic's Messages API takes it, with prompt-cache breakpoints on
// its stable prefix. The messages come masked (llm.ts maskMessages): this only reshapes them.
//
// Where the breakpoints go, and why (Anthropic's prompt-caching docs, "Structuring your
// prompt" and "Cache limitations"): the cache is a prefix in the order tools → system →
// messages; a `cache_control` block writes an entry for the prefix up to and including it;
// a later request reads an entry found at its breakpoints or at any content block boundary
// up to about 20 blocks before one; at most 4 breakpoints a request; prefixes under the
// model's minimum (1024 tokens for most models) are not cached; empty text blocks cannot
// be. So, for a run whose tools only grow by appending, whose system message is constant,
// and whose user messages but the last are its append-only part (task, then a memory line
// `N. …` a step; or, as the prompt is built today, one user message whose first
// `stableChars` characters are that part, prompt.ts buildPrompt):
//   1. the last tool      — the tools alone, for a run that changes the rest (rarely);
//   2. the system block   — tools and instructions, shared by every step of the run;
//   3. the stable part's first block, when buildPrompt cut it — up to where the page window
//      began for the step before: the steps since wrote it, and a step that moves the window
//      (cuts its oldest pages to excerpts) reads it;
//   4. the stable part's last block — everything but this step's counters.
// The stable text is cut into blocks at buildPrompt's cuts (or memory lines): the step
// before wrote its entry at what is now an inner block boundary, one block back, which the
// look-back finds though this step appended an entry. A single user message without a stable part
// changes all of it each step: no breakpoint there, which would only pay for cache writes
// never read.
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { memoryBlocks, type StablePart, stableBlocks } from "./cache-blocks.ts";

/**
 * Required by Anthropic. A reply is one tool call with a short note, or a finish message:
 * a few hundred tokens. 4096 leaves room for a long final message and the text a model
 * writes before its tool call, and bounds what a runaway reply can cost.
 */
export const MAX_TOKENS = 4096;

const EPHEMERAL = { type: "ephemeral" } as const;

interface TextBlock {
  type: "text";
  text: string;
  cache_control?: typeof EPHEMERAL;
}
interface Turn {
  role: "user" | "assistant";
  content: TextBlock[];
}

function textOf(content: ChatCompletionMessageParam["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((p) => ("text" in p ? p.text : "")).join("");
}

/** A user message's text in blocks: its stable part at memory lines, then the rest whole. */
function userBlocks(text: string, stable: boolean, part?: StablePart): string[] {
  if (stable) return memoryBlocks(text);
  return stableBlocks(text, part);
}

/**
 * System messages (and OpenAI's `developer`) become `system`; the rest, turns of text
 * blocks, consecutive ones of a role merged. `part`: the first user message's stable part,
 * when the prompt has one user message (buildPrompt).
 */
function split(messages: ChatCompletionMessageParam[], part?: StablePart) {
  const system: TextBlock[] = [];
  const turns: Turn[] = [];
  const users = messages.filter((m) => m.role === "user").length;
  let seen = 0;
  let stableEnd: TextBlock | undefined;
  let windowEnd: TextBlock | undefined;
  for (const message of messages) {
    const text = textOf(message.content);
    if (message.role === "system" || message.role === "developer") {
      if (text) system.push({ type: "text", text });
      continue;
    }
    const role = message.role === "assistant" ? "assistant" : "user";
    const stable = message.role === "user" && ++seen < users;
    const within = message.role === "user" && users === 1 && part?.chars ? part : undefined;
    const texts = message.role === "user" ? userBlocks(text, stable, within) : [text];
    const blocks = texts.filter(Boolean).map((t): TextBlock => ({ type: "text", text: t }));
    if (!blocks.length) continue;
    if (stable) stableEnd = blocks.at(-1);
    // The stable part's last block: the one before this message's changing rest.
    if (within) stableEnd = blocks.at(-2) ?? stableEnd;
    // The block that ends where the page window began for the step before (cache-blocks.ts).
    if (within?.cuts && within.window !== undefined) {
      let end = 0;
      for (const block of blocks) {
        end += block.text.length;
        if (end === within.window && block !== stableEnd) windowEnd = block;
      }
    }
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  }
  return { system, turns, stableEnd, windowEnd };
}

/** OpenAI function tools as Anthropic tools (the schema is the same JSON Schema). */
function toolsOf(tools: readonly ChatCompletionTool[]) {
  return tools.flatMap((tool) =>
    tool.type === "function"
      ? [
          {
            name: tool.function.name,
            ...(tool.function.description && { description: tool.function.description }),
            input_schema: tool.function.parameters ?? { type: "object", properties: {} },
          },
        ]
      : [],
  );
}

/**
 * The request body: `messages` masked already, `tools` absent in JSON mode (its
 * instructions are among the system messages). Always streamed.
 */
export function anthropicBody(
  model: string,
  messages: ChatCompletionMessageParam[],
  tools: readonly ChatCompletionTool[] | undefined,
  stable?: StablePart,
): Record<string, unknown> {
  const { system, turns, stableEnd, windowEnd } = split(messages, stable);
  const anthropicTools: Record<string, unknown>[] = tools ? toolsOf(tools) : [];
  const lastTool = anthropicTools.at(-1);
  if (lastTool) lastTool.cache_control = EPHEMERAL;
  const lastSystem = system.at(-1);
  if (lastSystem) lastSystem.cache_control = EPHEMERAL;
  if (stableEnd) stableEnd.cache_control = EPHEMERAL;
  if (windowEnd) windowEnd.cache_control = EPHEMERAL;
  return {
    model,
    max_tokens: MAX_TOKENS,
    ...(system.length && { system }),
    messages: turns,
    ...(anthropicTools.length && {
      tools: anthropicTools,
      // One tool call a reply, as `parallel_tool_calls: false` asks of OpenAI.
      tool_choice: { type: "auto", disable_parallel_tool_use: true },
    }),
    stream: true,
  };
}
