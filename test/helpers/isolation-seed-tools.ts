// Tool connections for the isolation sweep: one of the actor's own and one of the seed's
// studio, both OAuth (so sign_in_tool_connection has one to start: its server is not there,
// which it answers in words; the leak test covers static tokens), each added through the registry against
// a closed local port (listing fails fast and harmlessly), each with one tool whose
// definition changed since it was pinned, so accept_tool_change has something to accept.
import { newId } from "../../src/lib/ids.ts";
import { act, type Person, testPrisma, type World } from "./app.ts";

/** The tool each seeded connection lists, changed since allowed. */
export const SEED_URL = "http://127.0.0.1:9/mcp";
export const SEEDED_TOOL = "ping";

async function seedConnection(w: World, owner: Person, page: string, body: Record<string, unknown>) {
  const made = await act(w, owner, page, "add_tool_connection", {
    url: SEED_URL,
    ...body,
  });
  const id = made.location.split("/").pop()!;
  await testPrisma().toolDefinition.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      connectionId: id,
      name: SEEDED_TOOL,
      description: "Answers pong.",
      hash: "b".repeat(64),
      pinnedHash: "a".repeat(64),
      pinnedDefinition: { name: SEEDED_TOOL, description: "Answers.", inputSchema: {} },
    },
  });
  return id;
}

export async function seedConnections(w: World, owner: Person, studio: string, mark: string) {
  const connection = await seedConnection(w, owner, `/u/${owner.handle}/settings/tools`, {
    name: `Tools ${mark}`,
    slug: `seed_${newId(6)}`,
    audience: "owner",
    auth: "oauth",
  });
  const studioConnection = await seedConnection(w, owner, `/studios/${studio}/settings/tools`, {
    name: `Studio tools ${mark}`,
    slug: `seed_${newId(6)}`,
    audience: "studio",
    auth: "oauth",
  });
  return { connection, studioConnection };
}
