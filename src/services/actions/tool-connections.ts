// A person's (or a studio's) connections to remote MCP servers (services/tools/): add one,
// test it, accept a changed tool, disconnect. Each finds its connection through the page's
// holder (tools/holder.ts), the one owner check. Adding and testing call the server, so they
// run outside a transaction: each write there stands alone (createConnection, listTools).
import { z } from "zod";
import { ValidationError } from "../../lib/errors.ts";
import { toSelf } from "../registry/audiences.ts";
import { type ActionCtx, type ActionOutcome, type Ctx, defineAction } from "../registry/types.ts";
import { AUDIENCE_LABELS, connectionHolder, type Holder, heldConnection } from "../tools/holder.ts";
import {
  acceptToolChange,
  createConnection,
  disconnectConnection,
  listTools,
  maskSecrets,
  ownSecrets,
  SLUG_PATTERN,
  setStatus,
  startSignIn,
  type ToolConnection,
  ToolConnectionError,
} from "../tools/index.ts";
import { idSchema, text } from "../validation.ts";

const peopleOnly = (ctx: Ctx) =>
  ctx.actor.kind === "person" ? null : "only people connect tools and answer for them";

const connectionId = idSchema.meta({
  label: "Connection",
  description: "which connection",
  pickedBeside: true,
});

export const addToolConnection = defineAction({
  name: "add_tool_connection",
  description: "Connect a remote MCP server (Streamable HTTP) whose tools your agents may then be granted",
  manage: true,
  params: z.object({
    name: text(80).meta({ label: "Name", description: "as people and agents read it, e.g. “GitHub”" }),
    slug: z
      .string()
      .trim()
      .regex(SLUG_PATTERN, "1 to 24 lower-case letters, digits or underscores")
      .meta({ label: "Namespace", description: "agents call its tools <namespace>__<tool>, e.g. github" }),
    url: text(2000).meta({
      label: "Server URL",
      description: "its Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp",
    }),
    audience: z.enum(["owner", "studio", "outside"]).meta({
      label: "Who can read what it holds",
      optionLabels: AUDIENCE_LABELS,
      description: "what an agent sends there is written to them; what it answers is read from them",
    }),
    auth: z
      .enum(["none", "bearer", "oauth"])
      .default("none")
      .meta({
        label: "Sign-in",
        optionLabels: {
          none: "none",
          bearer: "a static token (Authorization: Bearer)",
          oauth: "OAuth: sign in on the server's own page",
        },
      }),
    token: z.string().trim().max(4000, "at most 4000 characters").optional().meta({
      label: "Token",
      secret: true,
      description: "for a static token only; stored encrypted and never shown again",
    }),
  }),
  writes: true,
  confirmRecent: true,
  callsOut: true,
  audience: toSelf("tool connection"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const holder = connectionHolder(scope);
    if (!holder.audiences.includes(params.audience))
      throw new ValidationError([
        {
          field: "audience",
          message: `a ${holder.kind === "studio" ? "studio's" : "personal"} connection is read by ${holder.audiences.map((a) => `“${AUDIENCE_LABELS[a].split(":")[0]}”`).join(" or ")}`,
        },
      ]);
    if (params.auth !== "bearer" && params.token)
      throw new ValidationError([{ field: "token", message: "only for a static token: leave it empty" }]);
    const taken = await ctx.db.toolConnection.findFirst({
      where: { tenantId: ctx.tenant.id, slug: params.slug, ...holder.where },
      select: { id: true },
    });
    if (taken)
      throw new ValidationError([{ field: "slug", message: `${params.slug} names another connection here` }]);
    const connection = await createConnection(ctx.db, {
      tenantId: ctx.tenant.id,
      ...holder.columns,
      name: params.name,
      slug: params.slug,
      url: params.url,
      authKind: params.auth,
      audience: params.audience,
      bearerToken: params.token || undefined,
      createdById: ctx.actor.id,
    });
    const location = `${holder.path}/${connection.id}`;
    if (params.auth === "oauth") {
      const started = await signInNotice(ctx, connection);
      return {
        status: 201,
        location,
        notice: `Added “${params.name}”. ${started.notice}`,
        warning: started.warning,
      };
    }
    const tested = await testedNotice(ctx, connection);
    return {
      status: 201,
      location,
      notice: `Added “${params.name}”. ${tested.notice}`,
      warning: tested.warning,
    };
  },
});

async function testedNotice(ctx: ActionCtx, connection: ToolConnection) {
  try {
    const tools = await listTools(ctx.db, connection);
    const changed = tools.filter((tool) => tool.changed).length;
    return {
      notice: `It lists ${tools.length} tool${tools.length === 1 ? "" : "s"}${changed ? `; ${changed} changed since allowed: review ${changed === 1 ? "it" : "them"}` : ""}.`,
      warning: changed > 0,
    };
  } catch (err) {
    if (!(err instanceof ToolConnectionError)) throw err;
    return { notice: `Its server could not be used: ${err.message}.`, warning: true };
  }
}

/** Starts an OAuth sign-in: the connection's page then links to the server's own sign-in page. */
async function signInNotice(ctx: ActionCtx, connection: ToolConnection) {
  if (!ctx.origin)
    return {
      notice: "Sign in from a browser: the server sends the person back to this workspace's address.",
      warning: true,
    };
  try {
    const url = await startSignIn(ctx.db, connection, ctx.origin);
    if (!url) {
      const tested = await testedNotice(ctx, connection);
      return { notice: `Its sign-in still works. ${tested.notice}`, warning: tested.warning };
    }
    return { notice: `Continue to ${url.host} to sign in: the link is below.`, warning: false };
  } catch (err) {
    // A server's error may echo what it was sent (a client secret): masked first.
    const reason = maskSecrets(err instanceof Error ? err.message : String(err), ownSecrets(connection));
    await setStatus(ctx.db, connection, "needs_sign_in", reason.slice(0, 300));
    return { notice: `The server's sign-in could not be started: ${reason.slice(0, 300)}`, warning: true };
  }
}

export const acceptToolChangeAction = defineAction({
  name: "accept_tool_change",
  description: "Allow a changed (or new) tool of a connection as its server describes it now",
  params: z.object({
    id: connectionId,
    tool: text(200).meta({ label: "Tool", description: "the tool's name", pickedBeside: true }),
  }),
  writes: true,
  confirmRecent: true,
  audience: toSelf("tool connection"),
  available: peopleOnly,
  async execute(ctx, params, scope) {
    const { holder, connection } = await heldConnection(ctx, scope, params.id);
    await acceptToolChange(ctx.tx, connection, params.tool);
    return {
      status: 200,
      location: `${holder.path}/${connection.id}`,
      notice: `Allowed ${params.tool} as it is now`,
    };
  },
});

/** An action on one connection of the page's holder that calls its server, so outside a transaction. */
function onConnection(def: {
  name: string;
  description: string;
  manage?: true;
  confirmRecent?: true;
  destructive?: string;
  run(ctx: ActionCtx, holder: Holder, connection: ToolConnection): Promise<ActionOutcome>;
}) {
  const { run, ...described } = def;
  return defineAction({
    ...described,
    params: z.object({ id: connectionId }),
    writes: true,
    callsOut: true,
    audience: toSelf("tool connection"),
    available: peopleOnly,
    async execute(ctx, params, scope) {
      const { holder, connection } = await heldConnection(ctx, scope, params.id);
      return run(ctx, holder, connection);
    },
  });
}

export const testToolConnection = onConnection({
  name: "test_tool_connection",
  description: "List the server's tools again and update the connection's status",
  run: async (ctx, holder, connection) => ({
    status: 200,
    location: `${holder.path}/${connection.id}`,
    ...(await testedNotice(ctx, connection)),
  }),
});

export const signInToolConnection = onConnection({
  name: "sign_in_tool_connection",
  description: "Sign in to an OAuth connection's server again (in a browser: the server's own page asks you)",
  confirmRecent: true,
  async run(ctx, holder, connection) {
    if (connection.authKind !== "oauth")
      throw new ValidationError([
        { field: "id", message: `“${connection.name}” does not sign in with OAuth` },
      ]);
    return {
      status: 200,
      location: `${holder.path}/${connection.id}`,
      ...(await signInNotice(ctx, connection)),
    };
  },
});

const REVOCATION_WORDS = {
  revoked: "; the server revoked its token",
  not_revoked: "; the server did not revoke its token: revoke it there too",
  none: "",
} as const;

export const disconnectToolConnection = onConnection({
  name: "disconnect_tool_connection",
  manage: true,
  destructive:
    "Its agents' grants stop working at once; its token is revoked at the server when it can be, and every secret of it is deleted.",
  description: "Disconnect: revoke its sign-in where the server allows, delete its secrets and its tools",
  async run(ctx, holder, connection) {
    const revoked = await disconnectConnection(ctx.db, connection);
    return {
      status: 200,
      location: holder.path,
      notice: `Disconnected “${connection.name}”${REVOCATION_WORDS[revoked]}`,
      warning: revoked === "not_revoked",
    };
  },
});
