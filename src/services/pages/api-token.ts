// One API token's page: what it is, and what it did (the audit trail, newest first). Like
// every settings page it exists only for the token's owner; another person's token, or
// another workspace's, is the same 404 as none.
import { NotFoundError } from "../../lib/errors.ts";
import { code, mdEscape } from "../registry/markdown.ts";
import { definePage } from "../registry/types.ts";
import { home, pager, paging, when } from "./format.ts";
import { ownSettings } from "./settings.ts";

const PER_PAGE = 50;

export const apiTokenPage = definePage({
  pattern: "/u/:handle/settings/tokens/:token",
  actions: [],
  async resolve(ctx, params) {
    const { user } = await ownSettings(ctx, params.handle);
    const token = await ctx.db.apiToken.findFirst({
      where: { id: params.token, userId: user!.id, tenantId: ctx.tenant.id },
    });
    if (!token) throw new NotFoundError(`No token ${params.token} among your API tokens`);
    return { user, apiToken: token };
  },
  async render(ctx, scope, query) {
    const u = scope.user;
    const t = scope.apiToken;
    const paged = paging(query, PER_PAGE);
    const where = { tokenId: t.id, tenantId: ctx.tenant.id };
    const [calls, total] = await Promise.all([
      ctx.db.apiCall.findMany({
        where,
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        skip: paged.skip,
        take: paged.take,
      }),
      ctx.db.apiCall.count({ where }),
    ]);
    const base = `/u/${u.handle}/settings/tokens`;
    const rows = calls.map(
      (c) =>
        `| ${when(c.createdAt)} | ${c.method} | ${c.tool ? `tool ${code(c.tool)}${c.page ? ` on ${code(c.page)}` : ""}` : code(c.page ?? "")} | ${c.action ? code(c.action) : "—"} | ${c.status} | ${c.latencyMs} ms |`,
    );
    return {
      title: `API token “${t.name}”`,
      breadcrumb: [
        home,
        { label: `@${u.handle}`, path: `/u/${u.handle}` },
        { label: "Settings", path: `/u/${u.handle}/settings` },
        { label: "API tokens", path: base },
        { label: t.name },
      ],
      blocks: [
        {
          md: `**${mdEscape(t.name)}** · \`cadre_${t.prefix}_…\` · scope ${t.scope} · created ${when(t.createdAt)}${t.expiresAt ? ` · expires ${when(t.expiresAt)}` : ""} · last used ${t.lastUsedAt ? when(t.lastUsedAt) : "never"} · ${t.revokedAt ? `revoked ${when(t.revokedAt)}` : "active"}`,
        },
        {
          md: `## Recent calls\n\nEvery call made with this token, over the markdown API or MCP, newest first: the page or tool, the action, the answer's status and how long it took. Calls appear within seconds and are kept for a limited time.\n\n${
            rows.length
              ? [
                  "| when | method | page or tool | action | status | latency |",
                  "|---|---|---|---|---|---|",
                  ...rows,
                ].join("\n")
              : "_No calls yet._"
          }`,
        },
        { md: pager(`${base}/${t.id}`, paged, total) },
      ],
    };
  },
});
