// Starting an experiment: the agent's test cases run again as dry runs, under its current
// settings and a candidate's (agents/triggers/experiments.ts), within a cost cap named first.
// Managers only, as its cases and versions are; never an agent, whatever it is granted.
import { z } from "zod";
import { ValidationError } from "../../lib/errors.ts";
import { type Candidate, experimentPath } from "../agents/core/experiments.ts";
import { tenantSettings, versionedSettings } from "../agents/core/settings.ts";
import { loadVersion, settingsOf } from "../agents/core/versions.ts";
import { startExperiment } from "../agents/triggers/experiments.ts";
import { emit } from "../events.ts";
import { assertInCatalogue } from "../money/catalogue.ts";
import { toAgentManagers } from "../registry/audiences.ts";
import { type ActionCtx, type AgentScope, type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { optionalText } from "../validation.ts";
import { managersOnly } from "./managers-only.ts";

/** The most runs of one experiment at once (each case runs twice). */
export const MAX_PARALLEL = 40;

const onlyManagers = managersOnly("run its test cases");
const mayStart = (ctx: Ctx, scope: Scope) =>
  onlyManagers(ctx, scope) ??
  (tenantSettings(ctx.tenant).agents_enabled ? null : "agents are switched off in this workspace");

const params = z.object({
  try: z
    .enum(["prompt", "model", "version"])
    .default("prompt")
    .meta({
      label: "Try",
      optionLabels: {
        prompt: "Its current settings with the prompt below",
        model: "Its current settings with the model below",
        version: "One of its stored versions",
      },
    }),
  identity_prompt: z
    .string()
    .max(10_000, "at most 10,000 characters")
    .optional()
    .meta({
      label: "Prompt",
      multiline: true,
      description: "the identity prompt to try",
      shownWith: { field: "try", values: ["prompt"] },
    }),
  model: optionalText(200, "the model to try").meta({
    label: "Model",
    shownWith: { field: "try", values: ["model"] },
  }),
  version: z
    .number()
    .int("a whole number")
    .min(1, "at least 1")
    .optional()
    .meta({ label: "Version", shownWith: { field: "try", values: ["version"] } }),
  cost_cap_usd: z.number().positive("more than $0").max(1000, "at most $1,000").meta({
    label: "Cost cap (USD)",
    description: "the most all its runs together may cost; it stops there",
  }),
  parallel: z
    .number()
    .int("a whole number")
    .min(1, "at least 1")
    .max(MAX_PARALLEL, `at most ${MAX_PARALLEL}`)
    .default(10)
    .meta({ label: "At most this many runs at once" }),
});
type Params = z.infer<typeof params>;

const missing = (field: string, label: string, message: string) =>
  new ValidationError([{ field, label, message }]);

/** The candidate the params name, its whole settings, and its words; a 400 naming the field it lacks. */
async function candidateOf(
  ctx: ActionCtx,
  agent: AgentScope,
  p: Params,
): Promise<{ candidate: Candidate; settings: Record<string, unknown>; words: string }> {
  const current = versionedSettings(agent.agentConfig);
  if (p.try === "version") {
    if (!p.version) throw missing("version", "Version", "name the version to try");
    const found = await loadVersion(ctx.tx, agent.id, p.version);
    if (!found) throw missing("version", "Version", `${agent.name} has no version ${p.version}`);
    return {
      candidate: { kind: "version", version: p.version },
      settings: settingsOf(found.version),
      words: `version ${p.version}`,
    };
  }
  if (p.try === "model") {
    const model = p.model?.trim();
    if (!model) throw missing("model", "Model", "name the model to try");
    await assertInCatalogue(ctx.tx, ctx.tenant, { name: "model", label: "Model" }, [model]);
    return {
      candidate: { kind: "model", model },
      settings: { ...current, model },
      words: `model \`${model}\``,
    };
  }
  const prompt = p.identity_prompt ?? "";
  if (prompt === current.identity_prompt)
    throw missing("identity_prompt", "Prompt", "this is its prompt now: edit it to try another");
  return {
    candidate: { kind: "prompt", identity_prompt: prompt },
    settings: { ...current, identity_prompt: prompt },
    words: "an edited prompt",
  };
}

export const startExperimentAction = defineAction({
  name: "start_experiment",
  needs: ["agent"],
  description:
    "Run the agent's test cases as dry runs under its current settings and under a candidate (an edited prompt, another model, a stored version), side by side",
  params,
  writes: true,
  audience: toAgentManagers("experiment"),
  available: mayStart,
  async execute(ctx, p, scope) {
    const { agent } = scope;
    const { candidate, settings, words } = await candidateOf(ctx, agent, p);
    const id = await startExperiment(ctx.tx, ctx.tenant, agent, {
      actorId: ctx.actor.id,
      candidate,
      candidateWords: words,
      candidateSettings: settings,
      costCapMicros: BigInt(Math.round(p.cost_cap_usd * 1_000_000)),
      parallel: p.parallel,
    });
    await emit(ctx, {
      type: "subagent.experiment_started",
      subjectType: "user",
      subjectId: agent.id,
      payload: { experiment: id, candidate: candidate.kind, cost_cap_usd: p.cost_cap_usd },
    });
    return {
      status: 201,
      location: experimentPath(agent.handle, id),
      notice: `Started an experiment: its test cases on its current settings and on ${words}, as dry runs.`,
    };
  },
});
