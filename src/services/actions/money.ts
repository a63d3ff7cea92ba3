// Paying for agents: your provider keys, which key an agent uses, its monthly limit and
// alerts, and (tenant admins) the tenant's price overrides.
import { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.ts";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import { agentsOf, keyHolder, keysOf, mayManage } from "../agents/core/ownership.ts";
import { agentConfig, MAX_COST_LIMIT_USD, tenantSettings } from "../agents/core/settings.ts";
import {
  checkBaseUrl,
  createKey,
  keyHint,
  PROVIDER_LABELS,
  PROVIDER_URLS,
  PROVIDERS,
  testKey,
} from "../money/keys.ts";
import { readBudget, spentThisMonth, toMicros } from "../money/ledger.ts";
import { priceSchema, type TenantPrices, usd } from "../money/pricing.ts";
import { toAgentManagers, toSelf } from "../registry/audiences.ts";
import { type ActionCtx, type Ctx, defineAction, type Scope } from "../registry/types.ts";
import { idSchema, text } from "../validation.ts";
import { saveConfig } from "./agent-settings.ts";

const peopleOnly = (ctx: Ctx) =>
  ctx.actor.kind === "person" ? null : "only people manage keys and spending";

/** On a usage page a workspace admin may read another's agent; only its managers change it. */
const ownerOnly = (ctx: Ctx, scope: Scope) =>
  peopleOnly(ctx) ?? (scope.agent && !mayManage(ctx.actor, scope.agent) ? "only its owner can" : null);

const dollars = z
  .number("a number of US dollars")
  .min(0, "at least 0")
  .max(MAX_COST_LIMIT_USD, `at most ${MAX_COST_LIMIT_USD}`);

export const addApiKey = defineAction({
  name: "add_api_key",
  description: "Add a provider API key your agents can use",
  manage: true,
  params: z.object({
    label: text(80).describe("a name you will recognise, e.g. “Work OpenAI”"),
    provider: z.enum(PROVIDERS).meta({
      description: "openai, anthropic, or openai_compatible (any OpenAI-compatible endpoint)",
      optionLabels: PROVIDER_LABELS,
    }),
    base_url: z.string().trim().max(500).optional().meta({
      label: "Base URL",
      description: "required for OpenAI-compatible, e.g. https://llm.example.com/v1; leave empty otherwise",
    }),
    key: z
      .string()
      .trim()
      .min(8, "at least 8 characters")
      .max(1000, "at most 1000 characters")
      .regex(/^\S+$/, "no spaces")
      .meta({
        label: "API key",
        secret: true,
        description: "stored encrypted; afterwards shown only as its last 4 characters",
      }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toSelf("API key"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const holder = keyHolder(scope);
    let baseUrl: string;
    if (params.provider === "openai_compatible") {
      if (!params.base_url)
        throw new ValidationError([
          { field: "base_url", message: "needed for an OpenAI-compatible provider" },
        ]);
      const bad = checkBaseUrl(params.base_url);
      if (bad) throw new ValidationError([{ field: "base_url", message: bad }]);
      baseUrl = params.base_url;
    } else {
      if (params.base_url)
        throw new ValidationError([
          {
            field: "base_url",
            message: `leave empty for ${params.provider}: its URL is ${PROVIDER_URLS[params.provider]}`,
          },
        ]);
      baseUrl = PROVIDER_URLS[params.provider];
    }
    const apiKey = await createKey(ctx.tx, {
      tenantId: ctx.tenant.id,
      holder: holder.kind === "studio" ? { studioId: holder.id } : { ownerId: holder.id },
      label: params.label,
      provider: params.provider,
      baseUrl,
      key: params.key,
    });
    return {
      status: 201,
      location: holder.path,
      notice: `Added “${apiKey.label}” (…${keyHint(params.key)}). Test it, then pick it on an agent's page.`,
    };
  },
});

/** A key is tested or revoked with the buttons beside it on the keys page, never by typing its id. */
const pickedKey = idSchema.meta({ label: "Key", pickedBeside: true, formerly: "key_id" });

async function ownKey(ctx: ActionCtx, scope: Scope, id: string) {
  const holder = keyHolder(scope);
  const apiKey = await ctx.tx.agentApiKey.findFirst({
    where: { id, tenantId: ctx.tenant.id, ...holder.where },
  });
  if (!apiKey)
    throw new NotFoundError(`No API key ${id} ${holder.kind === "studio" ? "of this studio" : "of yours"}`);
  return { holder, apiKey };
}

export const testApiKey = defineAction({
  name: "test_api_key",
  description: "Check that a key authenticates with its provider",
  params: z.object({ id: pickedKey }),
  writes: true,
  audience: toSelf("key test"),
  callsOut: true,
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { holder, apiKey } = await ownKey(ctx, scope, params.id);
    if (apiKey.revokedAt) throw new ConflictError(`“${apiKey.label}” is revoked`);
    const tested = await testKey(ctx.tx, apiKey);
    return {
      status: 200,
      location: holder.path,
      notice: `${tested.ok ? "✓" : "✗"} “${apiKey.label}” (…${apiKey.keyHint}): ${tested.message}`,
      warning: !tested.ok,
    };
  },
});

export const revokeApiKey = defineAction({
  name: "revoke_api_key",
  manage: true,
  destructive:
    "The key stops working at once: agents that use it fall back to no key until you pick another. This cannot be undone.",
  description: "Revoke a key: agents using it stop until you pick another",
  params: z.object({ id: pickedKey }),
  writes: true,
  audience: toSelf("API key"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { holder, apiKey } = await ownKey(ctx, scope, params.id);
    if (apiKey.revokedAt) throw new ConflictError(`“${apiKey.label}” is already revoked`);
    // The ciphertext goes too: a revoked key is never needed again.
    await ctx.tx.agentApiKey.update({
      where: { id: apiKey.id },
      data: { revokedAt: new Date(), encryptedKey: new Uint8Array(0) },
    });
    const users = await ctx.tx.user.findMany({
      where: { tenantId: ctx.tenant.id, ...agentsOf(holder) },
      select: { handle: true, agentConfig: true },
      orderBy: { handle: "asc" },
    });
    const using = users.filter((a) => agentConfig(a).api_key_id === apiKey.id).map((a) => `@${a.handle}`);
    return {
      status: 200,
      location: holder.path,
      notice: `Revoked “${apiKey.label}”.${using.length ? ` ${using.join(", ")} used it: pick another key on their pages, or their runs fail.` : ""}`,
    };
  },
});

export const setAgentApiKey = defineAction({
  name: "set_agent_api_key",
  needs: ["agent"],
  description: "Choose who pays for its model calls: one of your keys, or the shared endpoint",
  params: z.object({
    api_key: z
      .string()
      .trim()
      .regex(/^(shared|[a-z0-9]{6,32})$/, "`shared` or the id of one of your keys")
      .meta({
        label: "Pay for model calls with",
        description: "shared, or the id of one of your keys (listed on your API keys page)",
        pickedBeside: true,
      }),
  }),
  writes: true,
  audience: toAgentManagers("key choice"),
  available: ownerOnly,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    let label = "the shared endpoint";
    if (params.api_key !== "shared") {
      const apiKey = await ctx.tx.agentApiKey.findFirst({
        where: { id: params.api_key, tenantId: ctx.tenant.id, ...keysOf(agent) },
      });
      if (!apiKey)
        throw new ValidationError([
          {
            field: "api_key",
            message: agent.ownerStudioId ? "not one of its studio's keys" : "not one of your keys",
          },
        ]);
      if (apiKey.revokedAt)
        throw new ValidationError([{ field: "api_key", message: `“${apiKey.label}” is revoked` }]);
      label = `“${apiKey.label}” (…${apiKey.keyHint})`;
    }
    await saveConfig(ctx, scope.agent, (config) => {
      if (params.api_key === "shared") delete config.api_key_id;
      else config.api_key_id = params.api_key;
    });
    return {
      status: 200,
      location: `/subagents/${agent.handle}`,
      notice: `@${agent.handle} now uses ${label}`,
    };
  },
});

/** "1, $5 10": the amounts as typed; "none" is how a form clears them (an emptied field leaves them unchanged). */
function thresholdParts(raw: string): string[] {
  if (/^none$/i.test(raw.trim())) return [];
  return raw
    .split(/[,\s]+/)
    .map((part) => part.replace(/^\$/, ""))
    .filter(Boolean);
}

/** What is wrong with the thresholds, checked with the rest of the schema so a form is answered once. */
function thresholdsProblem(raw: string): string | null {
  const parts = thresholdParts(raw);
  const bad = parts.find((part) => !Number.isFinite(Number(part)) || Number(part) <= 0);
  if (bad !== undefined) return `“${bad}” is not a positive amount`;
  // Past any limit it could never alert, and a typo like 1e300 is no amount of money.
  const huge = parts.find((part) => Number(part) > MAX_COST_LIMIT_USD);
  if (huge !== undefined) return `“${huge}” is more than ${usd(toMicros(MAX_COST_LIMIT_USD))}`;
  return parts.length > 10 ? "at most 10 thresholds" : null;
}

const parseThresholds = (raw: string): number[] =>
  [...new Set(thresholdParts(raw).map(Number))].sort((a, b) => a - b);

export const setCostLimit = defineAction({
  name: "set_cost_limit",
  needs: ["agent"],
  description: "Set its monthly cost limit and spend alerts",
  params: z.object({
    monthly_limit_usd: dollars.meta({
      label: "Monthly limit (USD)",
      description: "runs stop and it pauses when this month's spend reaches it",
    }),
    alert_thresholds_usd: z
      .string()
      .trim()
      .max(200)
      .superRefine((raw, check) => {
        const problem = thresholdsProblem(raw);
        if (problem) check.addIssue({ code: "custom", message: problem });
      })
      .optional()
      .meta({
        label: "Alert at (USD)",
        description: "amounts that notify you once a month, e.g. 1, 5, 10, 50 (none: no alerts)",
      }),
  }),
  writes: true,
  audience: toAgentManagers("cost limit"),
  available: ownerOnly,
  async execute(ctx, params, scope) {
    const { agent } = scope;
    const thresholds =
      params.alert_thresholds_usd === undefined ? undefined : parseThresholds(params.alert_thresholds_usd);
    await saveConfig(ctx, scope.agent, (config) => {
      config.cost_limit_usd = params.monthly_limit_usd;
      if (thresholds) config.alert_thresholds_usd = thresholds;
    });
    // Read again now that the update holds its row: the page was read before this
    // transaction, and the ledger may have paused the agent since.
    const now = await ctx.tx.user.findUniqueOrThrow({
      where: { id: agent.id },
      select: { pausedAt: true, pausedKind: true },
    });
    const spent = await spentThisMonth(ctx.tx, agent.id);
    let notice = `Limit set to ${usd(toMicros(params.monthly_limit_usd))} a month (${usd(spent)} spent so far).`;
    // Raising the limit past the spend undoes the pause the limit caused; an owner's own pause stays.
    if (now.pausedAt && now.pausedKind === "cost_limit") {
      if (spent < toMicros(params.monthly_limit_usd)) {
        await ctx.tx.user.update({
          where: { id: agent.id },
          data: { pausedAt: null, pausedReason: null, pausedKind: null },
        });
        notice += ` @${agent.handle} is running again.`;
      } else notice += ` Still at the limit: @${agent.handle} stays paused.`;
    } else if (spent >= toMicros(params.monthly_limit_usd))
      notice += ` That is already spent: its next run stops before calling the model, and it pauses.`;
    return { status: 200, location: `/subagents/${agent.handle}/usage`, notice };
  },
});

/** Resuming an agent the limit paused, while still at the limit, would only pause it again. */
export async function assertUnderLimit(ctx: ActionCtx, agentId: string) {
  const budget = await readBudget(ctx.tx, agentId);
  if (budget.spentMicros >= budget.limitMicros)
    throw new ConflictError(
      `It has spent ${usd(budget.spentMicros)} of its ${usd(budget.limitMicros)} limit this month: raise the limit first (on its usage page).`,
    );
}

const adminOnly = (ctx: Ctx) => (ctx.actor.tenantAdmin ? null : "only workspace admins set prices");

const modelName = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(200)
  .regex(/^[\w./:@-]+$/, "letters, digits and . / : @ - _ only")
  // Stored as a JSON object key: `__proto__` would be accepted and then silently lost.
  .refine((m) => m !== "__proto__", "a reserved name");

/**
 * The workspace's price keys that name `model`. Prices match model ids case-insensitively
 * (pricing.ts listName), so `GPT-X` and `gpt-x` are one price: setting one replaces the
 * other (else the older would keep winning), and removing either removes it.
 */
const sameModel = (pricing: object, model: string) =>
  Object.keys(pricing).filter((k) => k.toLowerCase() === model.toLowerCase());

/** Read-modify-write of the tenant's price overrides, under the tenant row's lock. */
async function changePricing(ctx: ActionCtx, change: (pricing: TenantPrices) => void) {
  if (!ctx.actor.tenantAdmin) throw new ForbiddenError("only workspace admins set prices");
  await ctx.tx.$queryRaw`SELECT id FROM tenants WHERE id = ${ctx.tenant.id} FOR UPDATE`;
  const tenant = await ctx.tx.tenant.findUniqueOrThrow({ where: { id: ctx.tenant.id } });
  const pricing = { ...tenantSettings(tenant).pricing };
  change(pricing);
  const settings = (tenant.settings ?? {}) as Record<string, unknown>;
  await ctx.tx.tenant.update({
    where: { id: tenant.id },
    data: { settings: { ...settings, pricing } as Prisma.InputJsonValue },
  });
}

export const setModelPrice = defineAction({
  name: "set_model_price",
  description: "Price a model for this workspace (USD per million tokens), over the built-in list",
  params: z.object({
    model: modelName,
    input: priceSchema.shape.input.describe("USD per 1M input tokens"),
    cached_input: priceSchema.shape.cached_input.describe("USD per 1M cached input tokens"),
    cache_write_input: priceSchema.shape.cache_write_input.describe(
      "USD per 1M input tokens written to the prompt cache (Anthropic, GPT-5.6 and later); empty: 1.25 × the input price",
    ),
    output: priceSchema.shape.output.describe("USD per 1M output tokens"),
  }),
  writes: true,
  audience: toSelf("price"),
  available: adminOnly,
  async execute(ctx, params) {
    await changePricing(ctx, (pricing) => {
      for (const model of sameModel(pricing, params.model)) delete pricing[model];
      pricing[params.model] = {
        input: params.input,
        cached_input: params.cached_input,
        ...(params.cache_write_input !== undefined && { cache_write_input: params.cache_write_input }),
        output: params.output,
      };
    });
    return { status: 200, location: "/usage/pricing", notice: `Priced ${params.model} for this workspace` };
  },
});

export const removeModelPrice = defineAction({
  name: "remove_model_price",
  description: "Drop a workspace price: the built-in list applies again",
  params: z.object({ model: modelName }),
  writes: true,
  audience: toSelf("price"),
  available: adminOnly,
  async execute(ctx, params) {
    await changePricing(ctx, (pricing) => {
      // Own keys only: `in` would also find `constructor` and `toString` on an empty object.
      const names = sameModel(pricing, params.model);
      if (!names.length) throw new NotFoundError(`No workspace price for ${params.model}`);
      for (const name of names) delete pricing[name];
    });
    return {
      status: 200,
      location: "/usage/pricing",
      notice: `Removed the workspace price for ${params.model}`,
    };
  },
});
