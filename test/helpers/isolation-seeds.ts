// The isolation sweep's two tenants (test/tenant-isolation.test.ts and its siblings): the
// victim A, everything of it made through the registry, and the attacker B, whose own pages
// carry A's ids as params. What one seed holds is `Seed`; the parts are in isolation-seed-*.ts.
import { rebuildTotals } from "../../src/dev/seed-usage.ts";
import { newId } from "../../src/lib/ids.ts";
import { issueLink } from "../../src/services/accounts/one-time-links.ts";
import { mintReviewLinks } from "../../src/services/reach/review-links.ts";
import { createSession } from "../../src/services/sessions.ts";
import { act, type Person, testPrisma, type World } from "./app.ts";
import {
  seedAgent,
  seedEndpoint,
  seedKeys,
  seedLedger,
  seedPending,
  seedReview,
  seedWatcher,
  seedWebhook,
} from "./isolation-seed-agents.ts";
import { addPerson, deliverEvents, must, seedStudio } from "./isolation-seed-studio.ts";
import { seedTools } from "./isolation-seed-tool-calls.ts";
import { seedConnections } from "./isolation-seed-tools.ts";

/** One self-contained set of A's objects, owned and seen by `actor`. */
export interface Seed {
  label: string;
  /** Whose objects the page URLs name. A "B" seed puts B's own objects in the URL and A's ids in the params. */
  owner: "A" | "B";
  actor: Person;
  /** Another member of the studio, who commented, voted and joined. */
  other: Person;
  studio: { id: string; handle: string; inviteCode: string };
  /** Invite code of an A studio the actor is NOT in (so join_studio can succeed for A). */
  joinCode: string;
  /** A-only member that member actions (update_member_role, remove_member) target. */
  memberTarget: string;
  note: string;
  decision: string;
  option: string;
  commitment: string;
  comments: { note: string; decision: string; commitment: string };
  notification: string;
  /** A session of the actor, the one end_session targets (never used to authenticate). */
  session: string;
  /** A passkey of the actor, the one rename_passkey and remove_passkey name (absent: they name one nobody has). */
  passkey?: string;
  /** An open invitation of A's, the one revoke_invitation withdraws (absent: it names one nobody has). */
  invitation?: string;
  /** A second API token of the actor, the one revoke_api_token targets (never used to authenticate). */
  token: { id: string; secret: string };
  /** The token a token's page URL names, when not `token`: in B's seed, a token of B's own, so the page is B's. */
  pageToken?: string;
  /** A subagent the actor owns, in no studio yet, and one of its runs, waiting for the owner's answer. */
  agent: string;
  run: string;
  /** A finished run of `agent` whose step 2 was a model call: the step page that replay_run re-runs from. */
  finished: string;
  /** A test case saved from `finished` (its page's URL and actions) and a spare the cases list deletes. */
  testCase: string;
  spareTestCase: string;
  /** The case a page URL names, when not `testCase`: in B's seed, one of B's own. */
  pageTestCase?: string;
  /** An experiment of `agent`'s (its page), and in B's seed B's own for the URL. */
  experiment: string;
  pageExperiment?: string;
  /** A schedule of `agent` (absent in a seed without one: its schedule actions then name one nobody has). */
  schedule?: string;
  /** The studio add_to_studio / remove_from_studio name; `aRef` when B has no studio with that handle. */
  agentStudio: { handle: string; aRef: boolean };
  /** An agent of the actor that is a member of `studio`: the one `subscribe` / `unsubscribe` name. */
  watcher: string;
  /** A subscription of `agent`, the one its subscriptions page's actions name. */
  subscription: string;
  /** A pending action of `agent`, the one page URLs name (`:pending`). */
  pending: string;
  /** A's pending actions that review actions name, one per page and action (`pattern action`), so each can succeed once. */
  pendings: Record<string, string>;
  /**
   * The actor's provider keys: `use` is the one `agent` calls with (it has usage in the
   * ledger, set_agent_api_key and test_api_key name it), `revoke` the one revoke_api_key
   * names, so the positive control's revoke does not break the others. Absent in a seed
   * without keys (test/capabilities.test.ts): its key actions then name a key nobody has.
   */
  keys?: { use: string; revoke: string };
  /**
   * The keys of the seed's studio (its keys page), the same way. In the seed whose agent is
   * the studio's (`only`), `keys` are these: the agent calls with the studio's key.
   */
  studioKeys?: { use: string; revoke: string };
  /** The key the seed's agent may call with, when not `keys.use` (a studio's agent: its studio's). */
  agentKey?: string;
  /** A webhook of `agent`: its actions name it (rotate, disable, enable, then delete). Absent: they name one nobody has. */
  webhook?: string;
  /** An outgoing webhook of the actor's (test, off, on, then delete). Absent: its actions name one nobody has. */
  endpoint?: string;
  /** The endpoint a page URL names, when not `endpoint`: in B's seed, one of B's own. */
  pageEndpoint?: string;
  /** Review links mailed to the actor: approve and reject, each for its own pending action (`/review/:token …`). */
  links?: { approve: string; reject: string };
  /** The link a page URL names, when not `links.approve`: in B's seed, one of B's own. */
  pageLink?: string;
  /**
   * The model the model params name (an agent's model and fallbacks, the workspace default): one
   * only A's catalogue has (A prices it), `aRef` in B's seed. Absent: a price-list model.
   */
  catalogueModel?: { name: string; aRef: boolean };
  /** The actor's tool connection and the seed studio's (absent: their actions name one nobody has). */
  connection?: string;
  studioConnection?: string;
  /** The connections page URLs name, when not those: in B's seed, B's own. */
  pageConnection?: string;
  pageStudioConnection?: string;
  /** A hostname A's workspace claimed: what the hostname actions name (B may neither take nor drop it). */
  hostname?: string;
  /** A connected tool the actor can grant `agent` (isolation-seed-tool-calls.ts); absent: the tool actions name one nobody has. */
  tool?: string;
}

export interface Victim {
  world: World;
  mark: string;
  /** A word only A's content contains, for searching. */
  findme: string;
  zed: Person;
  yan: Person;
  /** studio `general` / user `alice`: paths that B has too. */
  shared: Seed;
  /** The plaintext of every provider key and webhook secret A made: never to be seen again, anywhere. */
  secrets: string[];
  /** A's webhooks with their secrets, for signed deliveries (POST /hooks/:id is no registry page). */
  hooks: { id: string; secret: string }[];
  /** A model only A's workspace prices (/usage/pricing) and A's agents used (the ledger). */
  model: string;
  /** Calls of A's agents' tools, by seed label: their pages are `/tools?call=<id>`. */
  toolCalls: { shared: string; only: string };
  /** A studio and a user whose handles exist only in A. */
  only: Seed;
}

/** An open invitation in the world's workspace, as an admin's invite_people leaves it (no mail: nobody reads it). */
async function invitationOf(w: World, email: string): Promise<string> {
  const { link } = await issueLink(testPrisma(), {
    tenantId: w.tenant.id,
    purpose: "invite",
    email,
    data: { role: "member", studios: [] },
  });
  return link.id;
}

/**
 * Tenant A, everything created through the registry: two studios (`general`, which B
 * also has, and one only A has), each with a note + comment + read, a decision with
 * options and votes + comment, a commitment with a participant + comment; mention
 * notifications; extra API tokens; a subagent per owner with a waiting run (`scout`
 * for alice, as B's alice also has), its settings (capabilities, approval list, a rule)
 * and pending actions (inserted). Every text and name carries `mark`.
 */
export async function seedVictim(w: World): Promise<Victim> {
  const rand = newId(6);
  const mark = `SECRET-A-${rand}`;
  const findme = `findme${rand}`;
  const zed = await addPerson(w, `zed-${rand}`, "Zed");
  const yan = await addPerson(w, `yan-${rand}`, "Yan");
  const vault = `vault-${rand}`;
  await act(w, zed, "/studios", "create_studio", { name: `Vault ${mark}`, handle: vault, description: mark });
  const db = testPrisma();
  const vaultCode = (
    await must(db.studio.findFirst({ where: { tenantId: w.tenant.id, handle: vault } }), "vault")
  ).inviteCode;
  await act(w, yan, "/studios", "join_studio", { invite_code: w.studio.inviteCode });
  await act(w, yan, "/studios", "join_studio", { invite_code: vaultCode });
  await act(w, w.alice, "/studios/general", "update_studio", { name: `General ${mark}`, description: mark });
  for (const p of [w.alice, w.bob, w.carol, zed, yan])
    await act(w, p, `/u/${p.handle}/settings`, "update_profile", {
      name: `${p.name} ${mark}`,
      bio: `Bio ${mark}`,
    });
  const shared = await seedStudio(w, "shared", w.alice, w.bob, "general", mark, findme);
  const only = await seedStudio(w, "only", zed, yan, vault, mark, findme);
  // `scout` is also the handle of B's alice's subagent; zed's agent exists only in A.
  const sharedAgent = await seedAgent(w, w.alice, "scout", mark);
  // Zed's agent is the studio's: every agent page of the `only` seed is a studio agent's. Its
  // run was skipped, so some seed can retry a run (answer_question uses scout's, waiting).
  const onlyAgent = await seedAgent(w, zed, `zagent-${rand}`, mark, vault, "skipped");
  const sharedWatcher = await seedWatcher(w, w.alice, `watch-${rand}`, "general", mark);
  const onlyWatcher = await seedWatcher(w, zed, `zwatch-${rand}`, vault, mark);
  // One paused schedule, so some seed can use each schedule action (resume_schedule needs one).
  await act(w, zed, `/subagents/zagent-${rand}/schedules`, "pause_schedule", {
    schedule: onlyAgent.schedule,
  });
  const threads = (x: typeof shared) => ({ note: x.note, decision: x.decision, commitment: x.commitment });
  const sharedReview = await seedReview(
    w,
    w.alice,
    {
      handle: "scout",
      watcher: sharedWatcher,
      studio: "general",
      run: sharedAgent.run,
      threads: threads(shared),
    },
    mark,
  );
  const onlyReview = await seedReview(
    w,
    zed,
    {
      handle: `zagent-${rand}`,
      watcher: onlyWatcher,
      studio: vault,
      run: onlyAgent.run,
      threads: threads(only),
    },
    mark,
  );
  // Zed is a workspace admin (whole-workspace /usage, the price list's actions); alice is not.
  await db.user.update({ where: { id: zed.id }, data: { tenantAdmin: true } });
  const hostname = `a-${rand.toLowerCase().replace(/[^a-z0-9]/g, "x")}.example.test`;
  await act(w, zed, "/settings/hostnames", "add_hostname", { hostname });
  const model = `m-${mark}`;
  await act(w, zed, "/usage/pricing", "set_model_price", { model, input: 1, cached_input: 0.5, output: 2 });
  const sharedMoney = await seedKeys(w, w.alice, `/u/${w.alice.handle}/settings/api-keys`, mark);
  const onlyMoney = await seedKeys(w, zed, `/u/${zed.handle}/settings/api-keys`, mark);
  const sharedStudioKeys = await seedKeys(w, w.alice, "/studios/general/settings/api-keys", mark);
  const onlyStudioKeys = await seedKeys(w, zed, `/studios/${vault}/settings/api-keys`, mark);
  await seedLedger(w, w.alice, "scout", sharedAgent.run, sharedMoney.keys.use, model);
  await seedLedger(w, null, `zagent-${rand}`, onlyAgent.run, onlyStudioKeys.keys.use, model);
  const sharedHook = await seedWebhook(w, w.alice, "scout", mark);
  const onlyHook = await seedWebhook(w, zed, `zagent-${rand}`, mark);
  const sharedEndpoint = await seedEndpoint(w, w.alice, mark);
  const onlyEndpoint = await seedEndpoint(w, zed, mark);
  const sharedTools = await seedTools(w, w.alice, "scout", mark);
  const onlyTools = await seedTools(w, zed, `zagent-${rand}`, mark, vault);
  const sharedConnections = await seedConnections(w, w.alice, "general", mark);
  const onlyConnections = await seedConnections(w, zed, vault, mark);
  await rebuildTotals(db, w.tenant.id);
  await deliverEvents(w.tenant.id);
  const sessionOf = async (p: Person) =>
    (
      await createSession(
        db,
        w.tenant.id,
        p.id,
        { idleHours: 24, absoluteHours: 24 },
        {
          userAgent: "isolation probe",
          ipAddress: "127.0.0.1",
        },
      )
    ).id;
  // A passkey row as registration leaves one: its key is never checked by rename or remove.
  const passkeyOf = async (p: Person) =>
    (
      await db.passkey.create({
        data: {
          id: newId(),
          tenantId: w.tenant.id,
          userId: p.id,
          credentialId: newId(22),
          publicKey: new Uint8Array(77),
          name: "Laptop",
          deviceType: "singleDevice",
        },
      })
    ).id;
  const notification = async (p: Person) =>
    (
      await must(
        db.notification.findFirst({
          where: { userId: p.id, dismissedAt: null },
          orderBy: { createdAt: "asc" },
        }),
        `notification of @${p.handle}`,
      )
    ).id;
  return {
    world: w,
    mark,
    findme,
    zed,
    yan,
    secrets: [
      ...[sharedMoney, onlyMoney, sharedStudioKeys, onlyStudioKeys].flatMap((k) => k.secrets),
      sharedHook.secret,
      onlyHook.secret,
      sharedEndpoint.secret,
      onlyEndpoint.secret,
      sharedTools.secret,
      onlyTools.secret,
    ],
    hooks: [sharedHook, onlyHook],
    model,
    toolCalls: { shared: sharedTools.toolCall, only: onlyTools.toolCall },
    shared: {
      ...shared,
      ...sharedAgent,
      ...sharedReview,
      watcher: sharedWatcher,
      keys: sharedMoney.keys,
      studioKeys: sharedStudioKeys.keys,
      webhook: sharedHook.id,
      endpoint: sharedEndpoint.id,
      tool: sharedTools.tool,
      connection: sharedConnections.connection,
      studioConnection: sharedConnections.studioConnection,
      catalogueModel: { name: model, aRef: false },
      agentStudio: { handle: "general", aRef: false },
      joinCode: vaultCode,
      memberTarget: yan.handle,
      hostname,
      notification: await notification(w.alice),
      session: await sessionOf(w.alice),
      passkey: await passkeyOf(w.alice),
      invitation: await invitationOf(w, `invited-shared-${rand}@example.test`),
    },
    only: {
      ...only,
      ...onlyAgent,
      ...onlyReview,
      watcher: onlyWatcher,
      keys: onlyMoney.keys,
      studioKeys: onlyStudioKeys.keys,
      agentKey: onlyStudioKeys.keys.use,
      webhook: onlyHook.id,
      endpoint: onlyEndpoint.id,
      tool: onlyTools.tool,
      connection: onlyConnections.connection,
      studioConnection: onlyConnections.studioConnection,
      catalogueModel: { name: model, aRef: false },
      agentStudio: { handle: vault, aRef: true },
      joinCode: w.studio.inviteCode,
      memberTarget: yan.handle,
      hostname,
      notification: await notification(zed),
      session: await sessionOf(zed),
      passkey: await passkeyOf(zed),
      invitation: await invitationOf(w, `invited-only-${rand}@example.test`),
    },
  };
}

/**
 * Tenant B's own content in its studio `general` (a note, a decision with an option, a
 * commitment), and a seed whose URLs name these B objects while every id-valued param
 * (option_id, reply_to, notification, token and pending-action ids, invite code, member
 * handle) is A's. B's scout has a pending action of its own, for `:pending` URLs.
 */
export async function seedAttacker(w: World, v: Victim): Promise<{ mark: string; smuggle: Seed }> {
  const mark = `MARK-B-${newId(6)}`;
  const last = (location: string) => location.split("/").pop()!;
  const note = await act(w, w.alice, "/studios/general", "create_note", {
    title: `B note ${mark}`,
    text: mark,
  });
  await act(w, w.bob, note.location, "add_comment", { text: `B comment ${mark} @alice` });
  const decision = await act(w, w.alice, "/studios/general", "create_decision", {
    question: `B question ${mark}?`,
    options: `B option ${mark}`,
  });
  const commitment = await act(w, w.alice, "/studios/general", "create_commitment", {
    title: `B commitment ${mark}`,
    critical_mass: 5,
  });
  const agent = await seedAgent(w, w.alice, "scout", mark);
  await act(w, w.alice, "/u/alice/settings/tokens", "create_api_token", { name: `B token ${mark}` });
  const pageToken = await must(
    testPrisma().apiToken.findFirst({ where: { userId: w.alice.id, name: `B token ${mark}` } }),
    "B's api token",
  );
  const { url, link } = await seedPending(w, "scout", "general", mark, ["url", "link"]);
  const pageEndpoint = await seedEndpoint(w, w.alice, mark);
  const pageTools = await seedConnections(w, w.alice, "general", mark);
  const linkRow = await testPrisma().agentPendingAction.findUniqueOrThrow({ where: { id: link! } });
  const { approve: pageLink } = await mintReviewLinks(testPrisma(), {
    tenantId: w.tenant.id,
    pendingId: link!,
    userId: w.alice.id,
    params: linkRow.params,
    expiresAt: linkRow.expiresAt,
  });
  // B's alice is a workspace admin: B's whole-workspace usage views (the widest queries)
  // are swept too, and must show B's own spend, never A's.
  const db = testPrisma();
  await db.user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
  const scout = await must(db.user.findFirst({ where: { tenantId: w.tenant.id, handle: "scout" } }), "scout");
  await db.llmUsage.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      agentId: scout.id,
      ownerId: w.alice.id,
      runId: agent.run,
      stepNumber: 1,
      model: `b-model-${mark}`,
      pricingVersion: "2026-11-01",
      priced: false,
      inputTokens: 100,
      cachedTokens: 0,
      outputTokens: 10,
      costMicros: 0n,
      latencyMs: 100,
    },
  });
  await rebuildTotals(db, w.tenant.id);
  await deliverEvents(w.tenant.id);
  return {
    mark,
    smuggle: {
      ...v.shared,
      label: "B's objects, A's ids in params",
      owner: "B",
      actor: w.alice,
      other: w.bob,
      studio: w.studio,
      note: last(note.location),
      decision: last(decision.location),
      commitment: last(commitment.location),
      agent: agent.agent,
      run: agent.run,
      finished: agent.finished,
      // A's cases in params, B's own in the case page's URL.
      pageTestCase: agent.testCase,
      pageExperiment: agent.experiment,
      // A's ids in params: A's watcher, subscription and schedule (B's scout has its own, so the actions are offered).
      watcher: v.shared.watcher,
      subscription: v.shared.subscription,
      schedule: v.shared.schedule,
      pending: url!,
      pageToken: pageToken.id,
      pageEndpoint: pageEndpoint.id,
      pageConnection: pageTools.connection,
      pageStudioConnection: pageTools.studioConnection,
      pageLink,
      agentStudio: { handle: v.only.studio.handle, aRef: true },
      // A model only A's workspace prices: never in B's catalogue.
      catalogueModel: { name: v.model, aRef: true },
    },
  };
}
