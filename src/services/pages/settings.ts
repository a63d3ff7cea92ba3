import { NotFoundError } from "../../lib/errors.ts";
import { loadUser } from "../access.ts";
import { link, mdEscape, quote } from "../registry/markdown.ts";
import { type Ctx, definePage } from "../registry/types.ts";
import { home, pager, paging, when } from "./format.ts";

/** Settings pages exist only for their owner: anyone else gets the same 404 as a missing user. */
export async function ownSettings(ctx: Ctx, handle: string) {
  const user = await loadUser(ctx, handle);
  if (user.id !== ctx.actor.id) throw new NotFoundError(`No user @${handle}`);
  return { user };
}

export const settingsPage = definePage({
  pattern: "/u/:handle/settings",
  actions: ["update_profile"],
  resolve: (ctx, params) => ownSettings(ctx, params.handle),
  async render(_ctx, scope) {
    const user = scope.user;
    return {
      title: "Your settings",
      breadcrumb: [home, { label: `@${user.handle}`, path: `/u/${user.handle}` }, { label: "Settings" }],
      blocks: [
        {
          md: `Name: **${mdEscape(user.name)}** · handle \`${user.handle}\`${user.email ? ` · email ${mdEscape(user.email)}` : ""}`,
        },
        { md: user.bio ? quote(user.bio) : "_No bio yet._" },
        {
          md: `[Security](/u/${user.handle}/settings/security): where you are signed in, ending sessions, your password.`,
        },
        { md: `[API tokens](/u/${user.handle}/settings/tokens) let scripts and external agents act as you.` },
        {
          md: `[Model API keys](/u/${user.handle}/settings/api-keys): your own OpenAI, Anthropic or OpenAI-compatible keys for your agents to call their model with.`,
        },
        {
          md: `[Connected tools](/u/${user.handle}/settings/tools): remote MCP servers (GitHub's, Linear's, your company's) whose tools your agents may be granted.`,
        },
        {
          md: `[Notifications](/u/${user.handle}/settings/notifications): how you hear of what your agents need — in the app, by mail at once, or in a daily digest. [Outgoing webhooks](/u/${user.handle}/settings/webhooks) tell a chat channel or a service.`,
        },
      ],
    };
  },
});

export const tokensPage = definePage({
  pattern: "/u/:handle/settings/tokens",
  actions: ["create_api_token", "revoke_api_token"],
  resolve: (ctx, params) => ownSettings(ctx, params.handle),
  async render(ctx, scope, query) {
    const user = scope.user;
    const paged = paging(query);
    const where = { userId: user.id, tenantId: ctx.tenant.id };
    const [tokens, total] = await Promise.all([
      ctx.db.apiToken.findMany({
        where,
        orderBy: [{ revokedAt: { sort: "desc", nulls: "first" } }, { createdAt: "desc" }],
        skip: paged.skip,
        take: paged.take,
      }),
      ctx.db.apiToken.count({ where }),
    ]);
    const now = new Date();
    const status = (token: (typeof tokens)[number]) =>
      token.revokedAt
        ? `revoked ${when(token.revokedAt)}`
        : token.expiresAt && token.expiresAt <= now
          ? `expired ${when(token.expiresAt)}`
          : token.expiresAt
            ? `active, expires ${when(token.expiresAt)}`
            : "active";
    const rows = tokens.map(
      (token) =>
        `| ${link(token.name, `/u/${user.handle}/settings/tokens/${token.id}`)} | \`cadre_${token.prefix}_…\` | ${token.scope} | \`${token.id}\` | ${when(token.createdAt)} | ${token.lastUsedAt ? when(token.lastUsedAt) : "never"} | ${status(token)} |`,
    );
    return {
      title: "API tokens",
      breadcrumb: [
        home,
        { label: `@${user.handle}`, path: `/u/${user.handle}` },
        { label: "Settings", path: `/u/${user.handle}/settings` },
        { label: "API tokens" },
      ],
      blocks: [
        {
          md: "Send a token as `Authorization: Bearer <token>` to use the markdown API or MCP as yourself. A token is shown once, when you create it. Its **scope** says what it may do: `read` pages; `act` on them too (everything but tokens and keys); `manage` tokens and provider keys as well (never over MCP unless the operator allows it). Give it an expiry to have it stop by itself. Open a token to see what it did recently.",
        },
        {
          md: rows.length
            ? [
                "| name | token | scope | id | created | last used | status |",
                "|---|---|---|---|---|---|---|",
                ...rows,
              ].join("\n")
            : "_No tokens yet._",
        },
        ...tokens
          .filter((t) => !t.revokedAt)
          .map((token) => ({
            form: { action: "revoke_api_token", fixed: { id: token.id }, label: `Revoke “${token.name}”` },
          })),
        { md: pager(`/u/${user.handle}/settings/tokens`, paged, total) },
      ],
    };
  },
});
