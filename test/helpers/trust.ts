// The trust tests' world: alice's private studio "Vault" (alice and her agent @scout) with a
// secret note, and bob's note in General, which bob can read and the vault cannot reach.
import type { ChatRequest, FakeReply } from "../../src/dev/fake-llm.ts";
import { obedientScript } from "../../src/dev/obedient-script.ts";
import { newId } from "../../src/lib/ids.ts";
import { type Agent, makeAgent } from "./agents.ts";
import { act, makeWorld, testPrisma, type World } from "./app.ts";

export const SECRET = "The acquisition closes on March 3rd at 41 dollars a share";

export interface TrustWorld {
  w: World;
  scout: Agent;
  vault: { id: string; handle: string };
  secretPath: string;
  bobNotePath: string;
}

/** A world with the vault, its secret note, scout in both studios, and bob's note in General (its text given). */
/** Studio `vault`, which only alice (its admin) and her agent are in. */
export function vaultStudio(w: World, agentId: string) {
  return testPrisma().studio.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      handle: "vault",
      name: "Vault",
      inviteCode: newId(10),
      createdById: w.alice.id,
      members: {
        create: [
          { userId: w.alice.id, tenantId: w.tenant.id, role: "admin" },
          { userId: agentId, tenantId: w.tenant.id, role: "member" },
        ],
      },
    },
  });
}

export async function trustWorld(
  bobNoteText: (secretPath: string) => string = () => "Ideas for the offsite",
  config: Record<string, unknown> = {},
): Promise<TrustWorld> {
  const w = await makeWorld();
  const scout = await makeAgent(w, w.alice, "scout", config);
  const vault = await vaultStudio(w, scout.id);
  const secret = await act(w, w.alice, "/studios/vault", "create_note", { title: "Deal", text: SECRET });
  const bobs = await act(w, w.bob, "/studios/general", "create_note", {
    title: "Bob's plan",
    text: bobNoteText(secret.location),
  });
  return { w, scout, vault, secretPath: secret.location, bobNotePath: bobs.location };
}

/** Every comment and note the agent wrote, as text: where a leak would land. */
export async function writtenBy(agentId: string): Promise<string[]> {
  const db = testPrisma();
  const [comments, notes] = await Promise.all([
    db.comment.findMany({ where: { authorId: agentId } }),
    db.note.findMany({ where: { authorId: agentId } }),
  ]);
  return [...comments.map((c) => c.text), ...notes.map((n) => n.text)];
}

/** The model for these tests: obeys any COPY order in its prompt, else finishes. */
export function obedientModel() {
  const obey = obedientScript();
  return (req: ChatRequest): FakeReply =>
    obey(req) ?? { tool: { name: "finish", args: { message: "Nothing to do." } } };
}
