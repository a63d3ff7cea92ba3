// What a subagent may do, end to end: the three capability sets partition the catalog;
// every action × every capability case over HTTP with the agent's own token (listed only
// when allowed, a 403 naming the capability otherwise); the same through the navigator
// for one action per class; never more than its owner; /whoami tells it all this.
// Expectations come from the three sets, never from capabilityDenial itself.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { agentConfig, DEFAULT_CAPABILITIES } from "../src/services/agents/core/settings.ts";
import {
  ALWAYS_ALLOWED,
  ALWAYS_BLOCKED,
  capabilityDenial,
  GRANTABLE,
} from "../src/services/agents/policy/capabilities.ts";
import { actions, pages, registry } from "../src/services/catalog/catalog.ts";
import { sealEndpointSecret } from "../src/services/reach/endpoints.ts";
import { mintReviewLinks } from "../src/services/reach/review-links.ts";
import type { Actor, Ctx, PageDef } from "../src/services/registry/types.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { requestsFor, stepsOf, userPrompt } from "./helpers/agent-scripts.ts";
import { type Agent, type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, actionNames, buildTestApp, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import { actionUrl, concreteUrl, probeBody } from "./helpers/isolation-params.ts";
import { reviewKeys, seedPending } from "./helpers/isolation-seed-agents.ts";
import { deliverEvents } from "./helpers/isolation-seed-studio.ts";
import { SEED_URL } from "./helpers/isolation-seed-tools.ts";
import type { Seed } from "./helpers/isolation-seeds.ts";

const db = testPrisma;
let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app?.close();
});

const byName = new Map(actions.map((a) => [a.name, a]));
const has = (set: readonly string[], name: string) => set.includes(name);
const classOf = (name: string) =>
  has(ALWAYS_ALLOWED, name) ? "always allowed" : has(GRANTABLE, name) ? "grantable" : "always blocked";

type Case = "capabilities absent" | "capabilities []" | "granted" | "not granted";
const CASES: Case[] = ["capabilities absent", "capabilities []", "granted", "not granted"];
/** `granted` lists the action alone (even a blocked one: listing it must not unblock it); `not granted` every other grantable. */
const capsFor = (c: Case, name: string): string[] | undefined =>
  c === "capabilities absent"
    ? undefined
    : c === "capabilities []"
      ? []
      : c === "granted"
        ? [name]
        : GRANTABLE.filter((g) => g !== name);
/** Absent: what a new agent starts with (read, comment, confirm reads). */
const allowed = (name: string, c: Case) =>
  has(ALWAYS_ALLOWED, name) ||
  (has(GRANTABLE, name) &&
    ((c === "capabilities absent" && has(DEFAULT_CAPABILITIES, name)) || c === "granted"));

/** Replaces the agent's config; an undefined value leaves its key out (capabilities absent). */
async function configure(agent: Agent, config: Record<string, unknown>) {
  const cfg = { identity_prompt: "You help the team.", max_steps: 10, ...config };
  await db().user.update({ where: { id: agent.id }, data: { agentConfig: JSON.parse(JSON.stringify(cfg)) } });
}
const setRole = (w: World, userId: string, role: "admin" | "member") =>
  db().studioMember.update({ where: { studioId_userId: { studioId: w.studio.id, userId } }, data: { role } });
const refusedFor = (name: string) => `You cannot use \`${name}\` here:`;
const isCapabilityRefusal = (res: { statusCode: number; body: string }) =>
  res.statusCode === 403 && res.body.includes("capability `");

describe("the three sets", () => {
  it("do not overlap and cover exactly the actions of the catalog", () => {
    const sets = [ALWAYS_ALLOWED, ALWAYS_BLOCKED, GRANTABLE].map((s) => [...s] as string[]);
    const all = sets.flat();
    expect(all.filter((n, i) => all.indexOf(n) !== i)).toEqual([]);
    expect([...all].sort()).toEqual(actions.map((a) => a.name).sort());
  });
});

/**
 * The agent @scout of alice, studio admin like her (so admin-only checks pass and the
 * capability is what refuses), owning a subagent of its own, @minion, inserted directly
 * so the /subagents/:handle pages resolve for it: every action of the catalog is then on
 * a page the agent can open.
 */
async function capabilityWorld() {
  const w = await makeWorld("c");
  const agent = await makeAgent(w, w.alice, "scout");
  await setRole(w, agent.id, "admin");
  const base = "/studios/general";
  const last = (o: { location: string }) => o.location.split("/").pop()!;
  const note = last(await act(w, agent, base, "create_note", { title: "Mine", text: "By the agent" }));
  const pinned = last(await act(w, agent, base, "create_note", { title: "Pinned", text: "Pinned" }));
  await act(w, w.alice, `${base}/notes/${pinned}`, "pin_note", {});
  const decision = last(
    await act(w, w.alice, base, "create_decision", { question: "Which?", options: "One\nTwo" }),
  );
  const commitment = last(
    await act(w, w.alice, base, "create_commitment", { title: "Ship", critical_mass: 3 }),
  );
  const comment = async (kind: string, id: string) => {
    await act(w, w.bob, `${base}/${kind}/${id}`, "add_comment", { text: `On ${kind}` });
    return (await db().comment.findFirstOrThrow({ where: { subjectId: id } })).id;
  };
  const comments = {
    note: await comment("notes", note),
    decision: await comment("decisions", decision),
    commitment: await comment("commitments", commitment),
  };
  const minion = await db().user.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      handle: "minion",
      name: "Minion",
      kind: "subagent",
      parentId: agent.id,
    },
  });
  // Its first version, as the migration gave every agent made before versions: its version page resolves.
  await db().agentVersion.create({
    data: { id: newId(), tenantId: w.tenant.id, agentId: minion.id, number: 1, settings: {}, changes: [] },
  });
  const run = await db().subagentTaskRun.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, agentId: minion.id, initiatedById: agent.id },
      ...{ triggerKind: "manual", task: "t", maxSteps: 5, timeoutSeconds: 60 },
      ...{ status: "waiting", stopReason: "asked_owner", question: "?", stepsCount: 2 },
    },
  });
  // Its one step, which its step page shows.
  await db().subagentTaskRunStep.create({
    data: { id: newId(), runId: run.id, tenantId: w.tenant.id, number: 1, type: "ask_owner", detail: {} },
  });
  // And a second, the one the step page probes name (isolation-params.ts), where replay_run is offered to people only.
  await db().subagentTaskRunStep.create({
    data: { id: newId(), runId: run.id, tenantId: w.tenant.id, number: 2, type: "finish", detail: {} },
  });
  // A test case of minion's, inserted (no agent can save one), so its case page resolves.
  const testCase = await db().agentTestCase.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, agentId: minion.id, fromRunId: run.id },
      ...{ name: "c", task: "t", triggerKind: "manual", expectations: [{ kind: "finishes" }] },
    },
  });
  // An experiment of minion's, inserted (no agent can start one), so its page resolves.
  const experiment = await db().agentExperiment.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, agentId: minion.id, candidate: { kind: "model", model: "m" } },
      ...{ candidateWords: "model m", costCapMicros: 10_000n, parallel: 1 },
    },
  });
  const { url, ...pendings } = await seedPending(w, "minion", "general", "caps", ["url", ...reviewKeys()]);
  const elsewhere = await db().studio.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, handle: "elsewhere", name: "Elsewhere" },
      ...{ inviteCode: newId(10), createdById: w.alice.id },
    },
  });
  const spare = await createApiToken(db(), w.tenant.id, agent.id, "spare");
  const subscription = await db().agentSubscription.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, agentId: minion.id, subjectType: "studio" },
      ...{ subjectId: w.studio.id, studioId: w.studio.id, events: ["created"], createdById: agent.id },
    },
  });
  // An outgoing webhook and review links of the agent's own, inserted (no agent could make
  // them), so their pages resolve for it and only the capability refuses.
  const endpointId = newId();
  const sealed = sealEndpointSecret(w.tenant.id, endpointId, "whsec_caps");
  await db().outboundEndpoint.create({
    data: {
      ...{
        id: endpointId,
        tenantId: w.tenant.id,
        ownerId: agent.id,
        name: "Mine",
        url: "http://127.0.0.1:9/h",
      },
      ...{
        events: ["run.failed"],
        encryptedSecret: new Uint8Array(sealed.ciphertext),
        keyVersion: sealed.keyVersion,
      },
    },
  });
  // Tool connections of the agent's own and of its studio, inserted the same way.
  const connection = async (holder: { ownerUserId: string } | { studioId: string }, slug: string) =>
    (
      await db().toolConnection.create({
        data: {
          ...{ id: newId(), tenantId: w.tenant.id, ...holder, name: "Mine", slug, url: SEED_URL },
          ...{ authKind: "oauth" as const, audience: "outside" as const, createdById: agent.id },
        },
      })
    ).id;
  const connections = {
    connection: await connection({ ownerUserId: agent.id }, "mine"),
    studioConnection: await connection({ studioId: w.studio.id }, "ours"),
  };
  const link = async (decision: "approve" | "reject") => {
    const p = await db().agentPendingAction.findUniqueOrThrow({
      where: { id: pendings[`/review/:token ${decision}_from_link`]! },
    });
    const minted = await mintReviewLinks(db(), {
      ...{
        tenantId: w.tenant.id,
        pendingId: p.id,
        userId: agent.id,
        params: p.params,
        expiresAt: p.expiresAt,
      },
    });
    return minted[decision];
  };
  const links = { approve: await link("approve"), reject: await link("reject") };
  await deliverEvents(w.tenant.id); // bob's comments notify the agent, author of the note
  const notification = await db().notification.findFirstOrThrow({ where: { userId: agent.id } });
  const seed: Seed = {
    ...{ label: "capabilities", owner: "A", actor: agent, other: w.bob, studio: w.studio },
    ...{ joinCode: elsewhere.inviteCode, memberTarget: w.bob.handle, note, decision, commitment, comments },
    option: (await db().decisionOption.findFirstOrThrow({ where: { decisionId: decision } })).id,
    notification: notification.id,
    // An agent has no session: the id names none, and people-only actions refuse it anyway.
    session: "nosession0000",
    token: { id: spare.row.id, secret: spare.token },
    ...{ agent: "minion", run: run.id, finished: run.id, agentStudio: { handle: "general", aRef: false } },
    ...{ testCase: testCase.id, spareTestCase: testCase.id, experiment: experiment.id },
    // The agent subscribes itself; its subagent's subscriptions page names minion's.
    ...{ watcher: "scout", subscription: subscription.id },
    ...{ pending: url!, pendings, endpoint: endpointId, links, ...connections },
  };
  return { w, agent, seed, pinned };
}

describe("every action × every capability case, over HTTP with the agent's token", () => {
  let c: Awaited<ReturnType<typeof capabilityWorld>>;
  beforeAll(async () => {
    c = await capabilityWorld();
  });
  afterAll(async () => {
    if (c) await deliverEvents(c.w.tenant.id); // nothing left for the navigator tests' relay
  });

  /** Where the action lives: its first page; unpin_note on the pinned note. */
  function home(name: string): { page: PageDef; url: string } {
    const page = pages.find((p) => p.actions.includes(name))!;
    const seed = name === "unpin_note" ? { ...c.seed, note: c.pinned } : c.seed;
    return { page, url: concreteUrl(page.pattern, seed) };
  }

  /** The action's own check for the agent there (people-only actions refuse before any capability). */
  async function ownReason(name: string, url: string): Promise<string | null> {
    const tenant = await db().tenant.findUniqueOrThrow({ where: { id: c.w.tenant.id } });
    const actor = (await db().user.findUniqueOrThrow({ where: { id: c.agent.id } })) as Actor;
    const ctx: Ctx = { db: db(), tenant, actor };
    return byName.get(name)!.available?.(ctx, (await registry.resolve(ctx, url)).scope) ?? null;
  }

  it("no page lists an action the agent may not use (capabilities absent, and [])", async () => {
    const urls = [...pages.map((p) => concreteUrl(p.pattern, c.seed)), home("unpin_note").url];
    const failures: string[] = [];
    for (const cs of ["capabilities absent", "capabilities []"] as const) {
      await configure(c.agent, { capabilities: capsFor(cs, "") });
      for (const url of urls) {
        const res = await md(app, c.w, c.agent, "GET", url);
        if (res.statusCode !== 200) failures.push(`${cs} GET ${url}: ${res.statusCode}`);
        for (const n of actionNames(res.body)) if (!allowed(n, cs)) failures.push(`${cs}: ${url} lists ${n}`);
      }
    }
    expect(failures).toEqual([]);
  });

  for (const action of actions)
    it(`${action.name} (${classOf(action.name)})`, async () => {
      const { page, url } = home(action.name);
      const body = probeBody(action, page, c.seed, { findme: "Mine" }).json;
      const own = await ownReason(action.name, url);
      if (CASES.some((cs) => allowed(action.name, cs)))
        expect(own, "fixture: its own check refuses").toBeNull();
      const failures: string[] = [];
      // Listings first, then refusals (they write nothing), then allowed calls (which may change state).
      for (const cs of CASES) {
        await configure(c.agent, { capabilities: capsFor(cs, action.name) });
        const res = await md(app, c.w, c.agent, "GET", url);
        const listed = res.statusCode === 200 && actionNames(res.body).includes(action.name);
        if (listed !== allowed(action.name, cs)) failures.push(`${cs}: GET ${url} → listed: ${listed}`);
      }
      const ordered = [...CASES].sort((a, b) => +allowed(action.name, a) - +allowed(action.name, b));
      for (const cs of ordered) {
        await configure(c.agent, { capabilities: capsFor(cs, action.name) });
        const res = await md(app, c.w, c.agent, "POST", actionUrl(url, action.name), body);
        const got = `${res.statusCode} ${res.body.slice(0, 200)}`;
        if (allowed(action.name, cs)) {
          if (isCapabilityRefusal(res) || res.statusCode >= 500) failures.push(`${cs}: allowed, got ${got}`);
          continue;
        }
        // The capability guard runs before the action's own checks, so the refusal always names the capability.
        const reason = `capability \`${action.name}\``;
        if (
          res.statusCode !== 403 ||
          !res.body.includes(refusedFor(action.name)) ||
          !res.body.includes(reason)
        )
          failures.push(`${cs}: expected 403 naming ${reason}, got ${got}`);
      }
      expect(failures).toEqual([]);
    });
});

describe("never more than its owner", () => {
  it("an agent in a studio its owner is not in reads and does nothing there (its owner's 404), until the owner joins", async () => {
    const w = await makeWorld();
    const drifter = await makeAgent(w, w.carol, "drifter"); // carol is not in `general`
    const page = await md(app, w, drifter, "GET", "/studios/general");
    expect(page.statusCode).toBe(404);
    const post = () =>
      md(app, w, drifter, "POST", "/studios/general/actions/create_note", { title: "Hi", text: "Hello" });
    const refused = await post();
    expect(refused.statusCode).toBe(404);
    expect(refused.body).toContain("No studio general");
    expect(await db().note.count({ where: { authorId: drifter.id } })).toBe(0);
    // Outside studios, its always-allowed housekeeping still works.
    const pad = await md(app, w, drifter, "POST", "/whoami/actions/update_scratchpad", { text: "x" });
    expect(pad.statusCode).toBe(200);
    await db().studioMember.create({
      data: { studioId: w.studio.id, userId: w.carol.id, tenantId: w.tenant.id },
    });
    expect((await post()).statusCode).toBe(201);
  });

  it("a studio-admin agent of a member owner cannot pin_note someone else's note: it acts with the lesser role", async () => {
    const w = await makeWorld();
    const note = (await act(w, w.alice, "/studios/general", "create_note", { text: "Alice's" })).location;
    const helper = await makeAgent(w, w.bob, "helper");
    await setRole(w, helper.id, "admin");
    const page = await md(app, w, helper, "GET", note);
    expect(actionNames(page.body)).not.toContain("pin_note");
    const res = await md(app, w, helper, "POST", `${note}/actions/pin_note`, {});
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain(
      "`pin_note` here: its owner could not do this either: only the author or a studio admin can do this",
    );
    // Its owner could not either; an admin-owned admin agent can.
    expect((await md(app, w, w.bob, "POST", `${note}/actions/pin_note`, {})).statusCode).toBe(403);
    expect((await db().note.findFirstOrThrow({ where: { authorId: w.alice.id } })).pinnedAt).toBeNull();
    const aide = await makeAgent(w, w.alice, "aide");
    await setRole(w, aide.id, "admin");
    expect(actionNames((await md(app, w, aide, "GET", note)).body)).toContain("pin_note");
    expect((await md(app, w, aide, "POST", `${note}/actions/pin_note`, {})).statusCode).toBe(200);
  });
});

describe("/whoami tells an agent what it may do", () => {
  const list = (names: readonly string[]) => names.map((n) => `\`${n}\``).join(", ");
  it("capabilities granted, always allowed, never available, and what needs approval", async () => {
    const w = await makeWorld();
    const agent = await makeAgent(w, w.alice, "scout", {
      capabilities: ["create_note", "vote"],
      requires_approval: ["create_note"],
      approval_mode: "wait",
    });
    const who = async () => {
      const res = await md(app, w, agent, "GET", "/whoami");
      expect(res.statusCode).toBe(200);
      return res.body;
    };
    const body = await who();
    expect(body).toContain("## Your capabilities");
    expect(body).toContain(`Always allowed: ${list(ALWAYS_ALLOWED)}, and reading any page you can see.`);
    expect(body).toContain("Granted by your owner: `create_note`, `vote`.");
    expect(body).toContain(`Never available to agents: ${list(ALWAYS_BLOCKED)}.`);
    expect(body).toMatch(/wait for your owner's approval \(`create_note`\).*the run pauses/);
    await configure(agent, {});
    const absent = await who();
    expect(absent).toContain(`Granted by your owner: ${list(DEFAULT_CAPABILITIES)}.`);
    expect(absent).toContain("Nothing you may do needs approval.");
    await configure(agent, {
      capabilities: [],
      rules: [{ name: "no budget", action: "*", params: { text: "budget" }, decision: "deny" }],
    });
    const none = await who();
    expect(none).toContain("Granted by your owner: none.");
    expect(none).toMatch(/\(by rule\).*Rules may also deny an action/);
  });
});

describe("the navigator refuses the same way", () => {
  let env: AgentEnv;
  beforeAll(async () => {
    env = await startAgents("caps");
  });
  afterAll(async () => {
    await env?.close();
  });

  /** Alice's @scout (config, studio role) runs `script`; returns its steps and the prompts the model saw. */
  async function run(config: Record<string, unknown>, script: ReturnType<typeof tool>[], admin = false) {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout", config);
    if (admin) await setRole(w, scout.id, "admin");
    env.llm.setScript([...script, tool("finish", { message: "done" })]);
    const res = await md(app, w, w.alice, "POST", "/subagents/scout/run/actions/run_task", { task: "Go" });
    expect(res.statusCode).toBe(201);
    const done = await waitForRun(scout.id);
    expect(done.status).toBe("completed");
    const steps = await stepsOf(done.id);
    const sent = requestsFor(env, w).map((r) => r.body);
    const prompts = sent.map(userPrompt);
    // The current page's usable actions, as its Actions section names them: those typed as
    // tools by name, the others (past the tools' share of the budget) as lines for
    // execute_action. Sorted.
    const offered = prompts.map((p) => [...typedHere(p), ...actionNames(p)].sort());
    // The tools are the run's (the actions its agent may use, the pages' first when they do
    // not all fit): never one its capabilities refuse.
    const granted = agentConfig(
      await testPrisma().user.findUniqueOrThrow({ where: { id: scout.id } }),
    ).capabilities;
    for (const b of sent) {
      const typed = (b.tools ?? []).map((t) => t.function.name).filter((n) => !FIXED_TOOLS.has(n));
      expect(typed.filter((n) => capabilityDenial(n, granted))).toEqual([]);
    }
    return {
      w,
      scout,
      steps,
      prompts,
      offered,
      detail: (i: number) => steps[i]!.detail as Record<string, unknown>,
    };
  }
  const FIXED_TOOLS = new Set(["navigate", "finish", "ask_owner", "execute_action"]);
  /** The actions the current page names as tools: "Each is one of your tools: `a`, `b`." */
  const typedHere = (prompt: string) =>
    [
      ...(/Each is one of your tools: (.*)\.\n/
        .exec(prompt.split(/^## Actions$/m).pop() ?? "")?.[1]
        ?.matchAll(/`([a-z_]+)`/g) ?? []),
    ].map((m) => m[1]!);
  const toStudio = tool("navigate", { path: "/studios/general" });
  const newNote = tool("execute_action", { action: "create_note", params: { title: "T", text: "Body" } });

  const refusals = [
    {
      cls: "always blocked",
      config: {},
      admin: true, // passes update_studio's own admin check: only the capability refuses
      action: tool("execute_action", { action: "update_studio", params: { name: "Hijacked" } }),
      name: "update_studio",
      next: ["create_note", "create_decision", "create_commitment", "subscribe", "unsubscribe"],
      reason: "capability `update_studio` is never available to agents",
    },
    {
      cls: "grantable, not granted",
      config: { capabilities: ["create_decision"] },
      admin: false,
      action: newNote,
      name: "create_note",
      next: ["create_decision"],
      reason: "capability `create_note` is not granted to this agent",
    },
  ];
  for (const r of refusals) {
    it(`${r.cls}: the step fails (ok: false), nothing is written, the next prompt lists only allowed actions`, async () => {
      const { w, scout, steps, prompts, offered, detail } = await run(
        r.config,
        [toStudio, r.action],
        r.admin,
      );
      expect(steps.map((s) => s.type)).toEqual(["navigate", "navigate", "execute", "finish"]);
      expect(detail(2)).toMatchObject({ ok: false, action: r.name });
      expect(String(detail(2).error)).toContain(`\`${r.name}\``);
      expect(offered[1]).toEqual([...r.next].sort());
      expect(offered[2]).toEqual([...r.next].sort());
      expect(prompts[2]).toContain("# Your previous reply could not be used");
      expect(await db().note.count({ where: { authorId: scout.id } })).toBe(0);
      expect((await db().studio.findUniqueOrThrow({ where: { id: w.studio.id } })).name).toBe("General");
    });

    // BUG (src/services/agents/runtime/navigator.ts, the `page.actions.includes(d.action)` check before
    // runAction): an action the page has but the agent may not use is reported as "`x` is not an
    // action on <path>", hiding the capability reason the registry gives over HTTP (403).
    it(`${r.cls}: the step's error names the capability, as the HTTP 403 does`, async () => {
      const { detail } = await run(r.config, [toStudio, r.action], r.admin);
      expect(detail(2)).toMatchObject({ ok: false, action: r.name });
      expect(String(detail(2).error)).toContain(r.reason);
    });
  }

  it("grantable, granted: the step runs; the next prompt lists only the granted actions of the new page", async () => {
    const { scout, steps, prompts, offered, detail } = await run(
      { capabilities: ["create_note", "add_comment"] },
      [toStudio, newNote],
    );
    expect(detail(2)).toMatchObject({ ok: true, action: "create_note" });
    const note = await db().note.findFirstOrThrow({ where: { authorId: scout.id } });
    expect(steps[2]!.path).toBe("/studios/general");
    expect(offered[1]).toEqual(["create_note"]);
    expect(prompts[2]).toContain(`# Current page: /studios/general/notes/${note.id}`);
    expect(offered[2]).toEqual(["add_comment"]);
  });

  it("always allowed: with capabilities [] the scratchpad still saves; studio pages list nothing", async () => {
    const pad = tool("execute_action", { action: "update_scratchpad", params: { text: "remember" } });
    const { scout, offered, detail } = await run({ capabilities: [] }, [pad, toStudio]);
    expect(offered[0]).toEqual(["update_scratchpad"]);
    expect(detail(1)).toMatchObject({ ok: true, action: "update_scratchpad" });
    expect((await db().user.findUniqueOrThrow({ where: { id: scout.id } })).scratchpad).toBe("remember");
    expect(offered[2]).toEqual([]);
  });
});
