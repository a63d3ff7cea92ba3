// A's connected tools for the isolation sweep: a connection its agent's owner can grant from
// (alice's own for scout; the studio's for zed's studio agent), one pinned tool on it, and a
// call of that tool by the agent with its result. Rows as listTools and call_tool leave them:
// granting never reaches the server, and no server runs here (tool-runs*.test.ts call real ones).
import { newId } from "../../src/lib/ids.ts";
import { createConnection, definitionHash } from "../../src/services/tools/index.ts";
import { type Person, testPrisma, type World } from "./app.ts";

export interface SeededTools {
  /** The tool's name as the agent is granted it, `<slug>__<tool>`. */
  tool: string;
  /** A call of it by the agent: `/tools?call=<id>` is its page. */
  toolCall: string;
  /** The connection's bearer token: never in any answer. */
  secret: string;
}

export async function seedTools(
  w: World,
  owner: Person,
  agentHandle: string,
  mark: string,
  studioHandle?: string,
): Promise<SeededTools> {
  const db = testPrisma();
  const studio = studioHandle
    ? await db.studio.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: studioHandle } })
    : null;
  const secret = `tok_${newId(24)}`;
  const connection = await createConnection(db, {
    tenantId: w.tenant.id,
    ...(studio ? { studioId: studio.id } : { ownerUserId: owner.id }),
    name: `Tracker ${mark}`,
    slug: "tracker",
    // A closed local port: nothing here calls it.
    url: "http://127.0.0.1:9/mcp",
    authKind: "bearer",
    bearerToken: secret,
    audience: studio ? "studio" : "owner",
    createdById: owner.id,
  });
  const definition = { name: "lookup", description: `Look up ${mark}`, inputSchema: { type: "object" } };
  const hash = definitionHash(definition);
  await db.toolDefinition.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      connectionId: connection.id,
      ...definition,
      annotations: { readOnlyHint: true },
      hash,
      pinnedHash: hash,
      pinnedDefinition: definition,
    },
  });
  const agent = await db.user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: agentHandle } });
  const call = await db.toolCall.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      agentId: agent.id,
      connectionId: connection.id,
      connectionName: connection.name,
      tool: "tracker__lookup",
      server: "127.0.0.1:9",
      arguments: { query: mark },
      status: "done",
      result: `Found ${mark}`,
      source: studio ? { studio: studio.id } : { people: [owner.id] },
      durationMs: 12,
      finishedAt: new Date(),
    },
  });
  return { tool: "tracker__lookup", toolCall: call.id, secret };
}
