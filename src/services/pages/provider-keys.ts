import { loadStudio } from "../access.ts";
import { agentsOf, type KeyHolder, keyHolder } from "../agents/core/ownership.ts";
import { agentConfig } from "../agents/core/settings.ts";
import { PROVIDER_LABELS, type Provider } from "../money/keys.ts";
import { usd } from "../money/pricing.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import { type Block, type Ctx, definePage } from "../registry/types.ts";
import { home, when } from "./format.ts";
import { ownSettings } from "./settings.ts";

/** A holder's keys, each with its status, usage, the agents using it and its buttons. */
async function keyBlocks(ctx: Ctx, holder: KeyHolder): Promise<Block[]> {
  const [keys, agents] = await Promise.all([
    ctx.db.agentApiKey.findMany({
      where: { tenantId: ctx.tenant.id, ...holder.where },
      orderBy: [{ revokedAt: { sort: "desc", nulls: "first" } }, { createdAt: "desc" }],
    }),
    ctx.db.user.findMany({
      where: { tenantId: ctx.tenant.id, ...agentsOf(holder) },
      select: { handle: true, agentConfig: true },
      orderBy: { handle: "asc" },
    }),
  ]);
  const usedBy = (id: string) =>
    agents
      .filter((a) => agentConfig(a).api_key_id === id)
      .map((a) => link(`@${a.handle}`, `/subagents/${a.handle}`))
      .join(", ") || "—";
  const status = (key: (typeof keys)[number]) =>
    key.revokedAt
      ? `revoked ${when(key.revokedAt)}`
      : key.authFailedAt
        ? `**refused by the provider** ${when(key.authFailedAt)}`
        : key.lastTestedAt
          ? `${key.lastTestOk ? "✓ works" : "✗ test failed"} (tested ${when(key.lastTestedAt)})`
          : "not tested yet";
  // One section per key, its buttons beneath it: an 11-column table does not fit a card.
  const perKey: Block[] = keys.flatMap((key): Block[] => {
    const tokens = (Number(key.totalInputTokens) + Number(key.totalOutputTokens)).toLocaleString("en-US");
    const card: Block = {
      md: [
        `### ${mdEscape(key.label)} · ${code(`…${key.keyHint}`)}`,
        "",
        `${PROVIDER_LABELS[key.provider as Provider] ?? mdEscape(key.provider)} at \`${mdEscape(key.baseUrl)}\` · id \`${key.id}\` · added ${when(key.createdAt)}  `,
        `Status: ${status(key)}${key.authError && !key.revokedAt ? ` — ${mdEscape(key.authError)}` : ""}  `,
        `Usage: ${key.totalCalls.toLocaleString("en-US")} calls · ${tokens} tokens · ${usd(key.totalCostMicros)} · last used ${key.lastUsedAt ? when(key.lastUsedAt) : "never"} · used by ${usedBy(key.id)}`,
      ].join("\n"),
    };
    if (key.revokedAt) return [card];
    return [
      card,
      { form: { action: "test_api_key", fixed: { id: key.id }, label: "Test" } },
      { form: { action: "revoke_api_key", fixed: { id: key.id }, label: "Revoke" } },
    ];
  });
  return perKey.length ? perKey : [{ md: "_No keys yet: add one with the form._" }];
}

export const providerKeysPage = definePage({
  pattern: "/u/:handle/settings/api-keys",
  actions: ["add_api_key", "test_api_key", "revoke_api_key"],
  resolve: (ctx, params) => ownSettings(ctx, params.handle),
  async render(ctx, scope) {
    const user = scope.user;
    return {
      title: "Model API keys",
      breadcrumb: [
        home,
        { label: `@${user.handle}`, path: `/u/${user.handle}` },
        { label: "Settings", path: `/u/${user.handle}/settings` },
        { label: "Model API keys" },
      ],
      blocks: [
        {
          md: "Your own provider keys (OpenAI, Anthropic, or any OpenAI-compatible endpoint). An agent set to use one calls that provider directly and the spend is on your account; agents without one use the workspace's shared endpoint. A key is encrypted at rest and shown only as its last four characters.",
        },
        ...(await keyBlocks(ctx, keyHolder(scope))),
        {
          md: `Pick a key for an agent on the agent's page (${link("your subagents", "/subagents")}); see what they spend on ${link("the usage dashboard", "/usage")}.`,
        },
      ],
    };
  },
});

export const studioProviderKeysPage = definePage({
  pattern: "/studios/:studio/settings/api-keys",
  actions: ["add_api_key", "test_api_key", "revoke_api_key"],
  async resolve(ctx, params) {
    const scope = { studio: await loadStudio(ctx, params.studio) };
    keyHolder(scope); // its admins only: a member gets a 403 saying so
    return scope;
  },
  async render(ctx, scope) {
    const studio = scope.studio;
    return {
      title: `Model API keys of ${studio.name}`,
      breadcrumb: [
        home,
        { label: studio.name, path: `/studios/${studio.handle}` },
        { label: "Model API keys" },
      ],
      blocks: [
        {
          md: `Provider keys that pay for ${mdEscape(studio.name)}'s own agents (the agents the studio owns). Only its admins see, add, test and revoke them, and pick them on those agents' pages. A key is encrypted at rest and shown only as its last four characters.`,
        },
        ...(await keyBlocks(ctx, keyHolder(scope))),
        {
          md: `See what the studio's agents spend on ${link("its usage page", `/studios/${studio.handle}/usage`)}.`,
        },
      ],
    };
  },
});
