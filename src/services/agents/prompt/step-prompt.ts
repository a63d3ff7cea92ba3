// The prompt behind a step, for its owner to read on the run page. Prompts are not stored
// (a few thousand tokens a step, on every step of every run): the worker keeps, with each
// step, only what the step rows cannot tell (the budget, JSON mode, the feedback on a
// rejected reply, a page no earlier step recorded) and a fingerprint of what it sent. The
// run page rebuilds the prompt with the worker's own function and says whether the
// fingerprint matches, that is whether this is to the byte what the model was sent.
import { createHash } from "node:crypto";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { Db } from "../../../db/prisma.ts";
import type { SubagentTaskRun, SubagentTaskRunStep, User } from "../../../generated/prisma/client.ts";
import type { ActionDef } from "../../registry/types.ts";
import { maskDeep } from "../core/secret-masking.ts";
import { sharedAgentConfig } from "../core/settings.ts";
import type { PromptFacts } from "../core/steps.ts";
import { ownerText } from "../core/whoami-read.ts";
import { actionsRead, pageActionNames, type Remembered } from "./memory.ts";
import { buildMessages, type PromptInput, TOOL_SHARE } from "./prompt.ts";
import { JSON_MODE_INSTRUCTIONS, toolsFor } from "./protocol.ts";

/** Kept in a step's `detail.prompt`: what rebuilding its prompt needs beyond the step rows. */

// Steps that are a conversation with the owner, not work: they do not count against the limit.
export const CONVERSATION = ["answer", "ask_owner", "approval"];

/** The first 16 hex digits of the SHA-256 of the messages' JSON. */
export const fingerprint = (messages: ChatCompletionMessageParam[]) =>
  fingerprintJson(JSON.stringify(messages));

/** The same, of JSON already made (llm.ts encodes the messages once). */
export const fingerprintJson = (json: string) => createHash("sha256").update(json).digest("hex").slice(0, 16);

/** The input of buildMessages from what a run knows: the navigator's and the rebuild's one recipe. */
export function promptInput(p: {
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
  /** The registry's actions by name (passed in: the catalog imports this module's importers). */
  lookup: (name: string) => ActionDef | undefined;
}): PromptInput {
  const counted = p.steps.filter((s) => !CONVERSATION.includes(s.type)).length;
  return {
    agent: {
      name: p.agent.name,
      handle: p.agent.handle,
      identityPrompt: sharedAgentConfig(p.agent.agentConfig).identity_prompt,
    },
    owner: p.owner,
    workspace: p.workspace,
    task: p.run.task,
    steps: p.steps,
    page: p.page,
    feedback: p.feedback,
    stepsLeft: p.run.maxSteps - counted,
    budget: p.budget,
    jsonMode: p.jsonMode,
    tools: p.jsonMode
      ? undefined
      : toolsFor(actionsOfRun(p.steps, p.page.markdown, p.lookup), p.budget * TOOL_SHARE),
  };
}

/**
 * The run's typed actions: every action a page it read listed (the ones the reader may
 * use), in the order it first met them, the current page's last. The same list step after
 * step, grown only at its end, so the tools (the first thing a request sends) stay the bytes
 * a provider's prompt cache holds; the model may still act only on the current page's
 * (the navigator refuses the others, naming the page's). For the navigator and a rebuild alike.
 */
function actionsOfRun(
  steps: Remembered[],
  current: string,
  lookup: (name: string) => ActionDef | undefined,
): ActionDef[] {
  const names = new Set<string>();
  for (const s of steps) for (const name of actionsRead(s)) names.add(name);
  for (const name of pageActionNames(current)) names.add(name);
  return [...names].map(lookup).filter((a): a is ActionDef => Boolean(a));
}

const factsOf = (s: Pick<SubagentTaskRunStep, "detail">): PromptFacts | undefined => {
  const f = (s.detail as { prompt?: PromptFacts } | null)?.prompt;
  return f && typeof f.hash === "string" ? f : undefined;
};

/** The page the model was looking at when it made step `n`: recorded with it, or read by the latest navigation before it. */
export function pageBefore(steps: SubagentTaskRunStep[], facts: PromptFacts) {
  if (facts.page) return facts.page;
  for (let i = steps.length - 1; i >= 0; i--) {
    const s = steps[i]!;
    const page = (s.detail as { page?: unknown } | null)?.page;
    if (s.type === "navigate" && typeof page === "string")
      return { path: s.path ?? "/whoami", markdown: page };
  }
  return null;
}

export interface RebuiltPrompt {
  /** As sent: masked, with JSON mode's instructions where they applied. */
  messages: ChatCompletionMessageParam[];
  jsonMode: boolean;
  /** The rebuild matches the fingerprint the worker kept: this is what the model was sent. */
  exact: boolean;
}

/** The prompt of step `number` of `run`, or null for a step no model call made (the first read, an owner's answer). */
export async function rebuildPrompt(
  db: Db,
  run: SubagentTaskRun,
  agent: User,
  tenantName: string,
  number: number,
  lookup: (name: string) => ActionDef | undefined,
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
  const built = buildMessages(
    promptInput({
      agent,
      owner: ownerText({ parent, ownerStudio }),
      workspace: tenantName,
      run,
      steps,
      page,
      feedback: facts.feedback,
      budget: facts.budget,
      jsonMode: Boolean(facts.json),
      lookup,
    }),
  );
  const sent = maskDeep(
    facts.json ? [...built, { role: "system" as const, content: JSON_MODE_INSTRUCTIONS }] : built,
  );
  return { messages: sent, jsonMode: Boolean(facts.json), exact: fingerprint(sent) === facts.hash };
}
