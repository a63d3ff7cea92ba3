// The pages where a person (on their settings) or a studio's admins (on the studio's settings)
// keep their connections to remote MCP servers: the list with the add form, one connection
// with its tools, and the review of tools whose definitions changed since they were allowed.
// What a server says of its tools is text from outside: quoted or fenced, never rendered.
import type { ToolConnection, ToolDefinition } from "../../generated/prisma/client.ts";
import { loadStudio } from "../access.ts";
import { code, link, mdEscape } from "../registry/markdown.ts";
import {
  type Block,
  type Crumb,
  type Ctx,
  definePage,
  type PageView,
  type Scope,
} from "../registry/types.ts";
import { AUDIENCE_LABELS, connectionHolder, type Holder, heldConnection } from "../tools/holder.ts";
import { excerpt, home, when } from "./format.ts";
import { ownSettings } from "./settings.ts";
import { changedToolBlocks } from "./tool-changes.ts";

export const STATUS_LABELS: Record<ToolConnection["status"], string> = {
  connected: "connected",
  needs_sign_in: "needs sign-in again",
  unreachable: "unreachable",
  tools_changed: "tools changed: review them",
};

const AUTH_LABELS: Record<ToolConnection["authKind"], string> = {
  none: "no sign-in",
  bearer: "a static token",
  oauth: "OAuth",
};

async function studioScope(ctx: Ctx, handle: string) {
  const scope = { studio: await loadStudio(ctx, handle) };
  connectionHolder(scope); // its admins only: a member gets a 403 saying so
  return scope;
}

async function withConnection<S extends Scope>(ctx: Ctx, scope: S, id: string) {
  return { ...scope, connection: (await heldConnection(ctx, scope, id)).connection };
}

function holderCrumbs(ctx: Ctx, holder: Holder, scope: Scope): Crumb[] {
  if (scope.studio)
    return [
      home,
      { label: scope.studio.name, path: `/studios/${scope.studio.handle}` },
      { label: "Connected tools", path: holder.path },
    ];
  return [
    home,
    { label: `@${ctx.actor.handle}`, path: `/u/${ctx.actor.handle}` },
    { label: "Settings", path: `/u/${ctx.actor.handle}/settings` },
    { label: "Connected tools", path: holder.path },
  ];
}

type ConnectionScope = Scope & { connection: ToolConnection };

const status = (connection: ToolConnection) =>
  `**${STATUS_LABELS[connection.status]}**${connection.statusDetail ? ` (${mdEscape(excerpt(connection.statusDetail, 200))})` : ""}`;

async function listView(ctx: Ctx, scope: Scope): Promise<PageView> {
  const holder = connectionHolder(scope);
  const connections = await ctx.db.toolConnection.findMany({
    where: { tenantId: ctx.tenant.id, disconnectedAt: null, ...holder.where },
    include: { _count: { select: { definitions: true } } },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  const rows = connections.map(
    (connection) =>
      `| ${link(connection.name, `${holder.path}/${connection.id}`)} | \`${connection.slug}\` | ${code(connection.url)} | ${AUDIENCE_LABELS[connection.audience].split(":")[0]} | ${AUTH_LABELS[connection.authKind]} | ${connection._count.definitions} | ${status(connection)} |`,
  );
  const crumbs = holderCrumbs(ctx, holder, scope);
  return {
    title: scope.studio ? `Connected tools of ${scope.studio.name}` : "Connected tools",
    breadcrumb: [...crumbs.slice(0, -1), { label: "Connected tools" }],
    blocks: [
      {
        md: `${scope.studio ? `Remote MCP servers connected for ${mdEscape(scope.studio.name)}: their tools serve runs whose readers are all in the studio. Only its admins see and change them.` : "Remote MCP servers you connect with your own account. Their tools can be granted to agents you manage, per tool, on each agent's capabilities page."} Cadre lists a server's tools and pins each one as it was described; a tool whose description or input schema changes is refused to agents until you review the change here. Tokens are encrypted at rest and never shown again.`,
      },
      {
        md: rows.length
          ? [
              "| name | namespace | server | who reads it | sign-in | tools | status |",
              "|---|---|---|---|---|---|---|",
              ...rows,
            ].join("\n")
          : "_No connections yet._",
      },
      { md: "## Connect a server" },
      {
        form: {
          action: "add_tool_connection",
          fixed: {},
          label: "Connect",
          style: "block",
          values: { audience: holder.audiences[0], auth: "none" },
          choices: {
            audience: holder.audiences.map((audience) => ({
              value: audience,
              label: AUDIENCE_LABELS[audience],
            })),
          },
        },
      },
      {
        md: `How to connect GitHub's, Linear's or your company's own server: the manual's “Connecting tools” (docs/connecting-tools.md).`,
      },
    ],
  };
}

const annotationWords = (annotations: unknown) => {
  const hints = (annotations ?? {}) as { readOnlyHint?: boolean; destructiveHint?: boolean };
  const words = [];
  if (hints.readOnlyHint === true) words.push("read-only");
  if (hints.destructiveHint === true) words.push("**destructive**");
  if (hints.readOnlyHint !== true && hints.destructiveHint !== true) words.push("may write");
  return words.join(", ");
};

const toolState = (tool: ToolDefinition) =>
  tool.pinnedHash === null
    ? "**new: review it**"
    : tool.pinnedHash !== tool.hash
      ? "**changed: review it**"
      : "allowed";

async function connectionView(ctx: Ctx, scope: ConnectionScope): Promise<PageView> {
  const holder = connectionHolder(scope);
  const connection = scope.connection;
  const tools = await ctx.db.toolDefinition.findMany({
    where: { tenantId: ctx.tenant.id, connectionId: connection.id },
    orderBy: { name: "asc" },
  });
  const path = `${holder.path}/${connection.id}`;
  const changed = tools.filter((tool) => tool.pinnedHash !== tool.hash).length;
  const rows = tools.map(
    (tool) =>
      `| ${code(`${connection.slug}__${tool.name}`)} | ${mdEscape(excerpt(tool.description, 200)) || "—"} | ${annotationWords(tool.annotations)} | ${toolState(tool)} |`,
  );
  const blocks: Block[] = [
    {
      md: [
        `${code(`POST ${connection.url}`)}`,
        "",
        `Namespace \`${connection.slug}\` · ${AUTH_LABELS[connection.authKind]} · who reads it: ${AUDIENCE_LABELS[connection.audience]}  `,
        `Status: ${status(connection)}${connection.checkedAt ? ` · checked ${when(connection.checkedAt)}` : " · not checked yet"}${connection.tokenExpiresAt ? ` · its sign-in ${connection.tokenExpiresAt > new Date() ? "is renewed after" : "expired"} ${when(connection.tokenExpiresAt)}` : ""}`,
      ].join("\n"),
    },
    ...(connection.signInUrl
      ? [
          {
            md: `**Sign-in under way:** [continue to ${mdEscape(new URL(connection.signInUrl).host)} to sign in](${connection.signInUrl}). Its page asks you to allow Cadre; it then sends you back here.`,
          },
        ]
      : []),
    { form: { action: "test_tool_connection", fixed: { id: connection.id }, label: "Test" } },
    ...(connection.authKind === "oauth"
      ? [
          {
            form: {
              action: "sign_in_tool_connection",
              fixed: { id: connection.id },
              label: connection.status === "needs_sign_in" ? "Sign in" : "Sign in again",
            },
          },
        ]
      : []),
    { form: { action: "disconnect_tool_connection", fixed: { id: connection.id }, label: "Disconnect" } },
    ...(changed
      ? [
          {
            md: `**${changed} tool${changed === 1 ? "" : "s"} changed since allowed:** ${link("review the changes", `${path}/changes`)}. Until then agents are refused ${changed === 1 ? "it" : "them"} and told why.`,
          },
        ]
      : []),
    {
      md: `## Its tools\n\nAs the server describes them (its words, not Cadre's). Annotations are the server's own hints: a tool not marked read-only starts as “needs approval” when granted.\n\n${
        rows.length
          ? ["| tool | description | annotations | state |", "|---|---|---|---|", ...rows].join("\n")
          : "_None listed yet: Test lists them._"
      }`,
    },
  ];
  return {
    title: connection.name,
    breadcrumb: [...holderCrumbs(ctx, holder, scope), { label: connection.name }],
    blocks,
    // Only an OAuth connection has a sign-in to start.
    offers: CONNECTION_ACTIONS.filter(
      (action) => action !== "sign_in_tool_connection" || connection.authKind === "oauth",
    ),
  };
}

async function changesView(ctx: Ctx, scope: ConnectionScope): Promise<PageView> {
  const holder = connectionHolder(scope);
  const connection = scope.connection;
  const path = `${holder.path}/${connection.id}`;
  const tools = await ctx.db.toolDefinition.findMany({
    where: { tenantId: ctx.tenant.id, connectionId: connection.id },
    orderBy: { name: "asc" },
  });
  const changed = tools.filter((tool) => tool.pinnedHash !== tool.hash);
  return {
    title: `Changed tools of ${connection.name}`,
    breadcrumb: [...holderCrumbs(ctx, holder, scope), { label: connection.name, path }, { label: "Changes" }],
    blocks: changed.length
      ? [
          {
            md: "What you allowed (`-`) against what the server describes now (`+`). A changed description is how a server slips new instructions to a model: accept only what you would have allowed in the first place.",
          },
          ...changed.flatMap((tool) => changedToolBlocks(connection, tool)),
        ]
      : [
          {
            md: `_Nothing to review: every tool is as you allowed it._ ${link("Back to the connection", path)}`,
          },
        ],
  };
}

const CONNECTION_ACTIONS = ["test_tool_connection", "sign_in_tool_connection", "disconnect_tool_connection"];

export const toolConnectionsPage = definePage({
  pattern: "/u/:handle/settings/tools",
  actions: ["add_tool_connection"],
  resolve: (ctx, params) => ownSettings(ctx, params.handle),
  render: (ctx, scope) => listView(ctx, scope),
});

export const studioToolConnectionsPage = definePage({
  pattern: "/studios/:studio/settings/tools",
  actions: ["add_tool_connection"],
  resolve: (ctx, params) => studioScope(ctx, params.studio),
  render: (ctx, scope) => listView(ctx, scope),
});

export const toolConnectionPage = definePage({
  pattern: "/u/:handle/settings/tools/:connection",
  actions: CONNECTION_ACTIONS,
  resolve: async (ctx, params) =>
    withConnection(ctx, await ownSettings(ctx, params.handle), params.connection),
  render: (ctx, scope) => connectionView(ctx, scope),
});

export const studioToolConnectionPage = definePage({
  pattern: "/studios/:studio/settings/tools/:connection",
  actions: CONNECTION_ACTIONS,
  resolve: async (ctx, params) =>
    withConnection(ctx, await studioScope(ctx, params.studio), params.connection),
  render: (ctx, scope) => connectionView(ctx, scope),
});

export const toolChangesPage = definePage({
  pattern: "/u/:handle/settings/tools/:connection/changes",
  actions: ["accept_tool_change"],
  resolve: async (ctx, params) =>
    withConnection(ctx, await ownSettings(ctx, params.handle), params.connection),
  render: (ctx, scope) => changesView(ctx, scope),
});

export const studioToolChangesPage = definePage({
  pattern: "/studios/:studio/settings/tools/:connection/changes",
  actions: ["accept_tool_change"],
  resolve: async (ctx, params) =>
    withConnection(ctx, await studioScope(ctx, params.studio), params.connection),
  render: (ctx, scope) => changesView(ctx, scope),
});
