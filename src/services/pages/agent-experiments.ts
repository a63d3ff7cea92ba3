// An agent's experiments as its managers see them: the list with each one's result and the
// form that starts one, and one experiment's results side by side (experiment-views.ts), with
// its CSV (routes/experiment-csv.ts). Managers only (loadAgent), as its cases and versions are.

import type { Db } from "../../db/prisma.ts";
import { NotFoundError } from "../../lib/errors.ts";
import {
  experimentPath,
  experimentResults,
  experimentsPath,
  listExperiments,
} from "../agents/core/experiments.ts";
import { loadAgent, mayManage } from "../agents/core/ownership.ts";
import { casesPath } from "../agents/core/test-cases.ts";
import { latestVersion, listVersions } from "../agents/core/versions.ts";
import { modelCatalogue } from "../money/catalogue.ts";
import { link, mdEscape } from "../registry/markdown.ts";
import { type AgentScope, type Block, type Ctx, definePage } from "../registry/types.ts";
import { caseBlock, stateWords, summaryLine } from "./experiment-views.ts";
import { agentCrumbs, excerpt, when } from "./format.ts";
import { modelChoices } from "./model-choices.ts";

const SHOWN = 20;

/** The agent's experiment `id`, or a 404: only within the agent its loader resolved. */
export async function loadExperiment(ctx: Ctx, agent: AgentScope, id: string) {
  const found = /^[a-z0-9]{6,32}$/.test(id)
    ? await ctx.db.agentExperiment.findFirst({
        where: { id, agentId: agent.id, tenantId: ctx.tenant.id },
        include: { createdBy: { select: { handle: true, name: true } } },
      })
    : null;
  if (!found) throw new NotFoundError(`No experiment ${id} of @${agent.handle}`);
  return found;
}

/** The form's fields: every param, so it stands in for the side panel's. */
const START_FIELDS = ["try", "identity_prompt", "model", "version", "cost_cap_usd", "parallel"];

/** The start form, in full: what to try (the workspace's models, the agent's versions to pick from), its cost cap, how many at once. */
export async function startForm(
  ctx: Ctx,
  agent: AgentScope,
  label = "Run the cases",
  style: "folded" | "block" = "block",
): Promise<Block> {
  const cfg = (agent.agentConfig ?? {}) as { identity_prompt?: string; model?: string };
  const [catalogue, { versions }] = await Promise.all([
    modelCatalogue(ctx.db, ctx.tenant),
    listVersions(ctx.db, agent.id, 0, 50),
  ]);
  const words = (changes: unknown) => (Array.isArray(changes) ? changes.join("; ") : "");
  return {
    form: {
      action: "start_experiment",
      fixed: {},
      label,
      style,
      fields: START_FIELDS,
      values: {
        identity_prompt: cfg.identity_prompt ?? "",
        model: cfg.model ?? "",
        cost_cap_usd: "1",
        parallel: "10",
      },
      choices: {
        model: modelChoices(catalogue, [cfg.model ?? ""], "Choose a model"),
        version: [
          { value: "", label: "Choose a version" },
          ...versions.map((version) => ({
            value: String(version.number),
            label: excerpt(`Version ${version.number}: ${words(version.changes)}`, 90),
          })),
        ],
      },
    },
  };
}

const caseCount = (db: Db, agentId: string) => db.agentTestCase.count({ where: { agentId } });

async function experimentLines(ctx: Ctx, agent: AgentScope): Promise<string[]> {
  const experiments = await listExperiments(ctx.db, agent.id, SHOWN);
  return Promise.all(
    experiments.map(async (experiment) => {
      const results = await experimentResults(ctx.db, experiment);
      const by = experiment.createdBy ? ` by @${experiment.createdBy.handle}` : "";
      return `- ${link(when(experiment.createdAt), experimentPath(agent.handle, experiment.id))}${by} · ${mdEscape(experiment.candidateWords)} · ${summaryLine(experiment, results)} · ${stateWords(experiment, results)}`;
    }),
  );
}

/**
 * On the agent's page, beside the form that saves its prompt and model: the last experiment
 * run on its current version and "Run the cases" with a candidate prompt or model, so a change
 * is tried on its test cases before anyone meets it. Its managers' only.
 */
export async function testBeforeSaving(ctx: Ctx, agent: AgentScope): Promise<Block[]> {
  if (!mayManage(ctx.actor, agent)) return [];
  const head = "## Try a change before you save it";
  const [cases, version] = await Promise.all([caseCount(ctx.db, agent.id), latestVersion(ctx.db, agent.id)]);
  if (!cases)
    return [
      {
        md: `${head}\n\n_No test cases yet: keep a run as one (**Save as a test case** on its page), then try a prompt or a model on them here before saving it._`,
      },
    ];
  const [last] = await ctx.db.agentExperiment.findMany({
    where: { agentId: agent.id, baselineVersion: version },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: 1,
  });
  // An agent whose settings were never saved since versions began has none to name.
  const onIt = version === null ? "its current settings" : `this version (${version})`;
  const lastLine = last
    ? `The last experiment on ${onIt}, ${link(when(last.createdAt), experimentPath(agent.handle, last.id))}: ${summaryLine(last, await experimentResults(ctx.db, last))}.`
    : `No experiment on ${onIt} yet.`;
  const about = `Runs its ${link(`${cases} test case${cases === 1 ? "" : "s"}`, casesPath(agent.handle))} as dry runs under its current settings and under the prompt or model you try, side by side.`;
  return [{ md: `${head}\n\n${lastLine} ${about}` }, await startForm(ctx, agent, "Run the cases", "folded")];
}

export const agentExperimentsPage = definePage({
  pattern: "/subagents/:handle/experiments",
  actions: ["start_experiment"],
  resolve: async (ctx, params) => ({ agent: await loadAgent(ctx, params.handle) }),
  async render(ctx, scope) {
    const agent = scope.agent;
    const [cases, lines] = await Promise.all([caseCount(ctx.db, agent.id), experimentLines(ctx, agent)]);
    return {
      title: `Experiments of ${agent.name}`,
      breadcrumb: [...agentCrumbs(agent), { label: "Experiments" }],
      blocks: [
        {
          md: `An experiment runs ${mdEscape(agent.name)}'s ${link(`${cases} test case${cases === 1 ? "" : "s"}`, casesPath(agent.handle))} twice each, as **dry runs** (they read for real and do nothing they write): once under its current settings and once under a candidate — an edited prompt, another model or a stored version — and shows them side by side. Their model calls, and a rubric's grading of them, are charged to it as evaluation spend, up to the cost cap you name.`,
        },
        ...(cases
          ? [await startForm(ctx, agent)]
          : [{ md: "_No test cases yet: save one from a run's page first._" }]),
        { md: `## Experiments (${lines.length})\n\n${lines.join("\n") || "_None yet._"}` },
      ],
    };
  },
});

export const agentExperimentPage = definePage({
  pattern: "/subagents/:handle/experiments/:experiment",
  actions: [],
  async resolve(ctx, params) {
    const agent = await loadAgent(ctx, params.handle);
    return { agent, experiment: await loadExperiment(ctx, agent, params.experiment) };
  },
  async render(ctx, scope) {
    const { agent, experiment } = scope;
    const results = await experimentResults(ctx.db, experiment);
    const by = experiment.createdBy
      ? ` by ${mdEscape(experiment.createdBy.name)} (@${experiment.createdBy.handle})`
      : "";
    return {
      title: `Experiment of ${agent.name}: ${experiment.candidateWords}`,
      breadcrumb: [
        ...agentCrumbs(agent),
        { label: "Experiments", path: experimentsPath(agent.handle) },
        { label: experiment.id },
      ],
      blocks: [
        {
          md: `Started ${when(experiment.createdAt)}${by} · at most ${experiment.parallel} runs at once · ${link("CSV", `${experimentPath(agent.handle, experiment.id)}/results.csv`)}`,
        },
        { md: stateWords(experiment, results) },
        { md: `## Results\n\n${summaryLine(experiment, results)}` },
        ...results.cases.map((result) => ({ md: caseBlock(agent.handle, experiment, result) })),
      ],
      // It quotes what its runs chose to write, which may quote what they read: a reader's label narrows by theirs.
      sources: results.sources,
    };
  },
});
