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
    const u = scope.user;
    return {
      title: "Your settings",
      breadcrumb: [home, { label: `@${u.handle}`, path: `/u/${u.handle}` }, { label: "Settings" }],
      blocks: [
        {
          md: `Name: **${mdEscape(u.name)}** · handle \`${u.handle}\`${u.email ? ` · email ${mdEscape(u.email)}` : ""}`,
        },
        { md: u.bio ? quote(u.bio) : "_No bio yet._" },
        {
          md: `[Security](/u/${u.handle}/settings/security): where you are signed in, ending sessions, your password.`,
        },
        { md: `[API tokens](/u/${u.handle}/settings/tokens) let scripts and external agents act as you.` },
        {
          md: `[Model API keys](/u/${u.handle}/settings/api-keys): your own OpenAI, Anthropic or OpenAI-compatible keys for your agents to call their model with.`,
        },
        {
          md: `[Notifications](/u/${u.handle}/settings/notifications): how you hear of what your agents need — in the app, by mail at once, or in a daily digest. [Outgoing webhooks](/u/${u.handle}/settings/webhooks) tell a chat channel or a service.`,
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
    const u = scope.user;
    const paged = paging(query);
    const where = { userId: u.id, tenantId: ctx.tenant.id };
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
    const status = (t: (typeof tokens)[number]) =>
      t.revokedAt
        ? `revoked ${when(t.revokedAt)}`
        : t.expiresAt && t.expiresAt <= now
          ? `expired ${when(t.expiresAt)}`
          : t.expiresAt
            ? `active, expires ${when(t.expiresAt)}`
            : "active";
    const rows = tokens.map(
      (t) =>
        `| ${link(t.name, `/u/${u.handle}/settings/tokens/${t.id}`)} | \`cadre_${t.prefix}_…\` | ${t.scope} | \`${t.id}\` | ${when(t.createdAt)} | ${t.lastUsedAt ? when(t.lastUsedAt) : "never"} | ${status(t)} |`,
    );
    return {
      title: "API tokens",
      breadcrumb: [
        home,
        { label: `@${u.handle}`, path: `/u/${u.handle}` },
        { label: "Settings", path: `/u/${u.handle}/settings` },
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
          .map((t) => ({
            form: { action: "revoke_api_token", fixed: { id: t.id }, label: `Revoke “${t.name}”` },
          })),
        { md: pager(`/u/${u.handle}/settings/tokens`, paged, total) },
      ],
    };
  },
});
