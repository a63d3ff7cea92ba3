// The isolation sweep's owner-bound refusals (issue 42): on tenant A's seeds, an agent whose
// owner is no longer a member of A's studios, though the agent still is, and a studio's agent
// slipped into another studio. Each must get, on every page the registry has, the 404 its
// owner (for the studio's agent: a person in no studio) gets, and read nothing of a studio it
// may not read. Used by test/tenant-isolation-owner-bound.test.ts and test/tenant-isolation-live.test.ts.
import { newId } from "../../src/lib/ids.ts";
import { createApiToken } from "../../src/services/tokens.ts";
import { act, testPrisma } from "./app.ts";
import type { Caller } from "./isolation-callers.ts";
import { addPerson, deliverEvents } from "./isolation-seed-studio.ts";
import type { Seed, Victim } from "./isolation-seeds.ts";

export interface OwnerBound {
  /** A person who was in both of A's studios and left them by a side door (no action). */
  owner: Caller;
  /** The owner's agent: still a member of both studios, watching them, mentioned in each. */
  agent: Caller;
  /** The `only` seed's agent, which its studio owns, slipped into `general` as a member. */
  studioAgent: Caller;
  /** The shared seed with the owner's agent and the owner named, so its own pages are swept too. */
  own: Seed;
  /** What each studio holds: words no answer to an agent outside it may contain. */
  needles: { shared: string[]; only: string[] };
}

/** Words only a reader of the seed's studio can know: its objects' ids, its content, its name. */
function studioNeedles(v: Victim, seed: Seed, studioName: string): string[] {
  return [
    ...[seed.note, seed.decision, seed.option, seed.commitment, ...Object.values(seed.comments)],
    `${v.mark} ${seed.label}`,
    `${studioName} ${v.mark}`,
    seed.studio.inviteCode,
    ...(seed.studio.handle === "general" ? [] : [seed.studio.handle]),
  ];
}

async function tokenOf(tenantId: string, userId: string): Promise<string> {
  return (await createApiToken(testPrisma(), tenantId, userId, "owner-bound", { scope: "manage" })).token;
}

/**
 * The owner and its agent join both studios through the registry, the agent watches them and
 * is mentioned in each (a notification of its own from each). Nothing has left yet: reading
 * now is the control; `ownerLeaves` opens the side door.
 */
export async function seedOwnerBound(v: Victim): Promise<OwnerBound> {
  const w = v.world;
  const db = testPrisma();
  const rand = newId(6);
  const owner = await addPerson(w, `ex-${rand}`, "Ex");
  const handle = `exbot-${rand}`;
  await act(w, owner, "/studios", "join_studio", { invite_code: v.shared.studio.inviteCode });
  await act(w, owner, "/studios", "join_studio", { invite_code: v.only.studio.inviteCode });
  await act(w, owner, "/subagents", "create_subagent", { name: "Ex bot", handle });
  for (const [seed, author] of [
    [v.shared, w.alice],
    [v.only, v.zed],
  ] as const) {
    await act(w, owner, `/subagents/${handle}`, "add_to_studio", { studio: seed.studio.handle });
    await act(w, owner, `/studios/${seed.studio.handle}`, "subscribe", { agent: handle });
    await act(w, author, `/studios/${seed.studio.handle}/notes/${seed.note}`, "add_comment", {
      text: `Mention ${v.mark} ${seed.label} for @${handle}`,
    });
  }
  await deliverEvents(w.tenant.id);
  const agent = await db.user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle } });
  const studioAgent = await db.user.findFirstOrThrow({
    where: { tenantId: w.tenant.id, handle: v.only.agent },
  });
  const callers = {
    owner: { label: `owner @${owner.handle}`, host: w.host, token: owner.token },
    agent: { label: `agent @${handle}`, host: w.host, token: await tokenOf(w.tenant.id, agent.id) },
    studioAgent: {
      label: `studio agent @${studioAgent.handle}`,
      host: w.host,
      token: await tokenOf(w.tenant.id, studioAgent.id),
    },
  };
  return {
    ...callers,
    own: { ...v.shared, label: "own", actor: owner, agent: handle, watcher: handle },
    needles: {
      shared: studioNeedles(v, v.shared, "General"),
      only: studioNeedles(v, v.only, "Vault"),
    },
  };
}

/**
 * The owner leaves both studios by a side door (rows deleted, no action ran), so the agent's
 * own memberships stay: only the owner-bound rule can keep it out. The studio's agent is
 * slipped into `general` the same way.
 */
export async function ownerLeaves(v: Victim, bound: OwnerBound): Promise<void> {
  const db = testPrisma();
  const tenantId = v.world.tenant.id;
  const owner = await db.user.findFirstOrThrow({ where: { tenantId, handle: bound.own.actor.handle } });
  const agent = await db.user.findFirstOrThrow({ where: { tenantId, handle: bound.own.agent } });
  const studios = [v.shared.studio.id, v.only.studio.id];
  await db.studioMember.deleteMany({ where: { userId: owner.id, studioId: { in: studios } } });
  const kept = await db.studioMember.count({ where: { userId: agent.id, studioId: { in: studios } } });
  if (kept !== 2)
    throw new Error(`owner-bound seed: the agent should still be in both studios, is in ${kept}`);
  const studioAgent = await db.user.findFirstOrThrow({ where: { tenantId, handle: v.only.agent } });
  await db.studioMember.create({ data: { studioId: v.shared.studio.id, userId: studioAgent.id, tenantId } });
}

/** Who is checked on which seed's URLs, against whose answer, and what it must not read. */
export function ownerBoundCases(v: Victim, bound: OwnerBound) {
  const everything = [...bound.needles.shared, ...bound.needles.only, v.findme];
  return [
    // The owner's agent: nothing of either studio, wherever the URL points.
    ...[v.shared, v.only, bound.own].map((seed) => ({
      who: bound.agent,
      seed,
      needles: everything,
    })),
    // The vault's agent reads the vault (its own studio), and nothing of general.
    ...[v.shared, bound.own].map((seed) => ({ who: bound.studioAgent, seed, needles: bound.needles.shared })),
  ];
}

/** Searches the sweep adds to the registry's pages: a page pattern has no query. */
export const searchesFor = (v: Victim): string[] => [
  `/search?q=${v.findme}`,
  `/search?q=${encodeURIComponent(`${v.mark} shared`)}`,
];
