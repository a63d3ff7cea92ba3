// A connection's rows: who holds it, and the tools its server lists, each pinned to what the
// owner last allowed. This is the one writer of tool_connections (exactly one of a person or a
// studio holds each) and of tool_definitions.
import type { Db, PrismaClient } from "../../db/prisma.ts";
import type {
  Prisma,
  ToolAudience,
  ToolAuthKind,
  ToolConnection,
  ToolConnectionStatus,
} from "../../generated/prisma/client.ts";
import { ValidationError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { checkBaseUrl, checkResolvedUrl } from "../money/keys.ts";
import { ToolConnectionError, type UseOptions, withClient } from "./client.ts";
import { definitionHash, pinnedDefinition, SLUG_PATTERN } from "./definitions.ts";
import { hostRefusal } from "./hosts.ts";
import { sealedColumns } from "./sealed.ts";

export type { ToolConnection };

export interface ConnectionHolder {
  /** A person's own connection… */
  ownerUserId?: string;
  /** …or a studio's: exactly one of the two. */
  studioId?: string;
}

/**
 * The live (not disconnected) connections a person holds and their studios hold, oldest first.
 * Which of them a run may use is the caller's rule (DESIGN.md: a person's connection only when
 * that person manages the agent and woke it).
 */
export function connectionsFor(
  db: Db,
  tenantId: string,
  holders: { userIds?: string[]; studioIds?: string[] },
): Promise<ToolConnection[]> {
  const or: Prisma.ToolConnectionWhereInput[] = [];
  if (holders.userIds?.length) or.push({ ownerUserId: { in: holders.userIds } });
  if (holders.studioIds?.length) or.push({ studioId: { in: holders.studioIds } });
  if (!or.length) return Promise.resolve([]);
  return db.toolConnection.findMany({
    where: { tenantId, disconnectedAt: null, OR: or },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
}

export interface NewConnection extends ConnectionHolder {
  tenantId: string;
  name: string;
  slug: string;
  url: string;
  authKind: ToolAuthKind;
  audience: ToolAudience;
  /** The static bearer token (authKind `bearer`). */
  bearerToken?: string;
  createdById: string;
}

/** Stores a connection (its bearer token sealed); its tools are listed by `listTools` after. */
export async function createConnection(db: Db, input: NewConnection): Promise<ToolConnection> {
  if (!!input.ownerUserId === !!input.studioId)
    throw new Error("a tool connection belongs to exactly one person or one studio");
  if (!SLUG_PATTERN.test(input.slug))
    throw new ValidationError([
      { field: "slug", label: "Namespace", message: "1 to 24 lower-case letters, digits or underscores" },
    ]);
  if (input.authKind === "bearer" && !input.bearerToken)
    throw new ValidationError([
      { field: "token", label: "Token", message: "required for a bearer connection" },
    ]);
  const refused = await urlRefusal(db, input.tenantId, input.url);
  if (refused) throw new ValidationError([{ field: "url", label: "Server URL", message: refused }]);
  const id = newId();
  return db.toolConnection.create({
    data: {
      id,
      tenantId: input.tenantId,
      ownerUserId: input.ownerUserId ?? null,
      studioId: input.studioId ?? null,
      name: input.name,
      slug: input.slug,
      url: input.url,
      authKind: input.authKind,
      audience: input.audience,
      status: input.authKind === "oauth" ? "needs_sign_in" : "connected",
      createdById: input.createdById,
      ...(input.authKind === "bearer" ? sealedColumns(input.tenantId, id, "token", input.bearerToken!) : {}),
    },
  });
}

/** Why a server URL cannot be connected: not a plain http(s) URL, a private address, or a host off the workspace's list. */
export async function urlRefusal(db: Db, tenantId: string, url: string): Promise<string | null> {
  const bad = checkBaseUrl(url);
  if (bad) return bad.replace("https://llm.example.com/v1", "https://mcp.example.com/mcp");
  return (await checkResolvedUrl(url)) ?? (await hostRefusal(db, tenantId, url));
}

export interface ListedTool {
  name: string;
  description: string;
  inputSchema: unknown;
  annotations: Record<string, unknown>;
  hash: string;
  /** The hash the owner allowed; null for a tool added since. */
  pinnedHash: string | null;
  /** Differs from what the owner allowed (or is new since): not callable until accepted. */
  changed: boolean;
}

/**
 * Lists the server's tools and refreshes the stored definitions. The first listing of a
 * connection pins every tool; later, a changed or added tool keeps the old pin (none for an
 * added one) and marks the connection `tools_changed`. A failure records the status and rethrows.
 */
export async function listTools(
  db: PrismaClient,
  connection: ToolConnection,
  options: UseOptions = {},
): Promise<ListedTool[]> {
  let tools: Awaited<ReturnType<typeof fetchTools>>;
  try {
    tools = await withClient(db, connection, options, (client, request) => fetchTools(client, request));
  } catch (err) {
    if (err instanceof ToolConnectionError) await setStatus(db, connection, err.status, err.message);
    throw err;
  }
  const firstListing = connection.checkedAt === null;
  return db.$transaction(async (tx) => {
    const stored = await tx.toolDefinition.findMany({ where: { connectionId: connection.id } });
    const byName = new Map(stored.map((row) => [row.name, row]));
    const listed: ListedTool[] = [];
    for (const tool of tools) {
      const hash = definitionHash(tool);
      const previous = byName.get(tool.name);
      byName.delete(tool.name);
      const pin = firstListing ? { pinnedHash: hash, pinnedDefinition: pinnedDefinition(tool) } : {};
      const fields = {
        description: tool.description ?? "",
        inputSchema: tool.inputSchema as Prisma.InputJsonValue,
        annotations: (tool.annotations ?? {}) as Prisma.InputJsonValue,
        hash,
        seenAt: new Date(),
        ...pin,
      };
      if (previous) await tx.toolDefinition.update({ where: { id: previous.id }, data: fields });
      else
        await tx.toolDefinition.create({
          data: {
            id: newId(),
            tenantId: connection.tenantId,
            connectionId: connection.id,
            name: tool.name,
            ...fields,
          },
        });
      const pinnedHash = firstListing ? hash : (previous?.pinnedHash ?? null);
      listed.push({
        name: tool.name,
        description: fields.description,
        inputSchema: tool.inputSchema,
        annotations: (tool.annotations ?? {}) as Record<string, unknown>,
        hash,
        pinnedHash,
        changed: pinnedHash !== hash,
      });
    }
    // Gone from the server: nothing to call, nothing to review.
    if (byName.size)
      await tx.toolDefinition.deleteMany({ where: { id: { in: [...byName.values()].map((r) => r.id) } } });
    const changed = listed.some((tool) => tool.changed);
    await setStatus(tx, connection, changed ? "tools_changed" : "connected", "");
    return listed;
  });
}

async function fetchTools(
  client: import("@modelcontextprotocol/sdk/client/index.js").Client,
  request: object,
) {
  const tools = [];
  let cursor: string | undefined;
  // A server pages its list; 50 pages is far past any real one and stops a loop that never ends.
  for (let page = 0; page < 50; page++) {
    const result = await client.listTools(cursor ? { cursor } : undefined, request);
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

/** The owner allows a changed tool as it is now; the connection is `connected` again when none is left to review. */
export async function acceptToolChange(db: Db, connection: ToolConnection, toolName: string): Promise<void> {
  const tool = await db.toolDefinition.findFirst({
    where: { tenantId: connection.tenantId, connectionId: connection.id, name: toolName },
  });
  if (!tool)
    throw new ValidationError([
      { field: "tool", label: "Tool", message: `${toolName} is not listed by this connection` },
    ]);
  await db.toolDefinition.update({
    where: { id: tool.id },
    data: {
      pinnedHash: tool.hash,
      pinnedDefinition: pinnedDefinition({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema,
      }) as Prisma.InputJsonValue,
    },
  });
  const left = await db.toolDefinition.findMany({
    where: { connectionId: connection.id },
    select: { hash: true, pinnedHash: true },
  });
  if (connection.status === "tools_changed" && left.every((t) => t.hash === t.pinnedHash))
    await setStatus(db, connection, "connected", "");
}

export async function setStatus(
  db: Db,
  connection: ToolConnection,
  status: ToolConnectionStatus,
  detail: string,
) {
  const checkedAt = new Date();
  await db.toolConnection.update({
    where: { id: connection.id, tenantId: connection.tenantId },
    data: { status, statusDetail: detail, checkedAt },
  });
  Object.assign(connection, { status, statusDetail: detail, checkedAt });
}
