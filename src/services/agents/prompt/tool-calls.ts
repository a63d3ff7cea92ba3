// One tool call per step. Requests ask for one (`parallel_tool_calls: false`, llm.ts), but a
// model may still send several: the navigator runs the first, records the others' names with
// the step (`unrun`), and the next prompt says plainly that they were not run, so the model
// does not report as done what never happened. Read from the step, so a resumed run's prompt
// says it too.
import type { ChatCompletionMessage } from "openai/resources/chat/completions";
import type { Remembered } from "./memory.ts";

/** The tool calls of a reply beyond the first, by name: those the step did not run. */
export function unrunCalls(message: Pick<ChatCompletionMessage, "tool_calls">): string[] | undefined {
  const rest = message.tool_calls?.slice(1) ?? [];
  const names = rest.map((c) => (c.type === "function" ? c.function.name : c.type));
  return names.length ? names : undefined;
}

/** What the next prompt says when the last step's reply carried calls that were not run; "" otherwise. */
export function unrunNotice(steps: readonly Remembered[]): string {
  const detail = (steps.at(-1)?.detail ?? {}) as { unrun?: unknown };
  const unrun = Array.isArray(detail.unrun) ? detail.unrun.filter((n) => typeof n === "string") : [];
  if (!unrun.length) return "";
  const names = unrun.map((n) => `\`${n}\``).join(", ");
  return `# Only your first tool call was run\n\nYour last reply called ${unrun.length + 1} tools at once. Only the first was run (step ${steps.at(-1)!.number}); ${unrun.length === 1 ? "this one was" : "these were"} NOT run: ${names}. Call one tool per reply: if you still need ${unrun.length === 1 ? "it" : "them"}, call ${unrun.length === 1 ? "it" : "them one at a time"} again, and do not report ${unrun.length === 1 ? "it" : "them"} as done.`;
}
