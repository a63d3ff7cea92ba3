// Letting a person go, through the real stack with real workers: a workspace admin deactivates
// bob from his person page; his sessions and API tokens answer 401 at once, he cannot sign in,
// his agent's running run stops at its next step, its waiting approval expires with a worded
// reason; reactivating lets him sign in again and leaves the agent paused. Or his agents go
// to a studio instead, through the transfer's own function.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { requestsFor } from "./helpers/agent-scripts.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, type World, waitFor } from "./helpers/app.ts";
import { signedIn, signInAs } from "./helpers/sessions.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("deactivation");
});
afterAll(async () => {
  await env?.close();
  await app?.close();
});
const db = testPrisma;

/** A world whose alice is a workspace admin, with bob's agent @scout. */
async function setup() {
  const w = await makeWorld("leave");
  await db().user.update({ where: { id: w.alice.id }, data: { tenantAdmin: true } });
  const scout = await makeAgent(w, w.bob, "scout");
  return { w, scout };
}

/** An action of @scout waiting for bob's review. */
async function waitingApproval(w: World, agentId: string) {
  return db().agentPendingAction.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      agentId,
      actionName: "create_note",
      params: { title: "Later", text: "needs a look" },
      pagePath: "/studios/general",
      matchedRule: "requires_approval",
      expiresAt: new Date(Date.now() + 86_400_000),
    },
  });
}

describe("deactivating a person", () => {
  it("ends sessions and tokens at once, shuts sign-in, stops the running run and expires approvals", async () => {
    const { w, scout } = await setup();
    // Step 1 reads the studio; the second model call hangs, so the run is mid-step when bob leaves.
    env.llm.setScript([tool("navigate", { path: "/studios/general" }), { hang: true }]);
    const ran = await md(app, w, w.bob, "POST", "/subagents/scout/run/actions/run_task", {
      task: "Look around",
    });
    expect(ran.statusCode).toBe(201);
    await waitFor(async () => requestsFor(env, w).length === 2, 20_000);
    const pending = await waitingApproval(w, scout.id);
    const bobBrowser = await signInAs(app, w, w.bob);
    expect(await signedIn(bobBrowser, "bob")).toBe(true);
    expect((await md(app, w, scout, "GET", "/whoami")).statusCode).toBe(200);

    const admin = await login(app, w, w.alice);
    // The browser asks first, naming the person and what happens.
    const asked = await admin.post("/settings/people/bob/actions/deactivate_person", {
      _action: "deactivate_person",
    });
    expect(asked.statusCode).toBe(200);
    expect(asked.body).toContain("Deactivate Bob Brown (@bob)?");
    expect(asked.body).toContain("Their 1 agent (@scout) is paused");
    expect(asked.body).toContain(
      "1 run under way stops at the next step, and 1 action waiting for their approval expires",
    );
    expect(await signedIn(bobBrowser, "bob")).toBe(true);

    const done = await admin.post("/settings/people/bob/actions/deactivate_person", { _confirm: "yes" });
    expect(done.statusCode).toBe(303);
    expect((await md(app, w, w.bob, "GET", "/whoami")).statusCode).toBe(401);
    expect((await md(app, w, scout, "GET", "/whoami")).statusCode).toBe(401);
    expect(await signedIn(bobBrowser, "bob")).toBe(false);
    const again = await signInAs(app, w, w.bob);
    expect(again.signIn.statusCode).toBe(401);
    expect(again.signIn.body).toContain("This account has been deactivated");

    const run = await waitForRun(scout.id, (status) => status === "cancelled", 20_000);
    expect(run.stopRequestedAt).not.toBeNull();
    const agent = await db().user.findUniqueOrThrow({ where: { id: scout.id } });
    expect(agent.pausedReason).toBe("its owner @bob was deactivated");
    const expired = await db().agentPendingAction.findUniqueOrThrow({ where: { id: pending.id } });
    expect(expired).toMatchObject({ status: "expired" });
    expect(expired.error).toContain("Its owner @bob was deactivated, so nobody is left to review it");
    // Nothing is deleted: bob, his agent and his tokens (revoked) are all still there.
    expect(await db().apiToken.count({ where: { userId: w.bob.id, revokedAt: { not: null } } })).toBe(1);

    // Reactivated: he signs in again, with a new token only; his agent waits for him to resume it.
    const back = await admin.post("/settings/people/bob/actions/reactivate_person", {});
    expect(back.statusCode).toBe(303);
    expect(await signedIn(await signInAs(app, w, w.bob), "bob")).toBe(true);
    expect((await md(app, w, w.bob, "GET", "/whoami")).statusCode).toBe(401);
    expect((await db().user.findUniqueOrThrow({ where: { id: scout.id } })).pausedAt).not.toBeNull();
  });

  it("hands the agents to a studio instead, when the admin chooses one", async () => {
    const { w, scout } = await setup();
    const admin = await login(app, w, w.alice);
    const done = await admin.post("/settings/people/bob/actions/deactivate_person", {
      agents_to: "general",
      _confirm: "yes",
    });
    expect(done.statusCode).toBe(303);
    const agent = await db().user.findUniqueOrThrow({ where: { id: scout.id } });
    expect(agent).toMatchObject({ parentId: null, ownerStudioId: w.studio.id, pausedAt: null });
    // Alice administers the studio: she manages it now.
    expect((await md(app, w, w.alice, "GET", "/subagents/scout/settings")).statusCode).toBe(200);
  });

  it("is for workspace admins only, and never of oneself", async () => {
    const { w } = await setup();
    const bob = await login(app, w, w.bob);
    // Anyone may see the page; only admins get its form, and the action refuses anyone else.
    const seen = await bob.get("/settings/people/carol");
    expect(seen.statusCode).toBe(200);
    expect(seen.body).not.toContain("Deactivate @carol");
    const posted = await md(app, w, w.bob, "POST", "/settings/people/carol/actions/deactivate_person", {});
    expect(posted.statusCode).toBe(403);
    const self = await md(app, w, w.alice, "POST", "/settings/people/alice/actions/deactivate_person", {});
    expect(self.statusCode).toBe(403);
    expect(self.body).toContain("you cannot deactivate yourself");
    const unknown = await md(app, w, w.alice, "POST", "/settings/people/bob/actions/deactivate_person", {
      agents_to: "nowhere",
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toContain("`agents_to`: no studio with this handle");
    expect((await db().user.findUniqueOrThrow({ where: { id: w.bob.id } })).deactivatedAt).toBeNull();
  });
});
