import { agentConfig } from "../agents/settings.ts";
import { PROVIDER_LABELS, type Provider } from "../money/keys.ts";
import { usd } from "../money/pricing.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import type { Block, PageDef } from "../registry/types.ts";
import { home, when } from "./format.ts";
import { ownSettings } from "./settings.ts";

export const apiKeysPage: PageDef = {
  pattern: "/u/:handle/settings/api-keys",
  actions: ["add_api_key", "test_api_key", "revoke_api_key"],
  resolve: (ctx, p) => ownSettings(ctx, p.handle!),
  async render(ctx, scope) {
    const u = scope.user!;
    const [keys, agents] = await Promise.all([
      ctx.db.agentApiKey.findMany({
        where: { tenantId: ctx.tenant.id, ownerId: u.id },
        orderBy: [{ revokedAt: { sort: "desc", nulls: "first" } }, { createdAt: "desc" }],
      }),
      ctx.db.user.findMany({
        where: { tenantId: ctx.tenant.id, parentId: u.id, kind: "subagent" },
        select: { handle: true, agentConfig: true },
        orderBy: { handle: "asc" },
      }),
    ]);
    const usedBy = (id: string) =>
      agents
        .filter((a) => agentConfig(a).api_key_id === id)
        .map((a) => link(`@${a.handle}`, `/subagents/${a.handle}`))
        .join(", ") || "—";
    const status = (k: (typeof keys)[number]) =>
      k.revokedAt
        ? `revoked ${when(k.revokedAt)}`
        : k.authFailedAt
          ? `**refused by the provider** ${when(k.authFailedAt)}`
          : k.lastTestedAt
            ? `${k.lastTestOk ? "✓ works" : "✗ test failed"} (tested ${when(k.lastTestedAt)})`
            : "not tested yet";
    // One section per key, its buttons beneath it: an 11-column table does not fit a card.
    const perKey: Block[] = keys.flatMap((k): Block[] => {
      const tokens = (Number(k.totalInputTokens) + Number(k.totalOutputTokens)).toLocaleString("en-US");
      const card: Block = {
        md: [
          `### ${mdEscape(k.label)} · ${code(`…${k.keyHint}`)}`,
          "",
          `${PROVIDER_LABELS[k.provider as Provider] ?? mdEscape(k.provider)} at \`${mdEscape(k.baseUrl)}\` · id \`${k.id}\` · added ${when(k.createdAt)}  `,
          `Status: ${status(k)}${k.authError && !k.revokedAt ? ` — ${mdEscape(k.authError)}` : ""}  `,
          `Usage: ${k.totalCalls.toLocaleString("en-US")} calls · ${tokens} tokens · ${usd(k.totalCostMicros)} · last used ${k.lastUsedAt ? when(k.lastUsedAt) : "never"} · used by ${usedBy(k.id)}`,
        ].join("\n"),
      };
      if (k.revokedAt) return [card];
      return [
        card,
        { form: { action: "test_api_key", fixed: { key_id: k.id }, label: "Test" } },
        { form: { action: "revoke_api_key", fixed: { key_id: k.id }, label: "Revoke" } },
      ];
    });
    return {
      title: "Model API keys",
      breadcrumb: [
        home,
        { label: `@${u.handle}`, path: `/u/${u.handle}` },
        { label: "Settings", path: `/u/${u.handle}/settings` },
        { label: "Model API keys" },
      ],
      blocks: [
        {
          md: "Your own provider keys (OpenAI, Anthropic, or any OpenAI-compatible endpoint). An agent set to use one calls that provider directly and the spend is on your account; agents without one use the workspace's shared endpoint. A key is encrypted at rest and shown only as its last four characters.",
        },
        ...(perKey.length ? perKey : [{ md: "_No keys yet: add one with the form._" }]),
        {
          md: `Pick a key for an agent on the agent's page (${link("your subagents", "/subagents")}); see what they spend on ${link("the usage dashboard", "/usage")}.`,
        },
      ],
    };
  },
};
