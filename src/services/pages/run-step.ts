// One step of a run in full: what the model wrote and why, the whole page it saw, and the
// prompt it was sent, rebuilt from the run's records (step-prompt.ts) and checked against
// the fingerprint the worker kept. For whoever may see the run: its owner.

import { NotFoundError } from "../../lib/errors.ts";
import { loadRun } from "../access.ts";
import { loadAgent, mayManage } from "../agents/core/ownership.ts";
import { agentConfig, asPinnedBy, configUnder } from "../agents/core/settings.ts";
import { runActions } from "../agents/policy/capabilities.ts";
import { toolSpecs } from "../agents/policy/tool-grants.ts";
import { rebuildPrompt } from "../agents/prompt/step-prompt.ts";
import { REPLAYABLE } from "../agents/triggers/replay.ts";
import { modelCatalogue } from "../money/catalogue.ts";
import { parseLabel } from "../registry/audiences.ts";
import { fenced, link } from "../registry/markdown.ts";
import { type Block, definePage } from "../registry/types.ts";
import { agentCrumbs } from "./format.ts";
import { modelChoices } from "./model-choices.ts";
import { runPath, stepHead, stepPath, stepText } from "./run-steps.ts";
import { stepToolCall } from "./tools.ts";

function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  return JSON.stringify(content, null, 2);
}

/**
 * The user message as the log it is: the task and the log of the steps, each page where it
 * was read (whole from the log's page start, older ones as excerpts) — what the step before sent, with
 * this step's entry after it, the part a provider's cache serves — then what only this
 * step sends after it: the pointer to the current page, the steps left, any feedback.
 */
function userMessage(text: string, logChars: number): string {
  const log = text.slice(0, logChars);
  const rest = text.slice(logChars).replace(/^\n\n/, "");
  const whole = [...log.matchAll(/\n(\d+)\. [^\n]*\n(?: {3}your note: [^\n]*\n)?<page>\n/g)].map((m) => m[1]);
  const pages = whole.length
    ? `the pages of step${whole.length > 1 ? "s" : ""} ${whole.join(", ")} whole where they were read, older ones as excerpts`
    : "no page whole";
  if (!logChars) return fenced(text);
  return [
    `The task and the log (${log.length} characters; ${pages}): the step before's, with this step's entry after it, so a provider's prompt cache serves it.`,
    fenced(log),
    "Then what only this step sends: where the agent is, the steps left, any feedback.",
    fenced(rest),
  ].join("\n\n");
}

function withoutPrompt(step: { type: string; detail: unknown }): string {
  if ((step.detail as { auto?: unknown } | null)?.auto)
    return "No model call made this step: a run starts by reading /whoami.";
  if (step.type === "answer" || step.type === "approval")
    return "No model call made this step: it records an answer or a review.";
  return "This step was recorded before runs kept what rebuilding its prompt needs.";
}

export const runStepPage = definePage({
  pattern: "/subagents/:handle/runs/:run/steps/:step",
  actions: ["replay_run"],
  async resolve(ctx, params) {
    // The run page's own loaders: whoever may not see the run sees none of its steps.
    const agent = await loadAgent(ctx, params.handle);
    const taskRun = await loadRun(ctx, agent.id, params.run);
    const number = /^\d{1,6}$/.test(params.step) ? Number(params.step) : Number.NaN;
    const step = Number.isNaN(number)
      ? null
      : await ctx.db.subagentTaskRunStep.findUnique({
          where: { runId_number: { runId: taskRun.id, number } },
        });
    if (!step) throw new NotFoundError(`No step ${params.step} in run ${taskRun.id}`);
    return { agent, taskRun, step };
  },
  async render(ctx, scope) {
    const agent = scope.agent;
    const run = scope.taskRun;
    const step = scope.step;
    const page = (step.detail as { page?: unknown } | null)?.page;
    const cfg = run.policy ? configUnder(agent.agentConfig, run.policy) : agentConfig(agent);
    // Its prompt as it was built: a pinned run's agent as the pin made it (its prompt, a candidate's).
    const acting = asPinnedBy(agent, run);
    const prompt = await rebuildPrompt(ctx.db, run, acting, ctx.tenant.name, step.number, {
      usable: runActions(run, acting, ctx.tenant, ctx.actionDefs.values()),
      all: ctx.actionDefs,
      connected: await toolSpecs(ctx.db, acting, cfg.capabilities),
    });
    const nav = [
      step.number > 1
        ? link(`← Step ${step.number - 1}`, stepPath(agent.handle, run.id, step.number - 1))
        : null,
      link("The whole run", `${runPath(agent.handle, run.id)}#step-${step.number}`),
      step.number < run.stepsCount
        ? link(`Step ${step.number + 1} →`, stepPath(agent.handle, run.id, step.number + 1))
        : null,
    ];
    const blocks: Block[] = [
      { md: nav.filter(Boolean).join(" · ") },
      { md: `**${stepHead(step)}**\n\n${stepText(step) || "_Nothing more was recorded with this step._"}` },
    ];
    // Re-run from here, with the run's own model or another of the workspace's (its catalogue).
    if (REPLAYABLE.includes(run.status) && mayManage(ctx.actor, agent))
      blocks.push(
        {
          md: "## Re-run from here\n\nA new run that remembers the steps before this one (copied, not done again) and goes on live from here.",
        },
        {
          form: {
            action: "replay_run",
            fixed: {},
            label: "Re-run from here",
            style: "block",
            choices: {
              model: modelChoices(await modelCatalogue(ctx.db, ctx.tenant), [], "The run's own model"),
            },
          },
        },
      );
    blocks.push(...(await stepToolCall(ctx, step)));
    if (typeof page === "string")
      blocks.push({
        md: `## The page it saw (${step.path ? `\`${step.path}\`, ` : ""}${page.length} characters)\n\n${fenced(page, "markdown")}`,
      });
    if (prompt)
      blocks.push({
        md: [
          "## The prompt of this step",
          prompt.exact
            ? "Exactly what the model was sent (it matches the fingerprint the worker kept), masked as it was sent."
            : "Rebuilt from the run's records; it differs from what was sent (the fingerprint does not match): the agent's description, its owner's or the workspace's name changed since, or a page was longer than a step keeps.",
          prompt.jsonMode
            ? "The endpoint had no tool calling: the model answered in JSON mode."
            : prompt.toolsExact
              ? `With the tools ${names(prompt.tools)}.`
              : `With the tools ${names(prompt.tools)}, as rebuilt: the step did not keep its tools' fingerprint, or they differ from it (the agent's capabilities or Cadre's actions changed since).`,
          ...prompt.messages.map((m, i) => {
            const text = messageText(m.content);
            return `### ${i + 1}. ${m.role}\n\n${m.role === "user" && i === 1 ? userMessage(text, prompt.logChars) : fenced(text)}`;
          }),
        ].join("\n\n"),
      });
    else blocks.push({ md: `## The prompt of this step\n\n_${withoutPrompt(step)}_` });
    return {
      title: `Step ${step.number} of run ${run.id}`,
      breadcrumb: [
        ...agentCrumbs(agent),
        { label: "Runs", path: `/subagents/${agent.handle}/runs` },
        { label: run.id, path: runPath(agent.handle, run.id) },
        { label: `Step ${step.number}` },
      ],
      blocks,
      // The page it saw, its tool call's result and its prompt are what the run read: a
      // reader's label narrows by the run's, as by the pages themselves.
      sources: parseLabel(run.label),
    };
  },
});

const names = (tools: string[]) => tools.map((t) => `\`${t}\``).join(", ");
