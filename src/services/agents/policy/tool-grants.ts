// Which connections' tools an agent may be granted, and which connection serves a call of one in
// a run (DESIGN.md "Tools at the edge of the workspace"). An agent is granted a tool by its
// name, `<slug>__<tool>`, from its owner's own connections and those of the owner's studios (a
// studio's agent: its studio's). In a run:
//   - a person's connection serves a run only when that person manages the agent and woke it,
//     or nobody else did (the run has no viewers); a run woken by someone else uses their own
//     connection to the same server when they have one, and otherwise waits for the
//     connection's owner to allow the call (the confused deputy, closed for tools);
//   - a studio's connection serves runs whose viewers are all members of the studio;
//   - a tool whose definition is not the one its connection's owner allowed is refused.
import type { Db } from "../../../db/prisma.ts";
import type { ToolConnection, ToolDefinition } from "../../../generated/prisma/client.ts";
import type { Audience } from "../../registry/types.ts";
import { connectionsFor, namespacedToolName } from "../../tools/index.ts";
import { isToolName } from "../core/tool-names.ts";

export interface OfferedTool {
  /** `<slug>__<tool>`. */
  name: string;
  connection: ToolConnection;
  definition: ToolDefinition;
  /** Says it only reads (`readOnlyHint`) and not that it destroys (`destructiveHint`): it may run without approval. */
  readOnly: boolean;
  /** Its definition is not the one its connection's owner allowed (or it is new since). */
  changed: boolean;
}

type AgentOwner = { id: string; tenantId: string; parentId: string | null; ownerStudioId: string | null };

/** Whose connections an agent's tools come from: its owner and the owner's studios, or its own studio. */
async function holdersOf(db: Db, agent: AgentOwner) {
  if (agent.ownerStudioId) return { studioIds: [agent.ownerStudioId] };
  if (!agent.parentId) return {};
  const memberships = await db.studioMember.findMany({
    where: { tenantId: agent.tenantId, userId: agent.parentId },
    select: { studioId: true },
  });
  return { userIds: [agent.parentId], studioIds: memberships.map((m) => m.studioId) };
}

const annotation = (definition: ToolDefinition, key: string) =>
  (definition.annotations as Record<string, unknown> | null)?.[key] === true;

export const isReadOnly = (definition: ToolDefinition) =>
  annotation(definition, "readOnlyHint") && !annotation(definition, "destructiveHint");

/**
 * The tools an agent may be granted, by name. Two connections with one slug would give two
 * tools one name: the owner's own connection comes first, then studios' by age, and the
 * later one's tool is not offered (the capabilities page says so).
 */
export async function offeredTools(db: Db, agent: AgentOwner): Promise<OfferedTool[]> {
  const connections = await connectionsFor(db, agent.tenantId, await holdersOf(db, agent));
  if (!connections.length) return [];
  const ordered = [...connections.filter((c) => c.ownerUserId), ...connections.filter((c) => c.studioId)];
  const definitions = await db.toolDefinition.findMany({
    where: { tenantId: agent.tenantId, connectionId: { in: ordered.map((c) => c.id) } },
    orderBy: { name: "asc" },
  });
  const offered = new Map<string, OfferedTool>();
  for (const connection of ordered)
    for (const definition of definitions) {
      if (definition.connectionId !== connection.id) continue;
      const name = namespacedToolName(connection.slug, definition.name);
      if (!isToolName(name) || offered.has(name)) continue;
      offered.set(name, {
        name,
        connection,
        definition,
        readOnly: isReadOnly(definition),
        changed: definition.pinnedHash !== definition.hash,
      });
    }
  return [...offered.values()];
}

/** Who can read what a call sends and what it brings back: its connection's declared audience. */
export function connectionAudience(connection: ToolConnection): Audience {
  if (connection.audience === "outside") return { outside: true };
  // A studio's connection is its members' whatever else it says; a person's "studio" names no
  // studio, so it is read as the narrower of the two, theirs alone.
  if (connection.studioId) return { studio: connection.studioId };
  return { people: [connection.ownerUserId!] };
}

/** What a result adds to a run's label: nothing from outside the workspace (anyone may read it there). */
export function resultSource(connection: ToolConnection): Audience | null {
  const audience = connectionAudience(connection);
  return "outside" in audience ? null : audience;
}

/** The same server, by scheme, host, port and path: where a second person's connection of their own would go. */
function sameServer(left: string, right: string): boolean {
  const key = (url: string) => {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, "")}`;
  };
  return URL.canParse(left) && URL.canParse(right) && key(left) === key(right);
}

export interface RunTool {
  name: string;
  connection: ToolConnection;
  definition: ToolDefinition;
  audience: Audience;
  /** "call to GitHub", and where it goes, "(outside the workspace)": the disclosure's words. */
  what: string;
  where: string;
  /** Set when the call must wait for the connection's owner: why, in their words. */
  review?: string;
}

export type ToolResolution = { tool: RunTool } | { refused: string };

interface Person {
  id: string;
  handle: string;
  name: string;
}

async function person(db: Db, id: string): Promise<Person> {
  const user = await db.user.findUnique({ where: { id }, select: { id: true, handle: true, name: true } });
  return user ?? { id, handle: "?", name: "someone" };
}

async function whereOf(db: Db, connection: ToolConnection): Promise<string> {
  if (connection.audience === "outside") return "(outside the workspace)";
  if (connection.studioId) {
    const studio = await db.studio.findUnique({ where: { id: connection.studioId }, select: { name: true } });
    return `(${studio?.name ?? "a studio"}'s)`;
  }
  return `(${(await person(db, connection.ownerUserId!)).name}'s own)`;
}

async function runTool(db: Db, name: string, connection: ToolConnection, definition: ToolDefinition) {
  const tool: RunTool = {
    name,
    connection,
    definition,
    audience: connectionAudience(connection),
    what: `call to ${connection.name}`,
    where: await whereOf(db, connection),
  };
  return tool;
}

const changedSince = (name: string) =>
  `\`${name}\` changed since it was allowed; its owner reviews it on the connection page. Use another tool or finish.`;

/**
 * The connection that serves a call of `name` in a run whose viewers are `viewerIds` (the
 * people who woke it without managing the agent), or why none does. Granting is checked by
 * the caller (capabilities.ts); this says where the call may go.
 */
export async function toolForRun(
  db: Db,
  agent: AgentOwner,
  name: string,
  viewerIds: readonly string[],
): Promise<ToolResolution> {
  const offered = (await offeredTools(db, agent)).find((tool) => tool.name === name);
  if (!offered)
    return {
      refused: `\`${name}\` is not a tool of any connection this agent's owner can grant it from (disconnected, or its owner left the studio that connected it).`,
    };
  const { connection, definition } = offered;
  if (connection.studioId) {
    const outsiders = await db.user.findMany({
      where: {
        id: { in: [...viewerIds] },
        NOT: { memberships: { some: { studioId: connection.studioId } } },
      },
      select: { handle: true },
    });
    if (outsiders.length)
      return {
        refused: `\`${name}\` is a studio's connection: it serves only runs whose people are all its members, and ${outsiders.map((o) => `@${o.handle}`).join(", ")} woke this run.`,
      };
    if (offered.changed) return { refused: changedSince(name) };
    return { tool: await runTool(db, name, connection, definition) };
  }
  const [viewer, ...others] = viewerIds;
  if (!viewer) {
    if (offered.changed) return { refused: changedSince(name) };
    return { tool: await runTool(db, name, connection, definition) };
  }
  // Someone else woke it: their own connection to the same server, the same tool as allowed.
  if (!others.length) {
    const own = await ownConnection(db, agent.tenantId, viewer, connection, definition);
    if (own) return { tool: await runTool(db, name, own.connection, own.definition) };
  }
  if (offered.changed) return { refused: changedSince(name) };
  const [owner, waker] = await Promise.all([person(db, connection.ownerUserId!), person(db, viewer)]);
  const tool = await runTool(db, name, connection, definition);
  tool.review = `This call would go through ${owner.name}'s own ${connection.name} connection in a run ${waker.name} (@${waker.handle}) woke, who has no connection of their own to that server.`;
  return { tool };
}

/** The viewer's own live connection to the granted tool's server, listing the tool exactly as it was granted. */
async function ownConnection(
  db: Db,
  tenantId: string,
  viewerId: string,
  granted: ToolConnection,
  definition: ToolDefinition,
) {
  const theirs = (await connectionsFor(db, tenantId, { userIds: [viewerId] })).filter((c) =>
    sameServer(c.url, granted.url),
  );
  if (!theirs.length) return null;
  const same = await db.toolDefinition.findFirst({
    where: {
      tenantId,
      connectionId: { in: theirs.map((c) => c.id) },
      name: definition.name,
      hash: definition.pinnedHash ?? "",
      pinnedHash: definition.pinnedHash ?? "",
    },
  });
  const connection = same && theirs.find((c) => c.id === same.connectionId);
  return connection ? { connection, definition: same } : null;
}

/** The offered tools the agent is granted (its configuration's tool names), in the order offered. */
export async function grantedTools(
  db: Db,
  agent: AgentOwner,
  capabilities: readonly string[],
): Promise<OfferedTool[]> {
  const names = new Set(capabilities.filter(isToolName));
  if (!names.size) return [];
  return (await offeredTools(db, agent)).filter((tool) => names.has(tool.name));
}

/**
 * The granted tools as a run's model is told of them: as their connection's owner allowed
 * them (the pinned definition), never as their server describes them now. A tool added since
 * has no pin, and none of its text reaches the model (prompt/protocol.ts ConnectedTool).
 */
export async function toolSpecs(db: Db, agent: AgentOwner, capabilities: readonly string[]) {
  const tools = await grantedTools(db, agent, capabilities);
  return tools.flatMap((tool) => {
    const pinned = tool.definition.pinnedDefinition as {
      description?: unknown;
      inputSchema?: unknown;
    } | null;
    if (!pinned) return [];
    return [
      {
        name: tool.name,
        description: typeof pinned.description === "string" ? pinned.description : "",
        inputSchema: pinned.inputSchema ?? {},
        connection: tool.connection.name,
      },
    ];
  });
}
