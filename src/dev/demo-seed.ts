import type { PrismaClient } from "../db/prisma.ts";
import { newId } from "../lib/ids.ts";
import { inviteCode } from "../services/actions/studios.ts";
import { GRANTABLE } from "../services/agents/policy/capabilities.ts";
import { registry } from "../services/catalog/catalog.ts";
import type { Actor, Ctx } from "../services/registry/types.ts";
import { createPerson, createTenant } from "../services/tenants.ts";
import { createApiToken, verifyApiToken } from "../services/tokens.ts";
import { DEMO_MODEL } from "./demo-script.ts";

export const DEMO = {
  subdomain: "demo",
  people: [
    { handle: "alice", name: "Alice Moreau", email: "alice@demo.test", password: "alice-demo-pass" },
    { handle: "bob", name: "Bob Okafor", email: "bob@demo.test", password: "bob-demo-pass" },
  ],
} as const;

/**
 * `keep`: the token the last run printed (bin/demo keeps it in .demo/token). While it still
 * works it stays alice's demo token, so a curl line copied earlier keeps working; otherwise
 * she gets a fresh one and the old demo tokens are revoked.
 */
export async function seedDemo(db: PrismaClient, keep?: string) {
  const tenant =
    (await db.tenant.findUnique({ where: { subdomain: DEMO.subdomain } })) ??
    (await createTenant(db, DEMO.subdomain, "Demo Co"));
  const users = [];
  for (const person of DEMO.people) {
    const existing = await db.user.findUnique({
      where: { tenantId_handle: { tenantId: tenant.id, handle: person.handle } },
    });
    users.push(existing ?? (await createPerson(db, tenant.id, person)));
  }
  const [alice, bob] = users as [(typeof users)[number], (typeof users)[number]];
  // Alice runs the workspace: she sees everyone's agent spend on /usage.
  if (!alice.tenantAdmin) await db.user.update({ where: { id: alice.id }, data: { tenantAdmin: true } });
  // The scripted demo model is in no public price list: a workspace price makes its
  // (pretend) spend visible on the dashboards, priced like a small hosted model.
  const settings = (tenant.settings ?? {}) as Record<string, unknown>;
  if (!(settings.pricing as Record<string, unknown> | undefined)?.[DEMO_MODEL])
    await db.tenant.update({
      where: { id: tenant.id },
      data: {
        settings: {
          ...settings,
          pricing: {
            ...(settings.pricing as object),
            [DEMO_MODEL]: { input: 0.4, cached_input: 0.1, output: 1.6 },
          },
        },
      },
    });
  const asActor = (user: typeof alice): Ctx => ({ db, tenant, actor: user as Actor });

  let studio = await db.studio.findUnique({
    where: { tenantId_handle: { tenantId: tenant.id, handle: "general" } },
  });
  if (!studio) {
    studio = await db.studio.create({
      data: {
        id: newId(),
        tenantId: tenant.id,
        handle: "general",
        name: "General",
        description: "Everything that concerns the whole team.",
        inviteCode: inviteCode(),
        createdById: alice.id,
        members: {
          create: [
            { userId: alice.id, tenantId: tenant.id, role: "admin" },
            { userId: bob.id, tenantId: tenant.id, role: "member" },
          ],
        },
      },
    });
    // Content goes through the registry, as a person would create it, so events and notifications are real.
    const run = (user: typeof alice, path: string, action: string, params: Record<string, unknown>) =>
      registry.run(asActor(user), path, action, params, { form: false });
    await run(alice, "/studios/general", "create_note", {
      title: "Welcome to Cadre",
      text: "This studio is where the whole team writes things down.\n\n- Notes for news and context\n- Decisions when we need to choose\n- Commitments when we need enough people on board",
    });
    const kickoff = await run(bob, "/studios/general", "create_note", {
      title: "Offsite venue shortlist",
      text: "I visited three places last week. The lake house is the favourite so far — @alice what do you think?",
    });
    await run(alice, kickoff.location, "add_comment", {
      text: "The lake house looks great. Let's decide between the top two.",
    });
    const decision = await run(alice, "/studios/general", "create_decision", {
      question: "Where should we hold the spring offsite?",
      description: "Budget is about €6k for 12 people, two nights.",
      options: "Lake house\nCity hotel\nMountain lodge",
    });
    const options = await db.decisionOption.findMany({
      where: { decisionId: decision.location.split("/").pop()! },
    });
    const byTitle = new Map(options.map((o) => [o.title, o.id]));
    await run(bob, decision.location, "vote", {
      option_id: byTitle.get("Lake house"),
      accept: true,
      prefer: true,
    });
    await run(bob, decision.location, "vote", {
      option_id: byTitle.get("Mountain lodge"),
      accept: true,
      prefer: false,
    });
    await run(alice, decision.location, "vote", {
      option_id: byTitle.get("Lake house"),
      accept: true,
      prefer: false,
    });
    const commitment = await run(bob, "/studios/general", "create_commitment", {
      title: "Run the spring charity 10k together",
      critical_mass: 4,
      description: "If four of us sign up, we register as a team.",
    });
    await run(bob, commitment.location, "join_commitment", {});
  }

  await seedScout(asActor(alice), studio.handle);
  await seedScribe(asActor(alice), studio.handle);

  const kept = keep ? await verifyApiToken(db, tenant.id, keep) : null;
  let token = keep;
  if (!token || kept?.user.id !== alice.id) {
    await db.apiToken.updateMany({
      where: { userId: alice.id, name: "bin/demo", revokedAt: null },
      data: { revokedAt: new Date() },
    });
    token = (await createApiToken(db, tenant.id, alice.id, "bin/demo")).token;
  }
  return {
    tenant: tenant.subdomain,
    studio: studio.handle,
    token,
    /** The token printed last time still works. */
    tokenKept: token === keep,
    people: DEMO.people.map((p) => ({ ...p })),
  };
}

/** Alice's agent @scout in studio `studio`: something it watches, and a schedule, so a newcomer sees both at work. */
async function seedScout(alice: Ctx, studio: string) {
  const existing = await alice.db.user.findUnique({
    where: { tenantId_handle: { tenantId: alice.tenant.id, handle: "scout" } },
  });
  if (existing) return;
  const created = await registry.run(
    alice,
    "/subagents",
    "create_subagent",
    {
      name: "Scout",
      handle: "scout",
      identity_prompt:
        "You are Scout, Alice's research assistant. When someone mentions you, read the thread and reply helpfully and briefly.",
      max_steps: 10,
    },
    { form: false },
  );
  await registry.run(alice, created.location, "add_to_studio", { studio }, { form: false });
  // Something it watches, and something it does on its own, so a newcomer sees both at work.
  const venue = await alice.db.note.findFirst({
    where: { tenantId: alice.tenant.id, title: "Offsite venue shortlist" },
  });
  if (venue)
    await registry.run(
      alice,
      `/studios/${studio}/notes/${venue.id}`,
      "subscribe",
      { agent: "scout", commented: true },
      { form: false },
    );
  await registry.run(
    alice,
    "/subagents/scout/schedules",
    "add_schedule",
    {
      cron: "0 9 * * 1-5",
      time_zone: "Europe/Paris",
      task: "Read yesterday's notes in #general and post a short summary as a comment on the “Welcome to Cadre” note. If there were none, finish.",
    },
    { form: false },
  );
}

/**
 * @scribe, owned by the studio `studio` rather than a person: every admin of it manages
 * the agent, any member may give it tasks, and its notes wait for an admin's approval.
 */
async function seedScribe(alice: Ctx, studio: string) {
  const existing = await alice.db.user.findUnique({
    where: { tenantId_handle: { tenantId: alice.tenant.id, handle: "scribe" } },
  });
  if (existing) return;
  const run = (path: string, action: string, params: Record<string, unknown>) =>
    registry.run(alice, path, action, params, { form: false });
  await run(`/studios/${studio}`, "create_subagent", {
    name: "Scribe",
    handle: "scribe",
    identity_prompt:
      "You are Scribe, the team's note taker. When someone mentions you, write up what was said as a short, clear note.",
  });
  await run("/subagents/scribe", "update_subagent", { max_steps: 10 });
  await run("/subagents/scribe", "set_member_runs", { members_may_run: true });
  // A new agent may only read and comment: a note taker is granted notes too, after review.
  await run("/subagents/scribe/settings", "set_capabilities", {
    ...Object.fromEntries(
      GRANTABLE.map((action) => [
        action,
        action === "create_note"
          ? "approval"
          : action === "add_comment" || action === "confirm_read"
            ? "on"
            : "off",
      ]),
    ),
    approval_mode: "continue",
    approval_expiry_hours: 24,
  });
}
