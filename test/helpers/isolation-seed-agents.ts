// Seeding for the isolation sweep: a person's or a studio's subagent, its runs, schedule,
// settings, pending actions and review links, its webhook, and the money it spends (provider
// keys, ledger rows), with an outgoing webhook of its owner's.
import { newId } from "../../src/lib/ids.ts";
import { pages } from "../../src/services/catalog/catalog.ts";
import { mintReviewLinks } from "../../src/services/reach/review-links.ts";
import { writeScratchpad } from "../../src/services/scratchpad.ts";
import { act, type Person, testPrisma, type World } from "./app.ts";
import { permissions } from "./approvals.ts";
import { must } from "./isolation-seed-studio.ts";

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
  const finished = await seedFinished(w, agent.id, owner, mark);
  return {
    agent: handle,
    run: run.id,
    finished,
    ...(await seedTestCases(w, owner, handle, finished, mark)),
    experiment: await seedExperiment(w, owner, handle, mark),
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

/**
 * Two test cases saved from the finished run, through the registry: the one its page names
 * (edited, then deleted there) and a spare the cases list deletes, so each delete has its own.
 */
async function seedTestCases(w: World, owner: Person, handle: string, finished: string, mark: string) {
  const save = async (name: string) => {
    const saved = await act(w, owner, `/subagents/${handle}/runs/${finished}`, "save_test_case", {
      name: `${name} ${mark}`,
      must_take: "search",
      reply_contains: `Done ${mark}`,
    });
    return saved.location.split("/").pop()!;
  };
  return { testCase: await save("Case"), spareTestCase: await save("Spare case") };
}

/** An experiment on its cases (its dry runs stay queued: no worker runs here), for its page. */
async function seedExperiment(w: World, owner: Person, handle: string, mark: string) {
  const started = await act(w, owner, `/subagents/${handle}/experiments`, "start_experiment", {
    try: "prompt",
    identity_prompt: `Experiment ${mark}`,
    cost_cap_usd: 0.01,
    parallel: 1,
  });
  return started.location.split("/").pop()!;
}

/** An agent of `owner` in studio `studio`, which subscribe and unsubscribe name. */
export async function seedWatcher(w: World, owner: Person, handle: string, studio: string, mark: string) {
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
export async function seedReview(
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
export async function seedEndpoint(w: World, owner: Person, mark: string) {
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
export async function seedKeys(w: World, owner: Person, page: string, mark: string) {
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
export async function seedLedger(
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
export async function seedWebhook(w: World, owner: Person, handle: string, mark: string) {
  const made = await act(w, owner, `/subagents/${handle}/webhooks`, "create_webhook", {
    name: `Hook ${mark}`,
    instruction: `Instruction ${mark}`,
  });
  const id = /\/hooks\/([a-z0-9]+)/.exec(made.notice)?.[1];
  if (!id || !made.secret) throw new Error("seed: webhook not created");
  return { id, secret: made.secret };
}
