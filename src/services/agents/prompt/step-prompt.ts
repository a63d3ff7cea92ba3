// The prompt behind a step, for its owner to read on the run page. Prompts are not stored
// (a few thousand tokens a step, on every step of every run): the worker keeps, with each
// step, only what the step rows cannot tell (the budget, JSON mode, the feedback on a
// rejected reply, a page no earlier step recorded) and a fingerprint of what it sent. The
// run page rebuilds the prompt with the worker's own function and says whether the
// fingerprint matches, that is whether this is to the byte what the model was sent.
import { createHash } from "node:crypto";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import type { Db } from "../../../db/prisma.ts";
import type { SubagentTaskRun, SubagentTaskRunStep, User } from "../../../generated/prisma/client.ts";
import type { ActionDef } from "../../registry/types.ts";
import { maskDeep } from "../core/secret-masking.ts";
import { sharedAgentConfig } from "../core/settings.ts";
import type { PromptFacts } from "../core/steps.ts";
import { ownerText } from "../core/whoami-read.ts";
import { actionsRead, pageActionNames, type Remembered } from "./memory.ts";
import { buildMessages, type PromptInput, TOOL_SHARE } from "./prompt.ts";
import {
  type ConnectedTool,
  connectedTool,
  JSON_MODE_INSTRUCTIONS,
  toolsFor,
  toolTokens,
} from "./protocol.ts";

/** Kept in a step's `detail.prompt`: what rebuilding its prompt needs beyond the step rows. */

// Steps that are a conversation with the owner, not work: they do not count against the limit.
export const CONVERSATION = ["answer", "ask_owner", "approval"];

/** The first 16 hex digits of the SHA-256 of the messages' JSON. */
export const fingerprint = (messages: ChatCompletionMessageParam[]) =>
  fingerprintJson(JSON.stringify(messages));

/** The same, of JSON already made (llm.ts encodes the messages once). */
export const fingerprintJson = (json: string) => createHash("sha256").update(json).digest("hex").slice(0, 16);

/** Of a call's tools, by name in order: kept with its step, so a rebuild can say whether its tools are the ones sent. */
export const toolsHash = (names: readonly string[]) => fingerprintJson(names.join(","));

/** The input of buildMessages from what a run knows: the navigator's and the rebuild's one recipe. */
export function promptInput(input: {
  agent: Pick<User, "name" | "handle" | "agentConfig">;
  /** Whom it works for, in words (whoami-read.ts `ownerText`). */
  owner: string;
  workspace: string;
  run: Pick<SubagentTaskRun, "task" | "maxSteps">;
  steps: Remembered[];
  page: { path: string; markdown: string };
  feedback?: string;
  budget: number;
  jsonMode: boolean;
  /** The actions the run may use (capabilities.ts runActions), its typed tools from the first step. */
  usable: readonly ActionDef[];
  /** The registry's actions by name (passed in: the catalog imports this module's importers). */
  lookup: (name: string) => ActionDef | undefined;
  /** The connected tools it is granted (runtime/run-tools.ts), typed after the actions. */
  connected?: readonly ConnectedTool[];
}): PromptInput {
  const counted = input.steps.filter((s) => !CONVERSATION.includes(s.type)).length;
  return {
    agent: {
      name: input.agent.name,
      handle: input.agent.handle,
      identityPrompt: sharedAgentConfig(input.agent.agentConfig).identity_prompt,
    },
    owner: input.owner,
    workspace: input.workspace,
    task: input.run.task,
    steps: input.steps,
    page: input.page,
    feedback: input.feedback,
    stepsLeft: input.run.maxSteps - counted,
    budget: input.budget,
    jsonMode: input.jsonMode,
    tools: input.jsonMode
      ? undefined
      : withConnected(input.connected ?? [], input.budget * TOOL_SHARE, (room) =>
          runTools(input.usable, input.steps, input.page.markdown, input.lookup, room),
        ),
  };
}

/**
 * The run's connected tools after its actions, all of them every step (the same bytes, for the
 * prompt cache); the actions take what room the tools leave. A tool is the only way to call it.
 */
function withConnected(
  connected: readonly ConnectedTool[],
  maxTokens: number,
  actions: (room: number) => ChatCompletionTool[],
): ChatCompletionTool[] {
  if (!connected.length) return actions(maxTokens);
  const typed = connected.map(connectedTool);
  return [...actions(maxTokens - toolTokens(typed)), ...typed];
}

/**
 * The run's typed tools: every action it may use when they all fit their share of the
 * budget, so its tools are the same bytes from the first step to the last. When they do
 * not, the ones its pages offered come first (in the order met, the current page's last),
 * then the others; either way listed in `usable`'s order, so the tools change only when a
 * page offers an action not typed yet. The model may still act only on the current page's
 * (the navigator refuses the others, naming the page's). For the navigator and a rebuild alike.
 */
function runTools(
  usable: readonly ActionDef[],
  steps: Remembered[],
  current: string,
  lookup: (name: string) => ActionDef | undefined,
  maxTokens: number,
) {
  const met = new Set<string>();
  for (const remembered of steps) for (const name of actionsRead(remembered)) met.add(name);
  for (const name of pageActionNames(current)) met.add(name);
  const rank = new Map(usable.map((a, i) => [a.name, i]));
  // A page may offer what the run's capabilities did not (a grant since it was queued): after the rest.
  for (const name of met) if (!rank.has(name)) rank.set(name, rank.size);
  const offered = [...met].map(lookup).filter((a): a is ActionDef => Boolean(a));
  const others = usable.filter((a) => !met.has(a.name));
  return toolsFor([...offered, ...others], maxTokens, (a) => rank.get(a.name)!);
}

const factsOf = (step: Pick<SubagentTaskRunStep, "detail">): PromptFacts | undefined => {
  const facts = (step.detail as { prompt?: PromptFacts } | null)?.prompt;
  return facts && typeof facts.hash === "string" ? facts : undefined;
};

/** The page the model was looking at when it made step `n`: recorded with it, or read by the latest navigation before it. */
export function pageBefore(steps: SubagentTaskRunStep[], facts: PromptFacts) {
  if (facts.page) return facts.page;
  for (let index = steps.length - 1; index >= 0; index--) {
    const step = steps[index]!;
    const page = (step.detail as { page?: unknown } | null)?.page;
    if (step.type === "navigate" && typeof page === "string")
      return { path: step.path ?? "/whoami", markdown: page };
  }
  return null;
}

export interface RebuiltPrompt {
  /** As sent: masked, with JSON mode's instructions where they applied. */
  messages: ChatCompletionMessageParam[];
  jsonMode: boolean;
  /** The rebuild matches the fingerprint the worker kept: this is what the model was sent. */
  exact: boolean;
  /** The tools offered with it, by name (none in JSON mode). */
  tools: string[];
  /** They match the tools' fingerprint the step kept (false for a step kept before there was one). */
  toolsExact: boolean;
}

/** The prompt of step `number` of `run`, or null for a step no model call made (the first read, an owner's answer). */
export async function rebuildPrompt(
  db: Db,
  run: SubagentTaskRun,
  agent: User,
  tenantName: string,
  number: number,
  /** The run's actions (capabilities.ts runActions), the registry's by name, and its connected tools. */
  actions: {
    usable: readonly ActionDef[];
    all: ReadonlyMap<string, ActionDef>;
    connected?: readonly ConnectedTool[];
  },
): Promise<RebuiltPrompt | null> {
  const [steps, parent, ownerStudio] = await Promise.all([
    db.subagentTaskRunStep.findMany({
      where: { runId: run.id, number: { lte: number } },
      orderBy: { number: "asc" },
    }),
    agent.parentId ? db.user.findUnique({ where: { id: agent.parentId } }) : null,
    agent.ownerStudioId ? db.studio.findUnique({ where: { id: agent.ownerStudioId } }) : null,
  ]);
  const step = steps.pop();
  const facts = step?.number === number ? factsOf(step) : undefined;
  const page = facts && pageBefore(steps, facts);
  if (!facts || !page) return null;
  const input = promptInput({
    agent,
    owner: ownerText({ parent, ownerStudio }),
    workspace: tenantName,
    run,
    steps,
    page,
    feedback: facts.feedback,
    budget: facts.budget,
    jsonMode: Boolean(facts.json),
    usable: actions.usable,
    lookup: (name) => actions.all.get(name),
    connected: actions.connected ?? [],
  });
  const built = buildMessages(input);
  const tools = (input.tools ?? []).map((t) => (t.type === "function" ? t.function.name : ""));
  const sent = maskDeep(
    facts.json ? [...built, { role: "system" as const, content: JSON_MODE_INSTRUCTIONS }] : built,
  );
  return {
    messages: sent,
    jsonMode: Boolean(facts.json),
    exact: fingerprint(sent) === facts.hash,
    tools,
    toolsExact: facts.tools === toolsHash(tools),
  };
}
