// Helpers for test/tenant-isolation.test.ts: seeding a victim tenant (A) and an
// attacker tenant (B), turning registry patterns and action schemas into concrete
// requests, and checking the database and responses for anything of A's.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { rebuildTotals } from "../../src/dev/seed-usage.ts";
import { newId } from "../../src/lib/ids.ts";
import { issueLink } from "../../src/services/accounts/one-time-links.ts";
import { eventFlag } from "../../src/services/actions/outgoing-webhooks.ts";
import { SUBSCRIPTION_EVENTS } from "../../src/services/agents/automations/subscriptions.ts";
import { DEFAULT_CAPABILITIES } from "../../src/services/agents/core/settings.ts";
import { GRANTABLE } from "../../src/services/agents/policy/capabilities.ts";
import { pages } from "../../src/services/catalog/catalog.ts";
import { notifyForEvent } from "../../src/services/notifications.ts";
import { hashPassword } from "../../src/services/passwords.ts";
import { HOOK_EVENTS } from "../../src/services/reach/news.ts";
import { REACH_KINDS } from "../../src/services/reach/preferences.ts";
import { mintReviewLinks } from "../../src/services/reach/review-links.ts";
import { fields } from "../../src/services/registry/params.ts";
import type { ActionDef, PageDef } from "../../src/services/registry/types.ts";
import { writeScratchpad } from "../../src/services/scratchpad.ts";
import { createSession } from "../../src/services/sessions.ts";
import { act, type Browser, login, PASSWORD, type Person, testPrisma, type World } from "./app.ts";
import { permissions } from "./approvals.ts";

// ---------------------------------------------------------------------------------------------
// Seeding

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
  /** A hostname A's workspace claimed: what the hostname actions name (B may neither take nor drop it). */
  hostname?: string;
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
  /** A studio and a user whose handles exist only in A. */
  only: Seed;
}

let hash: Promise<string> | undefined;

/** A person in `world` beyond makeWorld's three, with a password and a live token. */
export async function addPerson(world: World, handle: string, name: string): Promise<Person> {
  const db = testPrisma();
  hash ??= hashPassword(PASSWORD);
  const email = `${handle}@${world.tenant.subdomain}.test`;
  const u = await db.user.create({
    data: {
      id: newId(),
      tenantId: world.tenant.id,
      handle,
      name,
      email,
      kind: "person",
      passwordHash: await hash,
    },
  });
  const person: Person = { id: u.id, handle, name, email, token: "" };
  // `manage`: the suite runs every action with it, tokens and keys included.
  const made = await act(world, person, `/u/${handle}/settings/tokens`, "create_api_token", {
    name: "auth",
    scope: "manage",
  });
  return { ...person, token: made.secret! };
}

async function must<T>(p: Promise<T | null>, what: string): Promise<T> {
  const v = await p;
  if (!v) throw new Error(`seed: ${what} not found`);
  return v;
}

/**
 * Turns every event of the tenant into notifications, as the worker would, and marks
 * them published. All of them, published or not: another test file's relay serves every
 * tenant of the database and may have taken some, and its worker could otherwise write
 * A's notifications later, in the middle of the no-write check. Notifying is idempotent.
 */
export async function deliverEvents(tenantId: string): Promise<void> {
  const db = testPrisma();
  const events = await db.event.findMany({ where: { tenantId }, orderBy: { createdAt: "asc" } });
  for (const e of events) await notifyForEvent(db, e.id);
  await db.event.updateMany({ where: { tenantId, publishedAt: null }, data: { publishedAt: new Date() } });
}

/**
 * A subagent of `owner` (through the registry) and one run of it, waiting for the
 * owner's answer. The run is inserted as the worker would leave it, with no outbox
 * event: a queued run (or its event) could be picked up by another test file's
 * worker, which serves every tenant of the run's database, and change under us.
 */
export async function seedAgent(
  w: World,
  owner: Person,
  handle: string,
  mark: string,
  studio?: string,
  /** `skipped`: the run was refused (its agent paused then), so retry_run has one to retry. */
  runStatus: "waiting" | "skipped" = "waiting",
) {
  await act(w, owner, "/subagents", "create_subagent", {
    name: `Agent ${mark}`,
    handle,
    identity_prompt: `Identity ${mark}`,
    ...(studio && { studio }),
  });
  const db = testPrisma();
  const agent = await must(db.user.findFirst({ where: { tenantId: w.tenant.id, handle } }), "subagent");
  const run = await db.subagentTaskRun.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      agentId: agent.id,
      initiatedById: owner.id,
      triggerKind: "manual",
      task: `Task ${mark}`,
      maxSteps: 5,
      timeoutSeconds: 60,
      ...(runStatus === "waiting"
        ? { status: "waiting", stopReason: "asked_owner", question: `Question ${mark}?` }
        : { status: "skipped", stopReason: "paused", error: `The agent is paused: ${mark}.` }),
      stepsCount: 1,
    },
  });
  // Its one step (its page /subagents/:handle/runs/:run/steps/1): it asked, with words of its own.
  await db.subagentTaskRunStep.create({
    data: {
      id: newId(),
      runId: run.id,
      tenantId: w.tenant.id,
      number: 1,
      type: "ask_owner",
      path: "/whoami",
      detail: { question: `Question ${mark}?`, resultPath: "/whoami", note: `Note ${mark}` },
      modelText: `Words ${mark}`,
    },
  });
  // Its memory (its memory page, and the run page's link to what the run wrote): one write of
  // the run, carrying A's mark, so a leak of it anywhere shows.
  await writeScratchpad(db, {
    ...{ tenantId: w.tenant.id, agentId: agent.id, authorId: agent.id, runId: run.id },
    ...{ kind: "write", text: `Scratchpad ${mark}` },
  });
  // What the agent watches (its subscriptions page), inserted: a person's agent is in no studio
  // yet; a studio's agent watches its own.
  const watched = await must(
    db.studio.findFirst({ where: { tenantId: w.tenant.id, ...(studio && { handle: studio }) } }),
    "a studio",
  );
  const subscription = await db.agentSubscription.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, agentId: agent.id, subjectType: "studio" },
      ...{ subjectId: watched.id, studioId: watched.id, events: ["created"], createdById: owner.id },
    },
  });
  return {
    agent: handle,
    run: run.id,
    finished: await seedFinished(w, agent.id, owner, mark),
    subscription: subscription.id,
    schedule: await seedSchedule(w, owner, handle, mark),
  };
}

/** A completed run of the agent: it read /whoami, then (a model call, its prompt's facts kept) finished. */
async function seedFinished(w: World, agentId: string, owner: Person, mark: string) {
  const db = testPrisma();
  const run = await db.subagentTaskRun.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      agentId,
      initiatedById: owner.id,
      triggerKind: "manual",
      task: `Finished task ${mark}`,
      maxSteps: 5,
      timeoutSeconds: 60,
      status: "completed",
      stopReason: "finished",
      finalMessage: `Done ${mark}`,
      stepsCount: 2,
    },
  });
  const step = { runId: run.id, tenantId: w.tenant.id, path: "/whoami" };
  await db.subagentTaskRunStep.createMany({
    data: [
      {
        ...step,
        id: newId(),
        number: 1,
        type: "navigate",
        detail: { ok: true, auto: true, page: `# Who am I ${mark}` },
      },
      {
        ...step,
        id: newId(),
        number: 2,
        type: "finish",
        detail: { message: `Done ${mark}`, prompt: { budget: 6000, hash: "0123456789abcdef" } },
      },
    ],
  });
  return run.id;
}

/** An agent of `owner` in studio `studio`, which subscribe and unsubscribe name. */
async function seedWatcher(w: World, owner: Person, handle: string, studio: string, mark: string) {
  await act(w, owner, "/subagents", "create_subagent", { name: `Watcher ${mark}`, handle });
  await act(w, owner, `/subagents/${handle}`, "add_to_studio", { studio });
  return handle;
}

/** A schedule of the agent `handle`, through the registry; its next fire time is hours away, so nothing fires it. */
export async function seedSchedule(w: World, owner: Person, handle: string, mark: string): Promise<string> {
  const made = await act(w, owner, `/subagents/${handle}/schedules`, "add_schedule", {
    cron: "0 9 * * *",
    time_zone: "Europe/Paris",
    task: `Scheduled ${mark}`,
  });
  return made.location.split("#")[1]!;
}

/** The actions that review a pending action by id. */
const REVIEW_ACTIONS = new Set(["approve_action", "reject_action", "approve_from_link", "reject_from_link"]);
/** `pattern action` for every page that lists a review action: each gets its own pending action. */
export const reviewKeys = (): string[] =>
  pages.flatMap((p) => p.actions.filter((a) => REVIEW_ACTIONS.has(a)).map((a) => `${p.pattern} ${a}`));

/**
 * Pending actions of the agent `handle`, inserted as the policy leaves them (status
 * `pending`, no outbox event): a `create_note` in `studio`, each carrying `mark`.
 * One per label; returns label → id.
 */
export async function seedPending(
  w: World,
  handle: string,
  studio: string,
  mark: string,
  labels: string[],
  /** Where a label's action was asked from: the agent (by handle) and run, when not `handle`'s and none. */
  from: (label: string) => { agent?: string; runId?: string } = () => ({}),
): Promise<Record<string, string>> {
  const db = testPrisma();
  const agentOf = async (h: string) =>
    (await must(db.user.findFirst({ where: { tenantId: w.tenant.id, handle: h } }), "subagent")).id;
  const out: Record<string, string> = {};
  for (const label of labels)
    out[label] = (
      await db.agentPendingAction.create({
        data: {
          id: newId(),
          tenantId: w.tenant.id,
          agentId: await agentOf(from(label).agent ?? handle),
          runId: from(label).runId ?? null,
          actionName: "create_note",
          params: { title: `Pending ${mark} ${label}`, text: `Pending text ${mark}` },
          pagePath: `/studios/${studio}`,
          contextSummary: `Context ${mark}`,
          reason: `Reason ${mark}`,
          matchedRule: "requires_approval",
          status: "pending",
          expiresAt: new Date(Date.now() + 7 * 86_400_000),
        },
      })
    ).id;
  return out;
}

/** The owner's settings for the agent, through the registry: some capabilities, an approval list, a rule naming `mark`. */
async function seedSettings(w: World, owner: Person, handle: string, mark: string) {
  const path = `/subagents/${handle}/settings`;
  await act(
    w,
    owner,
    path,
    "set_capabilities",
    permissions(["add_comment", "vote"], { approval: ["create_note"], mode: "wait", expiry: 48 }),
  );
  await act(w, owner, path, "add_rule", {
    name: `Rule ${mark}`,
    action: "add_comment",
    decision: "deny",
    param_patterns: `text=${mark}`,
  });
}

/**
 * Pending actions for every page that reviews them: the `:pending` page's own, and one per
 * page and review action. A thread page reviews what the runs it woke asked for, a run page
 * what its run asked for; /approvals and threads get the watcher's, an agent that no probe
 * archives (archiving expires an agent's pending actions, and /approvals is probed after it).
 */
async function seedReview(
  w: World,
  owner: Person,
  at: { handle: string; watcher: string; studio: string; run: string; threads: Record<string, string> },
  mark: string,
) {
  await seedSettings(w, owner, at.handle, mark);
  const db = testPrisma();
  const watcher = await must(
    db.user.findFirst({ where: { tenantId: w.tenant.id, handle: at.watcher } }),
    "watcher",
  );
  const threadRun = async (threadId: string) =>
    (
      await db.subagentTaskRun.create({
        data: {
          ...{ id: newId(), tenantId: w.tenant.id, agentId: watcher.id, initiatedById: owner.id },
          ...{ triggerKind: "mention", task: `Mentioned ${mark}`, maxSteps: 5, timeoutSeconds: 60 },
          ...{ status: "completed", threadId },
        },
      })
    ).id;
  const from = async (label: string) => {
    const pattern = label === "url" ? "/subagents/:handle/pending/:pending" : label.split(" ")[0]!;
    if (pattern === "/subagents/:handle/runs/:run") return { runId: at.run };
    const thread = Object.entries(at.threads).find(([kind]) => pattern.includes(`/${kind}s/:`));
    if (thread) return { agent: at.watcher, runId: await threadRun(thread[1]) };
    return pattern.startsWith("/subagents/:handle") ? {} : { agent: at.watcher };
  };
  const keys = ["url", ...reviewKeys()];
  const origins = new Map(await Promise.all(keys.map(async (k) => [k, await from(k)] as const)));
  const { url, ...pendings } = await seedPending(w, at.handle, at.studio, mark, keys, (k) => origins.get(k)!);
  return { pending: url!, pendings, links: await seedLinks(w, owner, pendings) };
}

/** Review links mailed to `owner` for the pending actions seeded for `/review/:token`. */
async function seedLinks(w: World, owner: Pick<Person, "id">, pendings: Record<string, string>) {
  const db = testPrisma();
  const mint = async (decision: "approve" | "reject") => {
    const p = await db.agentPendingAction.findUniqueOrThrow({
      where: { id: pendings[`/review/:token ${decision}_from_link`]! },
    });
    return (
      await mintReviewLinks(db, {
        tenantId: w.tenant.id,
        pendingId: p.id,
        userId: owner.id,
        params: p.params,
        expiresAt: p.expiresAt,
      })
    )[decision];
  };
  return { approve: await mint("approve"), reject: await mint("reject") };
}

/** An outgoing webhook of `owner`'s, made through the registry, pointing at a closed local port. */
async function seedEndpoint(w: World, owner: Person, mark: string) {
  const made = await act(w, owner, `/u/${owner.handle}/settings/webhooks`, "create_outgoing_webhook", {
    name: `Hook ${mark}`,
    url: "http://127.0.0.1:9/hook",
    run_failed: true,
  });
  const id = made.location.split("/").pop()!;
  if (!made.secret) throw new Error("seed: outgoing webhook not created");
  // Paused as when its creator left a studio, so confirm_outgoing_webhook has something to confirm.
  await testPrisma().outboundEndpoint.update({
    where: { id },
    data: { pausedAt: new Date(), pausedReason: `seed ${mark}` },
  });
  return { id, secret: made.secret };
}

/**
 * Money for `owner`'s agent `handle`: two provider keys added through the registry (their
 * labels carry `mark`; they point at a closed local port, so test_api_key fails fast and
 * harmlessly) and two ledger rows of its run, one on the first key and one on the shared
 * endpoint with A's own `model`. The caller rebuilds the totals once everything is in.
 */
async function seedKeys(w: World, owner: Person, page: string, mark: string) {
  const db = testPrisma();
  const add = async (what: string) => {
    const secret = `sk-${what}-${newId(16)}`;
    await act(w, owner, page, "add_api_key", {
      label: `Key ${what} ${mark}`,
      provider: "openai_compatible",
      base_url: "http://127.0.0.1:9/v1",
      key: secret,
    });
    const k = await must(
      db.agentApiKey.findFirst({ where: { tenantId: w.tenant.id, label: `Key ${what} ${mark}` } }),
      "api key",
    );
    return { id: k.id, secret };
  };
  const tag = page.startsWith("/studios") ? `studio-${owner.handle}` : owner.handle;
  const use = await add(`use-${tag}`);
  const revoke = await add(`revoke-${tag}`);
  return { keys: { use: use.id, revoke: revoke.id }, secrets: [use.secret, revoke.secret] };
}

/**
 * Two ledger rows of `owner`'s (or `owner`'s studio's) agent's run: one on `key`, one on the
 * shared endpoint with A's own `model`.
 */
async function seedLedger(
  w: World,
  owner: Person | null,
  handle: string,
  run: string,
  key: string,
  model: string,
) {
  const db = testPrisma();
  const agent = await must(db.user.findFirst({ where: { tenantId: w.tenant.id, handle } }), "subagent");
  const row = (apiKeyId: string | null, m: string, cost: bigint) => ({
    id: newId(),
    tenantId: w.tenant.id,
    agentId: agent.id,
    ownerId: owner?.id ?? null,
    runId: run,
    stepNumber: 1,
    apiKeyId,
    model: m,
    pricingVersion: "2026-11-01",
    priced: true,
    inputTokens: 1200,
    cachedTokens: 200,
    outputTokens: 300,
    costMicros: cost,
    latencyMs: 400,
  });
  await db.llmUsage.createMany({ data: [row(key, "gpt-4o-mini", 120_000n), row(null, model, 30_000n)] });
}

/** A webhook of `owner`'s agent `handle`, made through the registry; its secret is what the one answer showed. */
async function seedWebhook(w: World, owner: Person, handle: string, mark: string) {
  const made = await act(w, owner, `/subagents/${handle}/webhooks`, "create_webhook", {
    name: `Hook ${mark}`,
    instruction: `Instruction ${mark}`,
  });
  const id = /\/hooks\/([a-z0-9]+)/.exec(made.notice)?.[1];
  if (!id || !made.secret) throw new Error("seed: webhook not created");
  return { id, secret: made.secret };
}

async function seedStudio(
  w: World,
  label: string,
  actor: Person,
  other: Person,
  studioHandle: string,
  mark: string,
  findme: string,
) {
  const db = testPrisma();
  const base = `/studios/${studioHandle}`;
  const studio = await must(
    db.studio.findFirst({ where: { tenantId: w.tenant.id, handle: studioHandle } }),
    "studio",
  );
  const s = `${mark} ${label}`;
  const id = (location: string) => location.split("/").pop()!;
  const note = id(
    (
      await act(w, actor, base, "create_note", {
        title: `Note ${s}`,
        text: `Private note ${s}: ${findme}, see @${other.handle}`,
      })
    ).location,
  );
  await act(w, other, `${base}/notes/${note}`, "add_comment", { text: `Comment ${s} for @${actor.handle}` });
  await act(w, other, `${base}/notes/${note}`, "confirm_read", {});
  const decision = id(
    (
      await act(w, actor, base, "create_decision", {
        question: `Question ${s}?`,
        description: `Context ${s}: ${findme}`,
        options: `Option one ${s}\nOption two ${s}`,
      })
    ).location,
  );
  const options = await db.decisionOption.findMany({
    where: { decisionId: decision },
    orderBy: { title: "asc" },
  });
  const [one, two] = [options[0]!.id, options[1]!.id];
  await act(w, actor, `${base}/decisions/${decision}`, "vote", {
    option_id: one,
    accept: true,
    prefer: true,
  });
  await act(w, other, `${base}/decisions/${decision}`, "vote", {
    option_id: two,
    accept: true,
    prefer: false,
  });
  await act(w, other, `${base}/decisions/${decision}`, "add_comment", { text: `Decision comment ${s}` });
  const commitment = id(
    (
      await act(w, actor, base, "create_commitment", {
        title: `Commitment ${s}`,
        critical_mass: 3,
        description: `Promise ${s}: ${findme}`,
      })
    ).location,
  );
  await act(w, other, `${base}/commitments/${commitment}`, "join_commitment", {});
  await act(w, other, `${base}/commitments/${commitment}`, "add_comment", {
    text: `Commitment comment ${s}`,
  });
  const tokens = `/u/${actor.handle}/settings/tokens`;
  const secret = (await act(w, actor, tokens, "create_api_token", { name: `Token ${s}` })).secret!;
  const tokenRow = await must(
    db.apiToken.findFirst({ where: { userId: actor.id, name: `Token ${s}` } }),
    "api token",
  );
  // What the token did, as the audit trail records it: a call over the markdown API, one over MCP.
  const call = { tenantId: w.tenant.id, tokenId: tokenRow.id, actorId: actor.id, status: 200, latencyMs: 12 };
  await db.apiCall.createMany({
    data: [
      {
        ...call,
        id: newId(),
        method: "POST",
        page: `${base}/notes/${note}`,
        action: "add_comment",
        createdAt: new Date(),
      },
      {
        ...call,
        id: newId(),
        method: "POST",
        tool: "read_page",
        page: `${base}/notes/${note}`,
        createdAt: new Date(),
      },
    ],
  });
  const comment = async (subjectId: string) =>
    (await must(db.comment.findFirst({ where: { subjectId } }), "comment")).id;
  return {
    label,
    owner: "A" as const,
    actor,
    other,
    studio: { id: studio.id, handle: studio.handle, inviteCode: studio.inviteCode },
    note,
    decision,
    option: one,
    commitment,
    comments: {
      note: await comment(note),
      decision: await comment(decision),
      commitment: await comment(commitment),
    },
    token: { id: tokenRow.id, secret },
  };
}

/**
 * Tenant A, everything created through the registry: two studios (`general`, which B
 * also has, and one only A has), each with a note + comment + read, a decision with
 * options and votes + comment, a commitment with a participant + comment; mention
 * notifications; extra API tokens; a subagent per owner with a waiting run (`scout`
 * for alice, as B's alice also has), its settings (capabilities, approval list, a rule)
 * and pending actions (inserted). Every text and name carries `mark`.
 */
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
    ],
    hooks: [sharedHook, onlyHook],
    model,
    shared: {
      ...shared,
      ...sharedAgent,
      ...sharedReview,
      watcher: sharedWatcher,
      keys: sharedMoney.keys,
      studioKeys: sharedStudioKeys.keys,
      webhook: sharedHook.id,
      endpoint: sharedEndpoint.id,
      catalogueModel: { name: model, aRef: false },
      agentStudio: { handle: "general", aRef: false },
      joinCode: vaultCode,
      memberTarget: yan.handle,
      hostname,
      notification: await notification(w.alice),
      session: await sessionOf(w.alice),
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
      catalogueModel: { name: model, aRef: false },
      agentStudio: { handle: vault, aRef: true },
      joinCode: w.studio.inviteCode,
      memberTarget: yan.handle,
      hostname,
      notification: await notification(zed),
      session: await sessionOf(zed),
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
      // A's ids in params: A's watcher, subscription and schedule (B's scout has its own, so the actions are offered).
      watcher: v.shared.watcher,
      subscription: v.shared.subscription,
      schedule: v.shared.schedule,
      pending: url!,
      pageToken: pageToken.id,
      pageEndpoint: pageEndpoint.id,
      pageLink,
      agentStudio: { handle: v.only.studio.handle, aRef: true },
      // A model only A's workspace prices: never in B's catalogue.
      catalogueModel: { name: v.model, aRef: true },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// From the registry to concrete requests

/**
 * How each `:param` of a page pattern is filled from a seed, keyed by the pattern's
 * first segment and the param (`/u/:handle` is a person, `/subagents/:handle` an agent).
 * A pattern with a param not listed here fails the suite: a new page must be taught
 * to the isolation test. `object` params name rows B never has; handles may exist in
 * B under the same name (B has studio `general`, user `alice`, subagent `scout`).
 */
type ParamKind = "object" | "studio" | "user" | "agent";
const PARAMS: Record<string, { kind: ParamKind; value: (s: Seed) => string }> = {
  "studios.studio": { kind: "studio", value: (s) => s.studio.handle },
  "studios.note": { kind: "object", value: (s) => s.note },
  "studios.decision": { kind: "object", value: (s) => s.decision },
  "studios.commitment": { kind: "object", value: (s) => s.commitment },
  "u.handle": { kind: "user", value: (s) => s.actor.handle },
  // A person's page for admins: the member the member actions target (deactivated, then back).
  "settings.handle": { kind: "user", value: (s) => (s.owner === "B" ? s.other.handle : s.memberTarget) },
  "u.token": { kind: "object", value: (s) => s.pageToken ?? s.token.id },
  "subagents.handle": { kind: "agent", value: (s) => s.agent },
  "subagents.run": { kind: "object", value: (s) => s.run },
  // A step's page is a finished run's step 2, which replay_run can re-run from.
  "subagents.step": { kind: "object", value: () => "2" },
  "subagents.pending": { kind: "object", value: (s) => s.pending },
  "u.id": { kind: "object", value: (s) => s.pageEndpoint ?? s.endpoint ?? NO_HOOK },
  "review.token": { kind: "object", value: (s) => s.pageLink ?? s.links?.approve ?? NO_LINK },
};

/** Where one page names something other than its first segment's usual row. */
const PATTERN_PARAMS: Record<string, typeof PARAMS> = {
  "/subagents/:handle/runs/:run/steps/:step": {
    "subagents.run": { kind: "object", value: (s) => s.finished },
  },
};

function param(pattern: string, name: string) {
  const key = `${pattern.split("/")[1]}.${name}`;
  const p = PATTERN_PARAMS[pattern]?.[key] ?? PARAMS[key];
  if (!p)
    throw new Error(
      `tenant-isolation: no value for :${name} in page ${pattern}; add "${key}" to PARAMS in test/helpers/isolation.ts`,
    );
  return p;
}

export function paramNames(pattern: string): string[] {
  return pattern
    .split("/")
    .filter((seg) => seg.startsWith(":"))
    .map((seg) => seg.slice(1));
}

export function concreteUrl(pattern: string, seed: Seed): string {
  return pattern.replace(/:([A-Za-z_]+)/g, (_m, name: string) => param(pattern, name).value(seed));
}

export function actionUrl(pageUrl: string, action: string): string {
  return `${pageUrl === "/" ? "" : pageUrl}/actions/${action}`;
}

/** Whether a page URL of A names only things B has too (same studio and user handles). */
export interface InB {
  studios: Set<string>;
  users: Set<string>;
  agents: Set<string>;
}

/** The studios, people and agents B has, by handle: which of A's paths exist in B too. */
export async function handlesOf(B: World): Promise<InB> {
  const db = testPrisma();
  const users = async (kind: "person" | "subagent") =>
    new Set((await db.user.findMany({ where: { tenantId: B.tenant.id, kind } })).map((u) => u.handle));
  return {
    studios: new Set((await db.studio.findMany({ where: { tenantId: B.tenant.id } })).map((s) => s.handle)),
    users: await users("person"),
    agents: await users("subagent"),
  };
}

export type Mode = "B token on B host" | "B session on B host" | "B token on A host" | "B session on A host";
export const MODES: Mode[] = [
  "B token on B host",
  "B session on B host",
  "B token on A host",
  "B session on A host",
];

/** B's alice with her token and with a session of hers, on B's host and on A's. */
export async function attackers(app: FastifyInstance, A: World, B: World): Promise<Record<Mode, Caller>> {
  const bBrowser = await login(app, B, B.alice);
  return {
    "B token on B host": { label: "B token", host: B.host, token: B.alice.token },
    "B session on B host": { label: "B session", host: B.host, browser: bBrowser },
    "B token on A host": { label: "B token", host: A.host, token: B.alice.token },
    "B session on A host": { label: "B session", host: A.host, browser: bBrowser },
  };
}

export function existsInB(pattern: string, seed: Seed, b: InB): boolean {
  if (seed.owner === "B") return true;
  const has: Record<ParamKind, Set<string>> = {
    studio: b.studios,
    user: b.users,
    agent: b.agents,
    object: new Set(),
  };
  return paramNames(pattern).every((name) => {
    const p = param(pattern, name);
    return has[p.kind].has(p.value(seed));
  });
}

interface Probe {
  value: string | number | boolean | Record<string, string>;
  /** The value names one of A's objects: B must never get a success with it. */
  aRef?: boolean;
}

const PROBE = `probe${newId(6)}`;
/** A well-formed key id no key has. */
const NO_KEY = `nokey${newId(7)}`;
const NO_HOOK = `nohook${newId(7)}`;
const NO_LINK = `nolink${newId(20)}`;
const slug = (s: Seed) =>
  s.label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .slice(0, 8);

/**
 * A plausible, valid value for each action param, taken from A's seed. Action-specific
 * entries (`action.param`) win over generic ones (`param`). An unknown param name fails
 * the suite, so a new action or param is never silently skipped.
 */
/** The keys a keys page manages: the studio's on a studio's page, else the person's. */
const keysOn = (s: Seed, page: PageDef) => (page.pattern.startsWith("/studios") ? s.studioKeys : s.keys);

/** A model the seed's workspace's catalogue has (A's own priced model), or B's smuggling A's. */
const catalogueModel = (s: Seed): Probe =>
  s.catalogueModel ? { value: s.catalogueModel.name, aRef: s.catalogueModel.aRef } : { value: "gpt-4o-mini" };

const FIELDS: Record<string, (s: Seed, page: PageDef, v: Pick<Victim, "findme">) => Probe> = {
  text: () => ({ value: `${PROBE} text` }),
  title: (s) => ({ value: `${PROBE} title ${s.label}` }),
  question: () => ({ value: `${PROBE} question?` }),
  description: () => ({ value: `${PROBE} description` }),
  options: () => ({ value: `${PROBE} yes\n${PROBE} no` }),
  critical_mass: () => ({ value: 1 }),
  name: () => ({ value: `${PROBE} name` }),
  bio: () => ({ value: `${PROBE} bio` }),
  accept: () => ({ value: true }),
  prefer: () => ({ value: true }),
  // Clearing the memory on a transfer: the probe asks for it, so a refused transfer clears nothing either.
  clear_memory: () => ({ value: true }),
  role: () => ({ value: "admin" }),
  "create_api_token.scope": () => ({ value: "manage" }),
  expires_in_days: () => ({ value: 30 }),
  query: (_s, _p, v) => ({ value: v.findme }),
  invite_code: (s) => ({ value: s.joinCode, aRef: true }),
  option_id: (s) => ({ value: s.option, aRef: true }),
  reply_to: (s, page) => {
    const subject = (["note", "decision", "commitment"] as const).find((k) =>
      paramNames(page.pattern).includes(k),
    );
    if (!subject)
      throw new Error(`tenant-isolation: reply_to on ${page.pattern}, which has no comment subject`);
    return { value: s.comments[subject], aRef: true };
  },
  identity_prompt: () => ({ value: `${PROBE} identity` }),
  model: catalogueModel,
  fallback_models: catalogueModel,
  "set_agent_limits.default_model": catalogueModel,
  // Switching agents off would stop the other probes' runs: the probe switches them on.
  "set_agents_enabled.agents": () => ({ value: "on" }),
  trigger_rate_per_minute: () => ({ value: 3 }),
  workspace_trigger_rate_per_minute: () => ({ value: 0 }),
  chain_depth_limit: () => ({ value: 3 }),
  // What new agents may do: what they may do by default, so the probes' new agents are as before.
  ...Object.fromEntries(
    GRANTABLE.map((g) => [
      `set_default_capabilities.${g}`,
      () => ({ value: (DEFAULT_CAPABILITIES as readonly string[]).includes(g) }),
    ]),
  ),
  max_steps: () => ({ value: 3 }),
  timeout_seconds: () => ({ value: 60 }),
  task: () => ({ value: `${PROBE} task` }),
  answer: () => ({ value: `${PROBE} answer` }),
  reason: () => ({ value: `${PROBE} reason` }),
  "create_studio.handle": (s) => ({ value: `${PROBE}-${slug(s)}` }),
  "create_subagent.handle": (s, page) => ({
    value: `${PROBE}-agent-${slug(s)}${page.pattern.startsWith("/studios") ? "-s" : ""}`,
  }),
  "add_to_studio.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  "remove_from_studio.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  // The actor's watcher is in the seed's studio; its handle exists only in A.
  "subscribe.agent": (s) => ({ value: s.watcher, aRef: true }),
  "unsubscribe.agent": (s) => ({ value: s.watcher, aRef: true }),
  subscription: (s) => ({ value: s.subscription, aRef: true }),
  subscription_window_seconds: () => ({ value: 30 }),
  // Which events a subscription wakes for: all of them.
  ...Object.fromEntries(SUBSCRIPTION_EVENTS.map((k) => [k, () => ({ value: true })])),
  "update_member_role.handle": (s) => ({ value: s.memberTarget, aRef: true }),
  "remove_member.handle": (s) => ({ value: s.memberTarget, aRef: true }),
  "dismiss.id": (s) => ({ value: s.notification, aRef: true }),
  "end_session.id": (s) => ({ value: s.session, aRef: true }),
  // The new password is the old one: every probe after it still signs in with it.
  current_password: () => ({ value: PASSWORD }),
  new_password: () => ({ value: PASSWORD }),
  agents_to: (s) => ({ value: s.studio.handle }),
  // A's own hostname: B can neither claim it (taken) nor remove it (not B's). A seed without one
  // names a hostname nobody holds.
  hostname: (s) => ({ value: s.hostname ?? "nobody-holds-this.example.test", aRef: Boolean(s.hostname) }),
  "approve_action.id": (s, page) => ({ value: pendingFor(s, page, "approve_action"), aRef: true }),
  "reject_action.id": (s, page) => ({ value: pendingFor(s, page, "reject_action"), aRef: true }),
  // The queued action's params, a field each (a form sends them as params.title, params.text).
  "approve_action.params": () => ({
    value: { title: `${PROBE} approved`, text: `${PROBE} approved text` },
  }),
  "set_capabilities.approval_mode": () => ({ value: "continue" }),
  "set_capabilities.approval_expiry_hours": () => ({ value: 24 }),
  // add_rule then remove_rule on the same page: the rule the probe adds is the one it removes.
  "add_rule.name": () => ({ value: `${PROBE} rule` }),
  "add_rule.action": () => ({ value: "search" }),
  "add_rule.decision": () => ({ value: "allow" }),
  "add_rule.param_patterns": () => ({ value: `query=^${PROBE}` }),
  "add_rule.position": () => ({ value: 1 }),
  // try_rule saves nothing: the same rule, tried.
  "try_rule.action": () => ({ value: "search" }),
  "try_rule.decision": () => ({ value: "allow" }),
  "try_rule.param_patterns": () => ({ value: `query=^${PROBE}` }),
  "try_rule.position": () => ({ value: 1 }),
  "remove_rule.name": () => ({ value: `${PROBE} rule` }),
  // add_schedule adds one of its own; the others act on the seeded schedule, remove_schedule last.
  cron: () => ({ value: "0 9 * * *" }),
  time_zone: () => ({ value: "Europe/Paris" }),
  schedule: (s) => ({ value: s.schedule ?? NO_KEY, aRef: true }),
  // One level per grantable action: grant them all, ask approval for none.
  ...Object.fromEntries(GRANTABLE.map((g) => [`set_capabilities.${g}`, () => ({ value: "on" })])),
  // Keeping an action for people would change what the other probes' agents may do.
  ...Object.fromEntries(GRANTABLE.map((g) => [`set_human_only.${g}`, () => ({ value: false })])),
  "revoke_api_token.id": (s) => ({ value: s.token.id, aRef: true }),
  // Provider keys: a new one points at a closed local port, like the seeded ones.
  "add_api_key.label": () => ({ value: `${PROBE} key` }),
  "add_api_key.provider": () => ({ value: "openai_compatible" }),
  "add_api_key.base_url": () => ({ value: "http://127.0.0.1:9/v1" }),
  "add_api_key.key": () => ({ value: `sk-${PROBE}-probe-key` }),
  "test_api_key.key_id": (s, page) => ({ value: keysOn(s, page)?.use ?? NO_KEY, aRef: true }),
  "revoke_api_key.key_id": (s, page) => ({ value: keysOn(s, page)?.revoke ?? NO_KEY, aRef: true }),
  "set_agent_api_key.api_key": (s) => ({ value: s.agentKey ?? s.keys?.use ?? NO_KEY, aRef: true }),
  // Studio agents: created on the studio's page or /subagents for the seed's studio.
  "create_subagent.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  "transfer_subagent.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  "set_member_runs.members_may_run": () => ({ value: true }),
  // Webhooks: the seed's own, through rotate, disable, enable and (last on the page) delete.
  instruction: () => ({ value: `${PROBE} instruction` }),
  webhook_id: (s) => ({ value: s.webhook ?? NO_HOOK, aRef: true }),
  signature: () => ({ value: "cadre" }),
  old_secret: () => ({ value: "grace" }),
  // Invitations: B's probes invite addresses of nobody's and name a studio by handle (A's own
  // only in the A-only seed); the invitation they withdraw is A's.
  emails: () => ({ value: `${PROBE}@example.test` }),
  studios: (s) => ({ value: s.studio.handle }),
  invitation: (s) => ({ value: s.invitation ?? NO_KEY, aRef: true }),
  link: () => ({ value: "on" }),
  allowed_domains: () => ({ value: "example.test" }),
  "set_cost_limit.monthly_limit_usd": () => ({ value: 50 }),
  "set_cost_limit.alert_thresholds_usd": () => ({ value: "1, 5" }),
  // set_model_price then remove_model_price on the same page: the price the probe sets is the one it removes.
  "set_model_price.model": () => ({ value: `${PROBE}-price` }),
  "set_model_price.input": () => ({ value: 1 }),
  "set_model_price.cached_input": () => ({ value: 0.5 }),
  "set_model_price.cache_write_input": () => ({ value: 1.25 }),
  // The seed's run is written directly, without the rules a queued run keeps: re-run under the current ones.
  "replay_run.rules": () => ({ value: "current" }),
  "set_model_price.output": () => ({ value: 2 }),
  "remove_model_price.model": () => ({ value: `${PROBE}-price` }),
  // Approving as asked: the always-allow probe would add a rule other probes' agents obey.
  "approve_action.always_allow": () => ({ value: false }),
  "approve_action.allow_when": () => ({ value: `title=^${PROBE}` }),
  "approve_action.allow_any": () => ({ value: false }),
  "approve_from_link.token": (s) => ({ value: s.links?.approve ?? NO_LINK, aRef: true }),
  "reject_from_link.token": (s) => ({ value: s.links?.reject ?? NO_LINK, aRef: true }),
  ...Object.fromEntries(REACH_KINDS.map((k) => [`set_notifications.${k}`, () => ({ value: "email" })])),
  "create_outgoing_webhook.url": () => ({ value: "http://127.0.0.1:9/hook" }),
  "create_outgoing_webhook.format": () => ({ value: "json" }),
  "create_outgoing_webhook.studio": (s) => ({ value: s.agentStudio.handle, aRef: s.agentStudio.aRef }),
  ...Object.fromEntries(
    HOOK_EVENTS.map((e) => [`create_outgoing_webhook.${eventFlag(e)}`, () => ({ value: true })]),
  ),
  ...Object.fromEntries(
    ["confirm", "test", "enable", "disable", "delete"].map((a) => [
      `${a}_outgoing_webhook.id`,
      (s: Seed) => ({ value: s.endpoint ?? NO_HOOK, aRef: true }),
    ]),
  ),
};

/** The pending action a review action on this page names: its own one, so each can succeed once. */
function pendingFor(s: Seed, page: PageDef, action: string): string {
  const id = s.pendings[`${page.pattern} ${action}`];
  if (!id)
    throw new Error(
      `tenant-isolation: no pending action seeded for ${action} on ${page.pattern} (reviewKeys)`,
    );
  return id;
}

export interface Body {
  json: Record<string, string | number | boolean | Record<string, string>>;
  form: Record<string, string>;
  aRef: boolean;
}

/** Also used by test/capabilities.test.ts, with a seed of its own world (`v` only gives the word to search for). */
export function probeBody(action: ActionDef, page: PageDef, seed: Seed, v: Pick<Victim, "findme">): Body {
  const body: Body = { json: {}, form: {}, aRef: false };
  for (const f of fields(action.params)) {
    const make = FIELDS[`${action.name}.${f.name}`] ?? FIELDS[f.name];
    if (!make)
      throw new Error(
        `tenant-isolation: no probe value for param \`${f.name}\` of action \`${action.name}\`; add it to FIELDS in test/helpers/isolation.ts`,
      );
    const p = make(seed, page, v);
    body.json[f.name] = p.value;
    if (typeof p.value === "object")
      for (const [k, v] of Object.entries(p.value)) body.form[`${f.name}.${k}`] = v;
    else body.form[f.name] = String(p.value);
    body.aRef ||= Boolean(p.aRef);
  }
  return body;
}

// ---------------------------------------------------------------------------------------------
// Requests as a given credential on a given host

export type Format = "html" | "md" | "md-suffix";

export interface Caller {
  label: string;
  host: string;
  token?: string;
  browser?: Browser;
}

export async function get(app: FastifyInstance, c: Caller, url: string, format: Format) {
  const [path, query] = url.split("?");
  const target =
    format === "md-suffix" ? `${path === "/" ? "/index" : path}.md${query ? `?${query}` : ""}` : url;
  return app.inject({
    method: "GET",
    url: target,
    headers: {
      host: c.host,
      ...(format === "md" && { accept: "text/markdown" }),
      ...(c.token && { authorization: `Bearer ${c.token}` }),
    },
    ...(c.browser && { cookies: { ...c.browser.cookies } }),
  });
}

/** md: a JSON body with Accept: text/markdown; html: a form post like a browser's. Session posts carry the CSRF token. */
export async function post(app: FastifyInstance, c: Caller, url: string, format: "html" | "md", body: Body) {
  const csrf: Record<string, string> = c.browser ? { _csrf: c.browser.csrf } : {};
  return app.inject({
    method: "POST",
    url,
    headers: {
      host: c.host,
      ...(c.token && { authorization: `Bearer ${c.token}` }),
      ...(format === "md"
        ? { accept: "text/markdown", "content-type": "application/json" }
        : { "content-type": "application/x-www-form-urlencoded" }),
    },
    ...(c.browser && { cookies: { ...c.browser.cookies } }),
    payload:
      format === "md"
        ? JSON.stringify({ ...body.json, ...csrf })
        : new URLSearchParams({ ...body.form, ...csrf }).toString(),
  });
}

// ---------------------------------------------------------------------------------------------
// Leaks and writes

/** Needles of A that appear in the response (body or headers), ignoring what the request itself sent. */
export function leaks(res: LightMyRequestResponse, needles: string[], sent: string): string[] {
  const seen = `${JSON.stringify(res.headers)}\n${res.body}`;
  return needles.filter((n) => !sent.includes(n) && seen.includes(n));
}

const UNSCOPED_TABLES = new Set(["tenants", "_prisma_migrations"]);

/** Every table with a tenant_id column; any other table (but tenants) fails the suite: it cannot be checked. */
export async function tenantTables(): Promise<string[]> {
  const rows = await testPrisma().$queryRaw<{ table_name: string; scoped: boolean }[]>`
    SELECT t.table_name, EXISTS (
      SELECT 1 FROM information_schema.columns c
      WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'tenant_id'
    ) AS scoped
    FROM information_schema.tables t
    WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
    ORDER BY t.table_name`;
  const unscoped = rows.filter((r) => !r.scoped && !UNSCOPED_TABLES.has(r.table_name));
  if (unscoped.length)
    throw new Error(
      `tenant-isolation: tables without tenant_id: ${unscoped.map((r) => r.table_name).join(", ")}`,
    );
  return rows.filter((r) => r.scoped).map((r) => r.table_name);
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * A's failed-login counts: anyone may try A's login form, and the attempt is meant to count
 * in A. The rows hold nothing of A's (a hash of the email typed, the address it came from).
 */
const MOVED_BY_STRANGERS = new Set(["login_throttles"]);
/**
 * A's audit trail moves with A's own token calls, which the suite makes in B's turn too (A
 * reads its usage CSVs and token pages to compare). B's calls never land there: checked apart,
 * as "every audit row names its own workspace's token and person" (tenant-isolation.test.ts).
 */
const MOVED_BY_OWN_CALLS = new Set(["api_calls"]);
/**
 * Those same calls stamp A's token's `last_used_at`, and A's person's `last_seen_at`, when the
 * last stamp is over a minute old (services/tokens.ts, services/sessions.ts), which a slow
 * machine makes happen in B's turn: the columns are left out.
 */
const STAMPED_BY_OWN_CALLS = ["last_used_at", "last_seen_at"];

/** Row count and a hash of every row's full content, per table, for one tenant (and its tenants row). */
export async function snapshot(tenantId: string): Promise<Record<string, string>> {
  const db = testPrisma();
  const out: Record<string, string> = {};
  const one = async (table: string, column: string) => {
    const [r] = await db.$queryRawUnsafe<{ n: number; h: string }[]>(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '')) AS h
       FROM (SELECT to_jsonb(t) - $2::text[] AS r FROM ${quoteIdent(table)} t WHERE ${column} = $1) rows`,
      tenantId,
      STAMPED_BY_OWN_CALLS,
    );
    out[table] = `${r!.n} rows, ${r!.h}`;
  };
  await one("tenants", "id");
  for (const t of await tenantTables())
    if (!MOVED_BY_STRANGERS.has(t) && !MOVED_BY_OWN_CALLS.has(t)) await one(t, "tenant_id");
  return out;
}

/** Everything that identifies A's data: every row id, invite codes, token secrets and prefixes, emails, handles only A has. */
export async function victimNeedles(v: Victim): Promise<{ all: string[]; hostOnly: string[] }> {
  const db = testPrisma();
  const tid = v.world.tenant.id;
  const ids: string[] = [tid];
  for (const t of await tenantTables()) {
    const hasId = await db.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = ${t} AND column_name = 'id'`;
    if (!hasId[0]!.n) continue;
    const rows = await db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id FROM ${quoteIdent(t)} WHERE tenant_id = $1`,
      tid,
    );
    ids.push(...rows.map((r) => r.id));
  }
  const studios = await db.studio.findMany({ where: { tenantId: tid } });
  const tokens = await db.apiToken.findMany({ where: { tenantId: tid } });
  const users = await db.user.findMany({ where: { tenantId: tid } });
  const all = [
    v.mark,
    v.findme,
    ...ids,
    ...studios.map((s) => s.inviteCode),
    ...studios.map((s) => s.handle).filter((h) => h !== "general"),
    ...tokens.map((t) => t.prefix),
    ...tokens.map((t) => t.tokenHash),
    ...[v.world.alice, v.world.bob, v.world.carol, v.zed, v.yan].map((p) => p.token),
    v.shared.token.secret,
    v.only.token.secret,
    ...v.secrets,
    ...users.map((u) => u.email!).filter(Boolean),
    v.zed.handle,
    v.yan.handle,
  ];
  // A's workspace name is public on A's own host (its login page), never on B's.
  return { all: [...new Set(all)], hostOnly: [v.world.tenant.subdomain, v.world.tenant.name] };
}

/**
 * Columns that record what a tenant's own caller sent, so they hold whatever B typed: the
 * audit trail's page is the path B's token asked for, A's ids in it included. B knew them
 * already; the row shows them to B's token owner only, and nothing of A's is read into it.
 */
const ECHOES: Record<string, string[]> = { api_calls: ["page"] };

/** Rows of any other tenant whose content mentions one of the needles, per table. */
export async function foreignRowsMentioning(
  tenantId: string,
  needles: string[],
): Promise<Record<string, number>> {
  const db = testPrisma();
  const out: Record<string, number> = {};
  for (const t of await tenantTables()) {
    const echoes = ECHOES[t];
    const content = echoes ? `(to_jsonb(t) - '{${echoes.join(",")}}'::text[])::text` : "t::text";
    const [r] = await db.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM ${quoteIdent(t)} t
       WHERE t.tenant_id <> $1 AND EXISTS (SELECT 1 FROM unnest($2::text[]) n WHERE strpos(${content}, n) > 0)`,
      tenantId,
      needles,
    );
    if (r!.n) out[t] = r!.n;
  }
  return out;
}
