// One API token's page: what it is, and what it did (the audit trail, newest first). Like
// every settings page it exists only for the token's owner; another person's token, or
// another workspace's, is the same 404 as none.
import { NotFoundError } from "../../lib/errors.ts";
import { callsWhere } from "../audit.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
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
    const user = scope.user;
    const token = scope.apiToken;
    const paged = paging(query, PER_PAGE);
    const { filter, where } = callsWhere(ctx.tenant.id, token.id, query.status);
    const [calls, total] = await Promise.all([
      ctx.db.apiCall.findMany({
        where,
        orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        skip: paged.skip,
        take: paged.take,
      }),
      ctx.db.apiCall.count({ where }),
    ]);
    const base = `/u/${user.handle}/settings/tokens`;
    const shown = filter
      ? `Showing ${filter === "refused" ? "refused calls (4xx)" : `calls answered ${filter}`}: ${link("show every call", `${base}/${token.id}`)}.`
      : `Find refused calls: ${link("refused (4xx)", `${base}/${token.id}?status=refused`)}, or add \`?status=403\` for one status.`;
    const rows = calls.map(
      (call) =>
        `| ${when(call.createdAt)} | ${call.method} | ${call.tool ? `tool ${code(call.tool)}${call.page ? ` on ${code(call.page)}` : ""}` : code(call.page ?? "")} | ${call.action ? code(call.action) : "—"} | ${call.status} | ${call.latencyMs} ms |`,
    );
    return {
      title: `API token “${token.name}”`,
      breadcrumb: [
        home,
        { label: `@${user.handle}`, path: `/u/${user.handle}` },
        { label: "Settings", path: `/u/${user.handle}/settings` },
        { label: "API tokens", path: base },
        { label: token.name },
      ],
      blocks: [
        {
          md: `**${mdEscape(token.name)}** · \`cadre_${token.prefix}_…\` · scope ${token.scope} · created ${when(token.createdAt)}${token.expiresAt ? ` · expires ${when(token.expiresAt)}` : ""} · last used ${token.lastUsedAt ? when(token.lastUsedAt) : "never"} · ${token.revokedAt ? `revoked ${when(token.revokedAt)}` : "active"}`,
        },
        {
          md: `## Recent calls\n\nEvery call made with this token, over the markdown API or MCP, newest first: the page or tool, the action, the answer's status and how long it took. Calls appear within seconds and are kept for a limited time. An MCP call's status is its tool's own outcome (403 refused, 202 queued for approval), not the 200 that carried it.\n\n${shown}\n\n${
            rows.length
              ? [
                  "| when | method | page or tool | action | status | latency |",
                  "|---|---|---|---|---|---|",
                  ...rows,
                ].join("\n")
              : filter
                ? "_No such calls._"
                : "_No calls yet._"
          }`,
        },
        { md: pager(`${base}/${token.id}`, paged, total, filter ? { status: filter } : {}) },
      ],
    };
  },
});
