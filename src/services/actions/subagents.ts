import { z } from "zod";
import { conflictOnDuplicate } from "../../db/prisma.ts";
import { ConflictError, type Issue, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { mayManage } from "../agents/core/ownership.ts";
import {
  agentConfig,
  DESCRIPTION_MAX,
  MAX_FALLBACK_MODELS,
  MAX_STEPS_LIMIT,
  newAgentCapabilities,
  tenantSettings,
} from "../agents/core/settings.ts";
import { recordVersion } from "../agents/core/versions.ts";
import { expireAgentPending } from "../agents/policy/approvals.ts";
import { emit } from "../events.ts";
import { catalogueIssues } from "../money/catalogue.ts";
import { toAgentManagers, toSelf } from "../registry/audiences.ts";
import { type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { handleSchema, longText, optionalText, text } from "../validation.ts";
import { adminStudio, settleInStudio } from "./agent-ownership.ts";
import { saveConfig } from "./agent-settings.ts";
import { assertUnderLimit } from "./money.ts";

const peopleOnly = (ctx: Ctx) => (ctx.actor.kind === "person" ? null : "only people can manage subagents");

/** A studio's agent is a member of its own studio only: it joins or leaves no other. */
const ownStudioOnly = (scope: Scope) =>
  scope.agent?.ownerStudio ? `it belongs to ${scope.agent.ownerStudio.name} and acts only there` : null;

const maxSteps = z
  .number()
  .int("a whole number")
  .min(1, "at least 1")
  .max(MAX_STEPS_LIMIT, `at most ${MAX_STEPS_LIMIT}`)
  .describe(`steps per run (1–${MAX_STEPS_LIMIT}, default 30)`);
const modelName = z
  .string()
  .trim()
  .max(200)
  .regex(/^[\w./:@-]*$/, "letters, digits and . / : @ - _ only");

const MODEL_FIELD = { name: "model", label: "Model" };
const FALLBACK_FIELD = { name: "fallback_models", label: "Fallback models" };

/** "a, b c": the fallback models as a list. */
const fallbackList = (raw: string): string[] => [...new Set(raw.split(/[\s,]+/).filter(Boolean))];

/** What is wrong with a list of fallback models, checked with the rest of the schema: each a model's name, a few at most. */
function fallbackProblem(raw: string): string | null {
  const names = fallbackList(raw);
  const bad = names.find((n) => !modelName.safeParse(n).success || n.length > 200);
  if (bad) return `“${bad.slice(0, 40)}”: letters, digits and . / : @ - _ only`;
  return names.length > MAX_FALLBACK_MODELS ? `at most ${MAX_FALLBACK_MODELS} models` : null;
}

/** The models a request names are ones the workspace offers: read from what was sent, so it runs beside the schema (ActionDef.check). */
function modelIssues(ctx: Ctx, sent: Record<string, unknown>): Promise<Issue[]> {
  const model = typeof sent.model === "string" ? sent.model.trim() : "";
  const fallbacks = typeof sent.fallback_models === "string" ? fallbackList(sent.fallback_models) : [];
  return catalogueProblems(ctx, model, fallbacks);
}

/** A model and fallbacks not in the workspace's catalogue, named by their fields' labels (a restore checks a version's too). */
export async function catalogueProblems(ctx: Ctx, model: string, fallbacks: string[]): Promise<Issue[]> {
  const [models, fallback] = await Promise.all([
    catalogueIssues(ctx.db, ctx.tenant, MODEL_FIELD, model ? [model] : []),
    catalogueIssues(
      ctx.db,
      ctx.tenant,
      FALLBACK_FIELD,
      fallbacks.filter((n) => modelName.safeParse(n).success),
    ),
  ]);
  return [...models, ...fallback];
}

export const createSubagent = defineAction({
  name: "create_subagent",
  description: "Create a subagent: an AI user you own, or one a studio you administer owns",
  params: z.object({
    name: text(80),
    handle: handleSchema.describe("how people @mention it"),
    studio: handleSchema.optional().meta({
      label: "Owned by",
      description: "you (empty), or a studio you administer: its admins then manage it together",
    }),
    identity_prompt: longText(10_000, "who it is and how it should behave").optional(),
    model: modelName
      .optional()
      .meta({ label: "Model", description: "leave empty for the workspace default" }),
    max_steps: maxSteps.optional(),
  }),
  writes: true,
  audience: toSelf("agent"),
  check: modelIssues,
  // On a studio's page: its admins create the studio's agents there.
  available: (ctx, scope) =>
    peopleOnly(ctx) ??
    (scope.studio && scope.studio.role !== "admin" ? "only the studio's admins create its agents" : null),
  async execute(ctx, params, scope) {
    const taken = await ctx.tx.user.findUnique({
      where: { tenantId_handle: { tenantId: ctx.tenant.id, handle: params.handle } },
    });
    if (taken) throw new ConflictError(`The handle @${params.handle} is taken`);
    // On a studio's page the studio owns what its admin creates there.
    const owner = params.studio ?? scope.studio?.handle;
    const studio = owner ? await adminStudio(ctx, owner) : null;
    const agent = await ctx.tx.user
      .create({
        data: {
          id: newId(),
          tenantId: ctx.tenant.id,
          handle: params.handle,
          name: params.name,
          kind: "subagent",
          parentId: studio ? null : ctx.actor.id,
          ownerStudioId: studio?.id ?? null,
          agentConfig: {
            identity_prompt: params.identity_prompt ?? "",
            ...(params.model && { model: params.model }),
            max_steps: params.max_steps ?? 30,
            // What the workspace's admins chose for new agents (/settings/agents), when they chose.
            ...(tenantSettings(ctx.tenant).default_capabilities && {
              capabilities: newAgentCapabilities(tenantSettings(ctx.tenant)),
            }),
          },
        },
      })
      .catch(conflictOnDuplicate(`The handle @${params.handle} is taken`));
    // Its first version: what it was created with.
    await recordVersion(ctx.tx, {
      tenantId: ctx.tenant.id,
      agentId: agent.id,
      authorId: ctx.actor.id,
      before: null,
      after: agent.agentConfig,
    });
    await emit(ctx, { type: "subagent.created", subjectType: "user", subjectId: agent.id });
    if (studio) await settleInStudio(ctx, agent.id, studio);
    return {
      status: 201,
      location: `/subagents/${agent.handle}`,
      notice: `Created @${agent.handle}${studio ? `, owned by ${studio.name}` : ""}`,
    };
  },
});

export const updateSubagent = defineAction({
  name: "update_subagent",
  needs: ["agent"],
  description: "Change its name, what it does, its identity prompt, model, or step and time limits",
  params: z.object({
    name: optionalText(80).meta({ clears: true }),
    description: z
      .string()
      .trim()
      .max(DESCRIPTION_MAX, `at most ${DESCRIPTION_MAX} characters`)
      .meta({
        label: "What it does",
        description: "a sentence for the people who may ask it: the directory and its profile show it",
        clears: true,
      })
      .optional(),
    // Emptied in a form, these clear: no identity prompt, the workspace's default model.
    identity_prompt: z.string().trim().max(10_000).meta({ multiline: true, clears: true }).optional(),
    model: modelName
      .optional()
      .meta({ label: "Model", description: "empty for the workspace default", clears: true }),
    fallback_models: z
      .string()
      .trim()
      .max(700)
      .meta({
        label: "Fallback models",
        description: `tried in order when its model's endpoint fails for good; up to ${MAX_FALLBACK_MODELS}, comma-separated`,
        clears: true,
      })
      .superRefine((raw, check) => {
        const problem = fallbackProblem(raw);
        if (problem) check.addIssue({ code: "custom", message: problem });
      })
      .optional(),
    max_steps: maxSteps.optional(),
    timeout_seconds: z
      .number()
      .int("a whole number")
      .min(10, "at least 10")
      .max(3600, "at most 3600")
      .optional(),
    subscription_window_seconds: z
      .number()
      .int("a whole number")
      .min(0, "at least 0")
      .max(3600, "at most 3600")
      .optional()
      .describe("seconds a burst of watched events gathers into one run (default 30; 0: each at once)"),
  }),
  writes: true,
  audience: toAgentManagers("setting"),
  check: modelIssues,
  available: peopleOnly,
  current(scope) {
    if (!scope.agent) return {};
    const config = agentConfig(scope.agent);
    return {
      name: scope.agent.name,
      description: config.description,
      identity_prompt: config.identity_prompt,
      model: config.model ?? "",
      fallback_models: config.fallback_models.join(", "),
      max_steps: config.max_steps,
      timeout_seconds: config.timeout_seconds,
      subscription_window_seconds: config.subscription_window_seconds,
    };
  },
  async execute(ctx, params, scope) {
    const { agent } = scope;
    if (Object.values(params).every((v) => v === undefined))
      throw new ValidationError([{ field: "", message: "nothing to change" }]);
    if (params.name !== undefined && !params.name)
      throw new ValidationError([{ field: "name", message: "must not be empty" }]);
    const fallbacks = params.fallback_models === undefined ? undefined : fallbackList(params.fallback_models);
    // Under the row's lock (saveConfig): two managers saving at once never tear the config.
    await saveConfig(ctx, scope.agent, (config) => {
      if (params.identity_prompt !== undefined) config.identity_prompt = params.identity_prompt;
      if (params.description !== undefined) config.description = params.description;
      if (params.model !== undefined) {
        if (params.model) config.model = params.model;
        else delete config.model;
      }
      if (fallbacks) config.fallback_models = fallbacks;
      for (const field of ["max_steps", "timeout_seconds", "subscription_window_seconds"] as const)
        if (params[field] !== undefined) config[field] = params[field];
    });
    if (params.name) await ctx.tx.user.update({ where: { id: agent.id }, data: { name: params.name } });
    return { status: 200, location: `/subagents/${agent.handle}`, notice: "Saved" };
  },
});

export const addToStudio = defineAction({
  name: "add_to_studio",
  needs: ["agent"],
  description: "Add it to one of your studios, so it can be mentioned there",
  // Chosen from a select of the studios you are in (its page fills it), never typed.
  params: z.object({
    studio: handleSchema.meta({ label: "Studio", description: "the studio's handle", pickedBeside: true }),
  }),
  writes: true,
  audience: toAgentManagers("studio membership"),
  available: (ctx, scope) => peopleOnly(ctx) ?? ownStudioOnly(scope),
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const studio = await ctx.tx.studio.findFirst({
      where: { tenantId: ctx.tenant.id, handle: params.studio, members: { some: { userId: ctx.actor.id } } },
    });
    if (!studio)
      throw new ValidationError([
        { field: "studio", message: "you are not a member of a studio with this handle" },
      ]);
    const created = await ctx.tx.studioMember.createMany({
      data: [{ studioId: studio.id, userId: agent.id, tenantId: ctx.tenant.id }],
      skipDuplicates: true,
    });
    if (!created.count) throw new ConflictError(`@${agent.handle} is already in ${studio.name}`);
    await emit(ctx, { type: "studio.joined", studioId: studio.id, subjectType: "user", subjectId: agent.id });
    return { status: 200, location: `/subagents/${agent.handle}`, notice: `Added to ${studio.name}` };
  },
});

export const removeFromStudio = defineAction({
  name: "remove_from_studio",
  needs: ["agent"],
  description: "Take it out of a studio",
  params: z.object({
    studio: handleSchema.meta({ label: "Studio", description: "the studio's handle", pickedBeside: true }),
  }),
  writes: true,
  audience: toAgentManagers("studio membership"),
  available: (ctx, scope) => peopleOnly(ctx) ?? ownStudioOnly(scope),
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const removed = await ctx.tx.studioMember.deleteMany({
      where: { userId: agent.id, tenantId: ctx.tenant.id, studio: { handle: params.studio } },
    });
    if (!removed.count) throw new NotFoundError(`@${agent.handle} is not in a studio \`${params.studio}\``);
    return { status: 200, location: `/subagents/${agent.handle}`, notice: `Removed from ${params.studio}` };
  },
});

function archiveAction(archive: boolean) {
  return defineAction({
    name: archive ? "archive_subagent" : "unarchive_subagent",
    needs: ["agent"],
    destructive: archive
      ? "It stops answering mentions, subscriptions, schedules and webhooks, its queued runs are cancelled, and the actions waiting for your approval expire."
      : undefined,
    description: archive ? "Archive it: no more triggers or runs" : "Bring it back from the archive",
    params: z.object({}),
    writes: true,
    audience: toAgentManagers("archive"),
    available: (ctx, scope) =>
      peopleOnly(ctx) ??
      (Boolean(scope.agent?.archivedAt) === archive ? (archive ? "already archived" : "not archived") : null),
    async execute(ctx, _params, scope) {
      const { agent } = scope;
      await ctx.tx.user.update({
        where: { id: agent.id },
        data: { archivedAt: archive ? new Date() : null },
      });
      if (archive) {
        // Queued work would otherwise run after the owner said stop.
        await ctx.tx.subagentTaskRun.updateMany({
          where: { agentId: agent.id, status: { in: ["queued", "waiting"] } },
          data: { status: "cancelled", stopReason: "archived", completedAt: new Date() },
        });
        await expireAgentPending(ctx.tx, agent);
      }
      return {
        status: 200,
        location: `/subagents/${agent.handle}`,
        notice: archive ? "Archived" : "Restored",
      };
    },
  });
}

export const archiveSubagent = archiveAction(true);
export const unarchiveSubagent = archiveAction(false);

function pauseAction(pause: boolean) {
  return defineAction({
    name: pause ? "pause_subagent" : "resume_subagent",
    needs: ["agent"],
    description: pause
      ? "Pause it: triggers are recorded as skipped until you resume"
      : "Resume it: triggers start runs again",
    params: pause ? z.object({ reason: optionalText(200, "why, for the record") }) : z.object({}),
    writes: true,
    audience: toAgentManagers("pause"),
    available: (ctx, scope) =>
      peopleOnly(ctx) ??
      // A workspace admin reads any agent's usage page; only its managers pause or resume it.
      (scope.agent && !mayManage(ctx.actor, scope.agent) ? "only its owner can" : null) ??
      (Boolean(scope.agent?.pausedAt) === pause ? (pause ? "already paused" : "not paused") : null),
    async execute(ctx, params, scope) {
      const { agent } = scope;
      const reason = (params as { reason?: string }).reason;
      if (!pause) {
        // Under the row's lock: the ledger may have paused it at its limit since the page was read.
        const [now] = await ctx.tx.$queryRaw<{ paused_kind: string | null }[]>`
          SELECT paused_kind FROM users WHERE id = ${agent.id} FOR UPDATE`;
        if (now?.paused_kind === "cost_limit") await assertUnderLimit(ctx, agent.id);
      }
      await ctx.tx.user.update({
        where: { id: agent.id },
        data: pause
          ? { pausedAt: new Date(), pausedReason: reason || "paused by its owner", pausedKind: "owner" }
          : { pausedAt: null, pausedReason: null, pausedKind: null },
      });
      return { status: 200, location: `/subagents/${agent.handle}`, notice: pause ? "Paused" : "Resumed" };
    },
  });
}

export const pauseSubagent = pauseAction(true);
export const resumeSubagent = pauseAction(false);
