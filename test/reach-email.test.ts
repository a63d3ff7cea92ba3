// Reaching people by mail, end to end on the real stack: an action held for approval mails
// each of the agent's managers through a real SMTP server in this process; the mail's review
// links open the action (their GET decides nothing) and decide it once, whoever clicks how
// often; an expired link says so; a rejection's reason reaches the model; an SMTP server
// that is away delays a mail and never the run; a link bound to params that changed refuses.
// Preferences: the digest (sent by the worker's sweep) and off.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { queueDigests } from "../src/services/reach/digest.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { type AgentEnv, makeAgent, waitForRun } from "./helpers/agents.ts";
import { login, md, type Person, testPrisma, type World, waitFor } from "./helpers/app.ts";
import {
  type Harness,
  noteStep,
  notesBy,
  queued,
  resumed,
  runTask,
  setupAgent,
} from "./helpers/approvals.ts";
import { type Inbox, reviewLinks, startMailing } from "./helpers/inbox.ts";

let app: FastifyInstance;
let env: AgentEnv;
let inbox: Inbox;
let stack: Awaited<ReturnType<typeof startMailing>>;
beforeAll(async () => {
  stack = await startMailing("reach-mail");
  ({ inbox, app, env } = stack);
});
afterAll(() => stack.close());

const db = testPrisma;
const h: Harness = { app: () => app, env: () => env };
const mailTo = (who: Person, n = 1) =>
  waitFor(async () => (inbox.to(who.email).length >= n ? inbox.to(who.email) : null), 15_000);

/** A studio's agent @scribe in General, whose notes wait for an admin: alice and dave are its admins. */
async function studioAgent() {
  const { w } = await setupAgent(h, {}, () => [noteStep]);
  const dave = await db().user.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      handle: "dave",
      name: "Dave Diaz",
      email: `dave@${w.tenant.subdomain}.test`,
      kind: "person",
    },
  });
  await db().studioMember.create({
    data: { studioId: w.studio.id, userId: dave.id, tenantId: w.tenant.id, role: "admin" },
  });
  const scribe = await makeAgent(w, w.alice, "scribe", { requires_approval: ["create_note"] });
  await db().user.update({ where: { id: scribe.id }, data: { parentId: null, ownerStudioId: w.studio.id } });
  return { w, scribe, dave: { ...dave, email: dave.email!, token: "" } as Person };
}

describe("an approval request by mail", () => {
  it("mails each manager once, within seconds, multipart, naming the agent, the action and the place", async () => {
    const { w, scribe, dave } = await studioAgent();
    const res = await md(app, w, w.alice, "POST", "/subagents/scribe/run/actions/run_task", {
      task: "Post the findings",
    });
    expect(res.statusCode).toBe(201);
    const p = await waitFor(
      () => db().agentPendingAction.findFirst({ where: { agentId: scribe.id } }),
      10_000,
    );
    const [toAlice] = await mailTo(w.alice);
    const [toDave] = await mailTo(dave);
    for (const m of [toAlice!, toDave!]) {
      expect(m.subject).toBe("@scribe wants your approval to post a note, in the studio General");
      expect(m.parsed.from?.text).toContain("cadre@example.test");
      expect(m.text).toContain("Approve: http");
      expect(m.html).toContain("Approve…");
      expect(m.parsed.headers.get("content-type")).toMatchObject({ value: "multipart/alternative" });
      // Names and links only: what the note would say stays in the app.
      expect(m.text).not.toContain("All good");
    }
    // Bob is a member, not an admin; the links are each person's own.
    expect(inbox.to(w.bob.email)).toHaveLength(0);
    expect(reviewLinks(toAlice!).approve).not.toBe(reviewLinks(toDave!).approve);
    expect(
      await db().outboundEmail.count({
        where: { eventId: { not: "" }, userId: { in: [w.alice.id, dave.id] } },
      }),
    ).toBe(2);
    expect(p.status).toBe("pending");
  });

  it("the link's GET changes nothing; one click, signed in, approves once; every later try sees it done", async () => {
    const { w, scout, p } = await queued(h);
    const [mail] = await mailTo(w.alice);
    const { approve } = reviewLinks(mail!);
    // A mail scanner following the link, signed out: a login page, nothing decided.
    const scanner = await app.inject({ method: "GET", url: approve, headers: { host: w.host } });
    expect(scanner.statusCode).toBe(303);
    expect(scanner.headers.location).toMatch(/^\/login\?next=/);
    const browser = await login(app, w, w.alice);
    const page = await browser.get(approve);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`Approve #${p.id}`);
    expect(page.body).toContain("the studio General");
    expect((await db().agentPendingAction.findUniqueOrThrow({ where: { id: p.id } })).status).toBe("pending");

    const token = approve.split("/").pop()!;
    const click = await browser.post(`${approve}/actions/approve_from_link`, { token });
    expect(click.statusCode).toBe(303);
    await waitFor(async () => ((await notesBy(scout.id)).length === 1 ? true : null), 10_000);
    const again = await md(app, w, w.alice, "POST", `${approve}/actions/approve_from_link`, { token });
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain("already used");
    const api = await md(app, w, w.alice, "POST", "/approvals/actions/approve_action", { id: p.id });
    expect(api.statusCode).toBe(409);
    expect((await browser.get("/approvals")).body).toContain(`#${p.id}`);
    expect((await browser.get(approve)).body).toContain("This link cannot be used");
    expect(await notesBy(scout.id)).toHaveLength(1);
  });

  it("20 concurrent clicks on one link execute the action once", async () => {
    const { w, scout } = await queued(h);
    const [mail] = await mailTo(w.alice);
    const { approve } = reviewLinks(mail!);
    const token = approve.split("/").pop()!;
    const clicks = await Promise.all(
      Array.from({ length: 20 }, () =>
        md(app, w, w.alice, "POST", `${approve}/actions/approve_from_link`, { token }),
      ),
    );
    expect(clicks.filter((c) => c.statusCode === 200)).toHaveLength(1);
    expect(clicks.filter((c) => c.statusCode === 409)).toHaveLength(19);
    await waitFor(async () => ((await notesBy(scout.id)).length ? true : null), 10_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(await notesBy(scout.id)).toHaveLength(1);
    expect(await db().event.count({ where: { tenantId: w.tenant.id, type: "approval.approved" } })).toBe(1);
  });

  it("a link is the recipient's only, and dies with its action's expiry", async () => {
    const { w, p } = await queued(h);
    const [mail] = await mailTo(w.alice);
    const { approve } = reviewLinks(mail!);
    const token = approve.split("/").pop()!;
    const asBob = await md(app, w, w.bob, "POST", `${approve}/actions/approve_from_link`, { token });
    expect(asBob.statusCode).toBe(403);
    expect(asBob.body).toContain("sent to @alice");
    await db().agentPendingAction.update({
      where: { id: p.id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const page = await md(app, w, w.alice, "GET", approve);
    expect(page.statusCode).toBe(200);
    // Past its expiry, the expiry sweep may already have marked it expired: either way it is dead.
    expect(page.body).toMatch(/This link expired|is already expired: there is nothing left to decide/);
    const late = await md(app, w, w.alice, "POST", `${approve}/actions/approve_from_link`, { token });
    expect(late.statusCode).toBe(409);
    expect(late.body).toContain("expired");
    expect((await db().agentPendingAction.findUniqueOrThrow({ where: { id: p.id } })).status).not.toBe(
      "approved",
    );
    const unknown = await md(app, w, w.alice, "GET", "/review/not-a-real-token-at-all");
    expect(unknown.statusCode).toBe(404);
  });

  it("a recipient who no longer manages the agent: the link shows nothing of the action and decides nothing", async () => {
    const { w, scribe, dave } = await studioAgent();
    const { token: daveToken } = await createApiToken(db(), w.tenant.id, dave.id, "dave", {
      scope: "manage",
    });
    const asDave = { ...dave, token: daveToken };
    await md(app, w, w.alice, "POST", "/subagents/scribe/run/actions/run_task", {
      task: "Post the findings",
    });
    const p = await waitFor(
      () => db().agentPendingAction.findFirst({ where: { agentId: scribe.id } }),
      10_000,
    );
    const [mail] = await mailTo(dave);
    const { approve } = reviewLinks(mail!);
    const token = approve.split("/").pop()!;
    expect((await md(app, w, asDave, "GET", approve)).body).toContain("All good");
    // Alice makes Dave a plain member: he no longer manages @scribe.
    await db().studioMember.updateMany({
      where: { studioId: w.studio.id, userId: dave.id },
      data: { role: "member" },
    });
    const page = await md(app, w, asDave, "GET", approve);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(
      "You no longer manage @scribe: this link shows nothing of the action and decides nothing.",
    );
    expect(page.body).not.toContain("All good");
    expect(page.body).not.toContain("Findings");
    expect(page.body).not.toContain(`Approve #${p.id}`);
    const click = await md(app, w, asDave, "POST", `${approve}/actions/approve_from_link`, { token });
    expect([click.statusCode, click.body]).toEqual([
      403,
      expect.stringContaining("You no longer manage @scribe"),
    ]);
    expect((await db().agentPendingAction.findUniqueOrThrow({ where: { id: p.id } })).status).toBe("pending");
    expect(
      (
        await db().reviewLink.findFirstOrThrow({
          where: { pendingId: p.id, userId: dave.id, decision: "approve" },
        })
      ).usedAt,
    ).toBeNull();
  });

  it("a link is bound to the params it was sent for: changed since, its GET says so and its POST is a 409", async () => {
    const { w, p } = await queued(h);
    const [mail] = await mailTo(w.alice);
    const { approve } = reviewLinks(mail!);
    const token = approve.split("/").pop()!;
    // What the action would write changes after the mail went out (as a row rewritten behind the app's back).
    await db().agentPendingAction.update({
      where: { id: p.id },
      data: { params: { title: "Findings", text: "Something else entirely" } },
    });
    const page = await md(app, w, w.alice, "GET", approve);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`#${p.id} changed since this link was sent: review it on its page.`);
    // In a browser, the page offers no button to press.
    const html = await (await login(app, w, w.alice)).get(approve);
    expect(html.body).toContain("changed since this link was sent");
    expect(html.body).not.toContain(`Approve #${p.id}`);
    const click = await md(app, w, w.alice, "POST", `${approve}/actions/approve_from_link`, { token });
    expect([click.statusCode, click.body]).toEqual([
      409,
      expect.stringContaining("changed since this link was sent"),
    ]);
    expect((await db().agentPendingAction.findUniqueOrThrow({ where: { id: p.id } })).status).toBe("pending");
    // Unused: the link stays bound, and the approvals page is still the way to decide it.
    expect(
      (await db().reviewLink.findFirstOrThrow({ where: { pendingId: p.id, decision: "approve" } })).usedAt,
    ).toBeNull();
  });

  it("a reject link with a reason: the waiting run reads the reason", async () => {
    const { w, scout } = await queued(h, { approval_mode: "wait" });
    const [mail] = await mailTo(w.alice);
    const { reject } = reviewLinks(mail!);
    const token = reject.split("/").pop()!;
    const page = await md(app, w, w.alice, "GET", reject);
    expect(page.body).toContain("reject_from_link");
    const res = await md(app, w, w.alice, "POST", `${reject}/actions/reject_from_link`, {
      token,
      reason: "Not before Monday's review",
    });
    expect(res.statusCode).toBe(200);
    const { run, prompts } = await resumed(h, w, scout.id);
    expect(run.status).toBe("completed");
    expect(prompts.at(-1)).toContain("Not before Monday's review");
  });
});

describe("an SMTP server that is away", () => {
  it("delays the mail until it is back; the run is unaffected", async () => {
    await inbox.stop();
    try {
      const { w, scout } = await setupAgent(h, { requires_approval: ["create_note"] }, () => [noteStep]);
      await runTask(h, w);
      expect((await waitForRun(scout.id)).status).toBe("completed");
      const row = await waitFor(
        () =>
          db().outboundEmail.findFirst({
            where: { userId: w.alice.id, attempts: { gt: 0 }, lastError: { not: null } },
          }),
        15_000,
      );
      expect(row.status).toBe("queued");
      expect(inbox.to(w.alice.email)).toHaveLength(0);
      await inbox.start();
      const [mail] = await mailTo(w.alice);
      expect(mail!.subject).toContain("@scout wants your approval");
      await waitFor(() => db().outboundEmail.findFirst({ where: { id: row.id, status: "sent" } }), 5000);
      expect(inbox.to(w.alice.email)).toHaveLength(1);
    } finally {
      await inbox.start();
    }
  }, 40_000);
});

describe("what each person chose", () => {
  async function choose(w: World, prefs: Record<string, string>) {
    const res = await md(
      app,
      w,
      w.alice,
      "POST",
      "/u/alice/settings/notifications/actions/set_notifications",
      prefs,
    );
    expect(res.statusCode).toBe(200);
  }

  it("a daily digest holds the news; the worker's sweep sends it from its hour, once a day; off sends nothing", async () => {
    const { w, scout } = await setupAgent(h, { requires_approval: ["create_note"] }, () => [noteStep]);
    await choose(w, { approval: "digest", question: "off", cost: "app", run_failed: "off" });
    const page = await md(app, w, w.alice, "GET", "/u/alice/settings/notifications");
    expect(page.body).toContain("Actions waiting for your approval: **Daily digest**");
    await runTask(h, w);
    await waitForRun(scout.id);
    const approvalMail = { userId: w.alice.id, kind: "approval" };
    const held = await waitFor(() => db().outboundEmail.findFirst({ where: approvalMail }), 10_000);
    expect(held.status).not.toBe("queued");
    // The worker's maintenance sweep sends the day's digest (its hour is now): one mail.
    const [digest] = await mailTo(w.alice);
    expect(digest!.subject).toBe("Your agents today: 1 update");
    expect(digest!.text).toContain(held.subject);
    expect(digest!.text).toContain("/subagents/scout/pending/");
    expect((await db().outboundEmail.findUniqueOrThrow({ where: { id: held.id } })).status).toBe("digested");

    // News later the same day waits for tomorrow's digest, however often the sweep runs.
    await runTask(h, w, "Once more");
    const later = await waitFor(
      () => db().outboundEmail.findFirst({ where: { ...approvalMail, status: "held" } }),
      10_000,
    );
    await new Promise((r) => setTimeout(r, 1200));
    expect(inbox.to(w.alice.email)).toHaveLength(1);
    // Tomorrow: nothing before the hour; from it, the held line, once.
    const origin = () => "http://x.localhost";
    const tomorrow = (hour: number) => {
      const d = new Date(Date.now() + 24 * 3600_000);
      d.setUTCHours(hour, 0, 0, 0);
      return d;
    };
    expect(await queueDigests(db(), { hourUtc: 8, origin }, tomorrow(7))).toEqual([]);
    const [next] = await queueDigests(db(), { hourUtc: 8, origin }, tomorrow(9));
    expect(await queueDigests(db(), { hourUtc: 8, origin }, tomorrow(10))).toEqual([]);
    expect((await db().outboundEmail.findUniqueOrThrow({ where: { id: next! } })).text).toContain(
      later.subject,
    );

    // Off: a failed run tells alice nothing at all.
    await choose(w, { approval: "email", question: "email", cost: "email", run_failed: "off" });
    env.llm.setScript([{ status: 400, content: "model not found" }]);
    await runTask(h, w, "Fail now");
    await waitFor(
      async () =>
        (await db().subagentTaskRun.count({ where: { agentId: scout.id, status: "failed" } })) || null,
      10_000,
    );
    await new Promise((r) => setTimeout(r, 800));
    expect(
      await db().notification.count({ where: { userId: w.alice.id, path: { contains: "/runs/" } } }),
    ).toBe(0);
  }, 30_000);

  it("a bad choice is a 400 naming the field (by its label in a browser)", async () => {
    const { w } = await setupAgent(h, {}, () => []);
    const res = await md(
      app,
      w,
      w.alice,
      "POST",
      "/u/alice/settings/notifications/actions/set_notifications",
      {
        approval: "carrier pigeon",
        question: "email",
        cost: "email",
        run_failed: "app",
      },
    );
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("`approval`");
    const browser = await login(app, w, w.alice);
    const form = await browser.post("/u/alice/settings/notifications/actions/set_notifications", {
      approval: "carrier pigeon",
      question: "email",
      cost: "email",
      run_failed: "app",
    });
    expect(form.statusCode).toBe(400);
    expect(form.body).toContain("Actions waiting for your approval");
  });
});
