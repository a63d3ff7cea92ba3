// Studio-owned agents over the markdown API: created by a studio's admin or transferred to
// the studio, managed by every admin of it (and nobody else), acting only in that studio
// and never above a member there, paying with the studio's keys, and telling each admin.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { notifyOwnerOfApproval } from "../src/services/agents/core/notify.ts";
import { GRANTABLE } from "../src/services/agents/policy/capabilities.ts";
import { createApiToken } from "../src/services/tokens.ts";
import {
  act,
  addMember,
  buildTestApp,
  makeWorld,
  md,
  type Person,
  testPrisma,
  type World,
} from "./helpers/app.ts";
import { permissions } from "./helpers/approvals.ts";

let app: FastifyInstance;
const db = testPrisma;
let w: World;
/** A second admin of `general`, who did not create the agents. */
let dana: Person;

beforeAll(async () => {
  app = await buildTestApp();
  w = await makeWorld("sa");
  dana = await addMember(w, "dana", "Dana Diaz", "admin");
});
afterAll(async () => {
  await app?.close();
});

const post = (who: Person, path: string, action: string, body: Record<string, unknown>) =>
  md(app, w, who, "POST", `${path}/actions/${action}`, body);
const agentRow = (handle: string) =>
  db().user.findUniqueOrThrow({
    where: { tenantId_handle: { tenantId: w.tenant.id, handle } },
    include: { memberships: true },
  });

async function studioAgent(handle: string) {
  const res = await post(w.alice, "/subagents", "create_subagent", {
    name: `Agent ${handle}`,
    handle,
    studio: "general",
  });
  expect(res.statusCode, res.body).toBe(201);
  return agentRow(handle);
}

async function pendingOf(agentId: string) {
  return db().agentPendingAction.create({
    data: {
      ...{ id: newId(), tenantId: w.tenant.id, agentId, actionName: "create_note", params: { text: "hi" } },
      ...{ pagePath: "/studios/general", contextSummary: "test", matchedRule: "requires_approval" },
      expiresAt: new Date(Date.now() + 3600_000),
    },
  });
}

describe("creating and transferring", () => {
  it("an admin creates one from /subagents or the studio's page: the studio owns it, it is a member there only", async () => {
    const scribe = await studioAgent("scribe");
    expect([scribe.parentId, scribe.ownerStudioId]).toEqual([null, w.studio.id]);
    expect(scribe.memberships.map((m) => [m.studioId, m.role])).toEqual([[w.studio.id, "member"]]);

    const onPage = await post(w.alice, "/studios/general", "create_subagent", {
      name: "Triage",
      handle: "triage",
    });
    expect(onPage.statusCode, onPage.body).toBe(201);
    expect((await agentRow("triage")).ownerStudioId).toBe(w.studio.id);

    // A member may not, from either place; the studio's page lists its agents.
    expect(
      (await post(w.bob, "/studios/general", "create_subagent", { name: "X", handle: "x1" })).statusCode,
    ).toBe(403);
    const bad = await post(w.bob, "/subagents", "create_subagent", {
      name: "X",
      handle: "x2",
      studio: "general",
    });
    expect([bad.statusCode, bad.body]).toEqual([
      400,
      expect.stringContaining("you are not an admin of a studio"),
    ]);
    const page = await md(app, w, w.bob, "GET", "/studios/general");
    expect(page.body).toMatch(/## Its agents[\s\S]*@scribe[\s\S]*@triage/);
    // By name, not by handle; an archived one is gone from the list.
    await db().user.update({ where: { id: scribe.id }, data: { name: "Zed" } });
    const renamed = await md(app, w, w.bob, "GET", "/studios/general");
    expect(renamed.body).toMatch(/## Its agents[\s\S]*@triage[\s\S]*@scribe/);
    await db().user.update({
      where: { id: (await agentRow("triage")).id },
      data: { archivedAt: new Date() },
    });
    const after = await md(app, w, w.bob, "GET", "/studios/general");
    expect(after.body).toMatch(/## Its agents[\s\S]*@scribe/);
    expect(after.body).not.toContain("@triage");
  });

  it("transfer: alice's own agent becomes the studio's, leaves other studios and her key", async () => {
    await post(w.alice, "/subagents", "create_subagent", { name: "Mine", handle: "mine" });
    await db().studio.create({
      data: {
        ...{ id: newId(), tenantId: w.tenant.id, handle: "side", name: "Side", inviteCode: newId(10) },
        createdById: w.alice.id,
        members: { create: [{ userId: w.alice.id, tenantId: w.tenant.id, role: "admin" }] },
      },
    });
    await post(w.alice, "/subagents/mine", "add_to_studio", { studio: "side" });
    await post(w.alice, "/u/alice/settings/api-keys", "add_api_key", {
      ...{ label: "Alice key", provider: "openai_compatible", base_url: "http://127.0.0.1:9/v1" },
      key: "sk-alice-personal-1234",
    });
    const key = await db().agentApiKey.findFirstOrThrow({
      where: { tenantId: w.tenant.id, label: "Alice key" },
    });
    await post(w.alice, "/subagents/mine", "set_agent_api_key", { api_key: key.id });
    // Dana administers general but does not own @mine: she cannot see it yet, let alone transfer it.
    expect((await post(dana, "/subagents/mine", "transfer_subagent", { studio: "general" })).statusCode).toBe(
      404,
    );

    const res = await post(w.alice, "/subagents/mine", "transfer_subagent", { studio: "general" });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain("left 1 other studio");
    const mine = await agentRow("mine");
    expect([mine.parentId, mine.ownerStudioId, mine.memberships.map((m) => m.studioId)]).toEqual([
      null,
      w.studio.id,
      [w.studio.id],
    ]);
    expect((mine.agentConfig as Record<string, unknown>).api_key_id).toBeUndefined();
    expect((await md(app, w, dana, "GET", "/subagents/mine")).statusCode).toBe(200);
    expect((await post(w.alice, "/subagents/mine", "transfer_subagent", { studio: "side" })).statusCode).toBe(
      403,
    );
  });
});

describe("who manages it", () => {
  it("every admin manages it; a member gets 403 saying who does; an outsider never sees it", async () => {
    await studioAgent("keeper");
    for (const path of ["/subagents/keeper", "/subagents/keeper/settings", "/subagents/keeper/usage"])
      expect((await md(app, w, dana, "GET", path)).statusCode, path).toBe(200);
    const member = await md(app, w, w.bob, "GET", "/subagents/keeper/settings");
    expect([member.statusCode, member.body]).toEqual([
      403,
      expect.stringContaining("Only the admins of General manage @keeper"),
    ]);
    expect((await post(w.bob, "/subagents/keeper", "update_subagent", { max_steps: 5 })).statusCode).toBe(
      403,
    );
    expect((await post(dana, "/subagents/keeper", "update_subagent", { max_steps: 5 })).statusCode).toBe(200);
    // Carol is in the tenant, not the studio: no page of it, not even its profile.
    for (const path of ["/subagents/keeper", "/subagents/keeper/runs", "/u/keeper"])
      expect((await md(app, w, w.carol, "GET", path)).statusCode, path).toBe(404);
    expect((await md(app, w, w.bob, "GET", "/u/keeper")).statusCode).toBe(200);
    const list = await md(app, w, w.bob, "GET", "/subagents");
    expect(list.body).toMatch(/## Your studios' agents[\s\S]*@keeper[\s\S]*its admins manage it/);
    expect((await md(app, w, w.carol, "GET", "/subagents")).body).not.toContain("keeper");
  });

  it("an admin demoted loses control at once: its pages and its reviews", async () => {
    const agent = await studioAgent("demo");
    const pending = await pendingOf(agent.id);
    await post(w.alice, "/studios/general/members", "update_member_role", { handle: "dana", role: "member" });
    expect((await md(app, w, dana, "GET", "/subagents/demo")).statusCode).toBe(403);
    expect((await post(dana, "/approvals", "approve_action", { id: pending.id })).statusCode).toBe(404);
    await post(w.alice, "/studios/general/members", "update_member_role", { handle: "dana", role: "admin" });
    expect((await post(dana, "/approvals", "approve_action", { id: pending.id })).statusCode).toBe(200);
  });

  it("two admins approving at once: exactly one review wins, one approval to execute", async () => {
    const agent = await studioAgent("racer");
    for (let i = 0; i < 5; i++) {
      const pending = await pendingOf(agent.id);
      const [a, b] = await Promise.all([
        i % 2
          ? post(w.alice, "/approvals", "reject_action", { id: pending.id, reason: "no" })
          : post(w.alice, "/approvals", "approve_action", { id: pending.id }),
        post(dana, "/approvals", "approve_action", { id: pending.id }),
      ]);
      expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
      const events = await db().event.count({
        where: { subjectId: pending.id, type: { in: ["approval.approved", "approval.rejected"] } },
      });
      expect(events).toBe(1);
    }
  });

  it("two admins saving at once keep both changes: the config is never torn", async () => {
    await studioAgent("both");
    for (let i = 1; i <= 5; i++) {
      const [a, b] = await Promise.all([
        post(w.alice, "/subagents/both/usage", "set_cost_limit", { monthly_limit_usd: 10 * i }),
        post(dana, "/subagents/both", "update_subagent", { max_steps: i + 1 }),
      ]);
      expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
      const cfg = (await agentRow("both")).agentConfig as Record<string, unknown>;
      expect([cfg.cost_limit_usd, cfg.max_steps]).toEqual([10 * i, i + 1]);
    }
  });

  it("each admin hears its approval requests once; a review by one settles them for all", async () => {
    const agent = await studioAgent("asker");
    const pending = await pendingOf(agent.id);
    const e = await db().event.create({
      data: {
        ...{ id: newId(), tenantId: w.tenant.id, actorId: agent.id, type: "approval.requested" },
        ...{ subjectType: "pending_action", subjectId: pending.id },
      },
    });
    expect(await notifyOwnerOfApproval(db(), e)).toBe(2);
    expect(await notifyOwnerOfApproval(db(), e)).toBe(0); // re-delivered: nobody twice
    const open = () => db().notification.findMany({ where: { eventId: e.id, dismissedAt: null } });
    expect((await open()).map((n) => n.userId).sort()).toEqual([w.alice.id, dana.id].sort());
    expect(
      (await post(dana, "/approvals", "reject_action", { id: pending.id, reason: "no" })).statusCode,
    ).toBe(200);
    expect(await open()).toEqual([]);
  });
});

describe("its rights never exceed a member's of its own studio", () => {
  it("refuses to act in another studio, or as an admin, whatever its capabilities", async () => {
    const agent = await studioAgent("bound");
    const granted = await post(
      w.alice,
      "/subagents/bound/settings",
      "set_capabilities",
      permissions([...GRANTABLE]),
    );
    expect(granted.statusCode, granted.body).toBe(200);
    const { token } = await createApiToken(db(), w.tenant.id, agent.id, "test");
    const bound: Person = { id: agent.id, handle: "bound", name: "Bound", email: "", token };
    // Put it in another studio and make it an admin of its own behind the actions' back.
    const side = await db().studio.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "side" } });
    await db().studioMember.create({ data: { studioId: side.id, userId: agent.id, tenantId: w.tenant.id } });
    await db().studioMember.update({
      where: { studioId_userId: { studioId: w.studio.id, userId: agent.id } },
      data: { role: "admin" },
    });
    const elsewhere = await post(bound, "/studios/side", "create_note", { text: "hello" });
    // It never reads past its owner: another studio answers it 404, as to anyone outside it.
    expect([elsewhere.statusCode, elsewhere.body]).toEqual([404, expect.stringContaining("No studio side")]);
    // It knows whom it works for: its /whoami and its prompt name the studio, not a person.
    const whoami = await md(app, w, bound, "GET", "/whoami");
    expect(whoami.body).toContain(
      "You belong to the studio [General](/studios/general): its admins manage you",
    );
    const here = await post(bound, "/studios/general", "create_note", { text: "hello" });
    expect(here.statusCode, here.body).toBe(201);
    const bobs = await act(w, w.bob, "/studios/general", "create_note", { text: "Bob's" });
    const pin = await md(app, w, bound, "POST", `${bobs.location}/actions/pin_note`, {});
    expect([pin.statusCode, pin.body]).toEqual([403, expect.stringContaining("it acts as a member here")]);
  });
});

describe("members and its run form", () => {
  it("members run it only when its admins allow it, and see the runs they started", async () => {
    await studioAgent("runner");
    expect((await md(app, w, w.bob, "GET", "/subagents/runner/run")).statusCode).toBe(403);
    expect(
      (await post(dana, "/subagents/runner", "set_member_runs", { members_may_run: true })).statusCode,
    ).toBe(200);
    const run = await post(w.bob, "/subagents/runner/run", "run_task", { task: "Summarize" });
    expect(run.statusCode, run.body).toBe(201);
    const path = /\/subagents\/runner\/runs\/\w+/.exec(run.headers.location as string)![0];
    expect((await md(app, w, w.bob, "GET", path)).statusCode).toBe(200);
    expect((await md(app, w, dana, "GET", path)).statusCode).toBe(200);
    // Only his own runs, and still none of its management pages.
    const other = await post(dana, "/subagents/runner/run", "run_task", { task: "Another" });
    const danas = /\/subagents\/runner\/runs\/\w+/.exec(other.headers.location as string)![0];
    expect((await md(app, w, w.bob, "GET", danas)).statusCode).toBe(404);
    expect((await md(app, w, w.bob, "GET", "/subagents/runner/runs")).statusCode).toBe(403);
    const yours = await post(w.alice, "/subagents", "create_subagent", { name: "Solo", handle: "solo" });
    expect(yours.statusCode).toBe(201);
    const refused = await post(w.alice, "/subagents/solo", "set_member_runs", { members_may_run: true });
    expect([refused.statusCode, refused.body]).toEqual([
      403,
      expect.stringContaining("only for a studio's agent"),
    ]);
  });
});

describe("money", () => {
  it("its studio's keys: admins add and pick them, members and outsiders cannot, the key shows only its last four", async () => {
    await studioAgent("payer");
    const keys = "/studios/general/settings/api-keys";
    const secret = "sk-studio-secret-WXYZ";
    expect((await md(app, w, w.bob, "GET", keys)).statusCode).toBe(403);
    expect((await md(app, w, w.carol, "GET", keys)).statusCode).toBe(404);
    const added = await post(dana, keys, "add_api_key", {
      ...{ label: "Team key", provider: "openai_compatible", base_url: "http://127.0.0.1:9/v1" },
      key: secret,
    });
    expect(added.statusCode, added.body).toBe(201);
    const key = await db().agentApiKey.findFirstOrThrow({
      where: { tenantId: w.tenant.id, label: "Team key" },
    });
    expect([key.studioId, key.ownerId]).toEqual([w.studio.id, null]);
    const page = await md(app, w, w.alice, "GET", keys);
    expect(page.body).toContain("…WXYZ");
    expect(page.body).not.toContain(secret);
    // Alice's personal key is not the studio's; the studio's key is not hers.
    const alices = await db().agentApiKey.findFirstOrThrow({
      where: { tenantId: w.tenant.id, label: "Alice key" },
    });
    const wrong = await post(w.alice, "/subagents/payer", "set_agent_api_key", { api_key: alices.id });
    expect([wrong.statusCode, wrong.body]).toEqual([
      400,
      expect.stringContaining("not one of its studio's keys"),
    ]);
    expect(
      (await post(w.alice, "/subagents/payer", "set_agent_api_key", { api_key: key.id })).statusCode,
    ).toBe(200);
    expect((await md(app, w, dana, "GET", "/subagents/payer")).body).toContain("the studio's key “Team key”");
    const mineWrong = await post(w.alice, "/subagents/solo", "set_agent_api_key", { api_key: key.id });
    expect(mineWrong.statusCode).toBe(400);
  });

  it("its spend shows on the studio's usage page, for its admins only", async () => {
    expect((await md(app, w, w.bob, "GET", "/studios/general/usage")).statusCode).toBe(403);
    const res = await md(app, w, dana, "GET", "/studios/general/usage");
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("@payer");
    expect(res.body).not.toContain("@solo");
  });
});
