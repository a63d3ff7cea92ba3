// Notifications that quiet down: read when their link is opened, all marked read at once,
// agents' mentions mutable (every agent, or one), and a handle an agent quotes ("Hi @alice!",
// "as @helper said") neither notifies nor wakes — except the person whose words woke its run,
// whom it is answering.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Event } from "../src/generated/prisma/client.ts";
import { dispatchTriggers } from "../src/services/agents/triggers/dispatcher.ts";
import { notifyForEvent } from "../src/services/notifications.ts";
import { readEvent } from "../src/services/subjects.ts";
import { type AgentEnv, makeAgent, startAgents, tool, waitForRun } from "./helpers/agents.ts";
import { act, buildTestApp, login, makeWorld, md, testPrisma, type World, waitFor } from "./helpers/app.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("notifications-quiet");
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;
const unread = (userId: string) => db().notification.count({ where: { userId, dismissedAt: null } });
const mentionsOf = (userId: string) => db().notification.count({ where: { userId, kind: "mention" } });

/** The comment.created event of the newest comment by `authorId`. */
async function commentEvent(authorId: string): Promise<Event> {
  const comment = await waitFor(
    () => db().comment.findFirst({ where: { authorId }, orderBy: { createdAt: "desc" } }),
    10_000,
  );
  return db().event.findFirstOrThrow({ where: { type: "comment.created", subjectId: comment.id } });
}

async function noteBy(w: World, who: World["alice"]) {
  const note = await act(w, who, "/studios/general", "create_note", { title: "Retro", text: "When?" });
  return note.location as string;
}

describe("a handle an agent writes", () => {
  it("notifies nobody and wakes no agent when the agent quotes it", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    const helper = await makeAgent(w, w.alice, "helper");
    const notePath = await noteBy(w, w.bob);
    // Scout writes with its own token, outside any run: nobody woke it, so nobody is answered.
    await act(w, scout, notePath, "add_comment", { text: "Hi @alice! As @helper said, all good." });
    const event = await commentEvent(scout.id);
    const read = (await readEvent(db(), event.id))!;
    // Whatever the worker did with it, doing it again here finds nobody to notify and nobody to wake.
    await notifyForEvent(db(), event.id);
    expect(await dispatchTriggers(db(), read.event, read.subject!)).toEqual([]);
    expect(await db().notification.count({ where: { userId: w.alice.id } })).toBe(0);
    expect(await db().subagentTaskRun.count({ where: { agentId: helper.id } })).toBe(0);
    // Bob wrote the note: a comment on it still reaches him, as a comment, not a mention.
    expect(await db().notification.findFirstOrThrow({ where: { userId: w.bob.id } })).toMatchObject({
      kind: "comment",
    });

    // A person's handles still reach and wake.
    // Every run finishes at once: helper (mentioned) and scout (it took part in the thread).
    env.llm.setScript(() => tool("finish", { message: "ok" }));
    await act(w, w.bob, notePath, "add_comment", { text: "@alice and @helper, have a look" });
    const bobs = await commentEvent(w.bob.id);
    await notifyForEvent(db(), bobs.id);
    expect(await mentionsOf(w.alice.id)).toBe(1);
    // Both ended before the next test's script is set: neither may take a step of it.
    await waitForRun(helper.id);
    await waitForRun(scout.id);
  });

  it("reaches the person its run answers, unless they muted it (every agent, or this one)", async () => {
    const w = await makeWorld();
    await makeAgent(w, w.alice, "scout");
    const notePath = await noteBy(w, w.alice);
    const mute = (agent: string) =>
      md(app, w, w.alice, "POST", "/u/alice/settings/notifications/actions/mute_agent_mentions", { agent });
    const unmute = (agent: string) =>
      md(app, w, w.alice, "POST", "/u/alice/settings/notifications/actions/unmute_agent_mentions", { agent });
    expect((await mute("all")).body).toContain("no agent's mention notifies you");

    env.llm.setScript([
      tool("navigate", { path: notePath }),
      tool("execute_action", { action: "add_comment", params: { text: "Hi @alice! Friday suits." } }),
      tool("finish", { message: "Answered" }),
    ]);
    await act(w, w.alice, notePath, "add_comment", { text: "@scout which day suits?" });
    const scout = await db().user.findFirstOrThrow({ where: { tenantId: w.tenant.id, handle: "scout" } });
    expect((await waitForRun(scout.id)).status).toBe("completed");
    const reply = await commentEvent(scout.id);
    // Muted for every agent: nothing, however often the event is handled.
    expect(await notifyForEvent(db(), reply.id)).toBe(0);
    expect(await mentionsOf(w.alice.id)).toBe(0);
    // Muted for scout alone: still nothing.
    await unmute("all");
    const one = await mute("@scout");
    expect(one.statusCode).toBe(200);
    expect(one.body).toContain("Mentions by @scout muted");
    expect(await notifyForEvent(db(), reply.id)).toBe(0);
    const settings = (await md(app, w, w.alice, "GET", "/u/alice/settings/notifications")).body;
    expect(settings).toContain("Muted: @scout.");
    // Unmuted: the waker is answered, so the greeting reaches her.
    await unmute("scout");
    expect(await notifyForEvent(db(), reply.id)).toBe(1);
    expect(await mentionsOf(w.alice.id)).toBe(1);
  });
});

describe("muting", () => {
  it("names only agents that can mention you, by the field's label; people only", async () => {
    const w = await makeWorld();
    const scout = await makeAgent(w, w.alice, "scout");
    // An agent of carol's, in no studio bob is in: for bob it does not exist.
    const other = await makeWorld();
    await makeAgent(other, other.alice, "elsewhere");
    const url = "/u/bob/settings/notifications/actions/mute_agent_mentions";
    for (const agent of ["nobody", "elsewhere"]) {
      const refused = await md(app, w, w.bob, "POST", url, { agent });
      expect(refused.statusCode).toBe(400);
      expect(refused.body).toContain(`no agent @${agent} can mention you`);
    }
    expect((await md(app, w, w.bob, "POST", url, { agent: "scout" })).statusCode).toBe(200);
    expect((await db().user.findUniqueOrThrow({ where: { id: w.bob.id } })).mutedAgentIds).toEqual([
      scout.id,
    ]);
    // An agent never mutes anything for its people.
    const byAgent = await md(
      app,
      w,
      scout,
      "POST",
      "/u/scout/settings/notifications/actions/mute_agent_mentions",
      {
        agent: "all",
      },
    );
    expect(byAgent.statusCode).toBeGreaterThanOrEqual(400);
    expect((await db().user.findUniqueOrThrow({ where: { id: w.alice.id } })).muteAgentMentions).toBe(false);
  });
});

describe("read when opened", () => {
  it("opening a notification's link reads it; its page alone reads nothing; mark all read reads the rest", async () => {
    const w = await makeWorld();
    const first = await noteBy(w, w.alice);
    const second = await noteBy(w, w.alice);
    for (const path of [first, second]) {
      await act(w, w.alice, path, "add_comment", { text: "@bob can you look?" });
      await notifyForEvent(db(), (await commentEvent(w.alice.id)).id);
    }
    expect(await unread(w.bob.id)).toBe(2);
    const [one] = await db().notification.findMany({ where: { userId: w.bob.id, path: first } });
    const list = (await md(app, w, w.bob, "GET", "/notifications")).body;
    expect(list).toContain("2 unread notifications. Dismiss one by its id, or all at once.");
    const browser = await login(app, w, w.bob);
    // A page's GET stays safe: bob reading the note, in HTML or markdown, reads no notification.
    expect((await browser.get(first)).statusCode).toBe(200);
    expect((await md(app, w, w.bob, "GET", first)).statusCode).toBe(200);
    expect(await unread(w.bob.id)).toBe(2);
    // In his browser each notification links to its opener, which reads it and goes to the page.
    const page = (await browser.get("/notifications")).body;
    expect(page).toContain("2 unread notifications. Opening one marks it read.");
    expect(page).toContain(`href="/notifications/${one!.id}/open"`);
    // Alice, or bob's token, opening it reads nothing and learns nothing: 404.
    const alice = await login(app, w, w.alice);
    expect((await alice.get(`/notifications/${one!.id}/open`)).statusCode).toBe(404);
    expect((await md(app, w, w.bob, "GET", `/notifications/${one!.id}/open`)).statusCode).toBe(404);
    expect(await unread(w.bob.id)).toBe(2);
    const opened = await browser.get(`/notifications/${one!.id}/open`);
    expect(opened.statusCode).toBe(303);
    expect(opened.headers.location).toBe(first);
    expect(await unread(w.bob.id)).toBe(1);
    expect(
      await db().notification.count({ where: { userId: w.bob.id, path: first, dismissedAt: null } }),
    ).toBe(0);
    // Opened again (Back, a second tab): still the page, nothing else changes.
    expect((await browser.get(`/notifications/${one!.id}/open`)).headers.location).toBe(first);
    expect(await unread(w.bob.id)).toBe(1);
    const all = await md(app, w, w.bob, "POST", "/notifications/actions/dismiss_all", {});
    expect(all.body).toContain("**Marked 1 notification read**");
    expect(await unread(w.bob.id)).toBe(0);
  });
});
