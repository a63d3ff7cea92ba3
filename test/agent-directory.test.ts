// Who can I ask? The agent directory (/agents), an agent's profile and the composers'
// @-autocomplete (/mentionable, /mentionable.json) list the agents a person may ask and the
// people they may mention — what each agent does, where it works, who manages it, how to wake
// it — through the one rule of who wakes whom (askableSql): nothing of a studio they are not in.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { createApiToken } from "../src/services/tokens.ts";
import { makeAgent } from "./helpers/agents.ts";
import { act, buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

const db = testPrisma;
const DOES = "Finds facts in our notes and answers in the thread";

/** General has alice's scout and its own keeper (members may run it); alice's vault has its vaultie. */
async function directoryWorld() {
  const w = await makeWorld();
  const scout = await makeAgent(w, w.alice, "scout");
  await act(w, w.alice, "/subagents/scout", "update_subagent", { description: DOES });
  const vault = await db().studio.create({
    data: {
      id: newId(),
      tenantId: w.tenant.id,
      handle: "vault",
      name: "Vault",
      inviteCode: newId(10),
      createdById: w.alice.id,
      members: { create: [{ userId: w.alice.id, tenantId: w.tenant.id, role: "admin" }] },
    },
  });
  const studioAgent = async (handle: string, studioId: string, config: Record<string, unknown> = {}) => {
    const agent = await db().user.create({
      data: {
        id: newId(),
        tenantId: w.tenant.id,
        handle,
        name: `Agent ${handle}`,
        kind: "subagent",
        ownerStudioId: studioId,
        agentConfig: { identity_prompt: "", max_steps: 5, ...config },
      },
    });
    await db().studioMember.create({ data: { studioId, userId: agent.id, tenantId: w.tenant.id } });
    return agent;
  };
  await studioAgent("keeper", w.studio.id, { members_may_run: true, description: "Keeps the minutes" });
  await studioAgent("vaultie", vault.id, { description: "Guards the vault's secrets" });
  return { w, scout };
}

const page = async (w: World, who: World["alice"], path: string) => {
  const res = await md(app, w, who, "GET", path);
  expect(res.statusCode).toBe(200);
  return res.body;
};

describe("the agent directory", () => {
  it("lists the agents a person may ask: what each does, where it works, who manages it, how to ask", async () => {
    const { w } = await directoryWorld();
    const bob = await page(w, w.bob, "/agents");
    expect(bob).toContain("## Agent scout (`@scout`)");
    expect(bob).toContain(`**What it does:** ${DOES}`);
    expect(bob).toContain(
      "Works in [General \\(general\\)](/studios/general). Managed by Alice Adams ([@alice](/u/alice)).",
    );
    expect(bob).toContain("**To ask it:** write `@scout` in a note, a comment or a decision in that studio");
    // Bob does not manage scout: no run form of scout's for him. Keeper's studio lets members run it.
    expect(bob).not.toContain("/subagents/scout/run");
    expect(bob).toContain("## Agent keeper (`@keeper`)");
    expect(bob).toContain("Managed by the admins of [General \\(general\\)](/studios/general).");
    expect(bob).toContain("[its run form](/subagents/keeper/run)");
    // The vault's agent, and the vault's name, exist nowhere for bob.
    expect(bob).not.toMatch(/vaultie|Vault|Guards/);
    const alice = await page(w, w.alice, "/agents");
    expect(alice).toContain("Managed by Alice Adams ([@alice](/u/alice)) (you).");
    expect(alice).toContain("[its run form](/subagents/scout/run)");
    expect(alice).toContain("## Agent vaultie (`@vaultie`)");
    expect(alice).toContain("Works in [Vault \\(vault\\)](/studios/vault).");
    // Carol is in no studio: nobody to ask, and where to start.
    expect(await page(w, w.carol, "/agents")).toContain("No agent works in your studios yet.");
  });

  it("an agent's profile says what it does and how to ask; someone it cannot hear is told so", async () => {
    const { w, scout } = await directoryWorld();
    expect(await page(w, { ...w.alice, ...scout }, "/whoami")).toContain(`**What it does:** ${DOES}`);
    const profile = await page(w, w.bob, "/u/scout");
    expect(profile).toContain(`**What it does:** ${DOES}`);
    expect(profile).toContain("**To ask it:** write `@scout`");
    // Carol shares no studio with scout: she sees the agent, not a way to wake it.
    const carol = await page(w, w.carol, "/u/scout");
    expect(carol).toContain(`**What it does:** ${DOES}`);
    expect(carol).toContain("**To ask it:** you cannot: it works in no studio you are in.");
  });

  it("on bob's /subagents every link opens for bob: a studio's agent links to its profile, not a 403", async () => {
    const { w } = await directoryWorld();
    const list = await page(w, w.bob, "/subagents");
    expect(list).toContain("[Agent keeper](/u/keeper) · [its run form](/subagents/keeper/run)");
    const links = [...list.matchAll(/\]\((\/[^)\s]*)\)/g)].map((match) => match[1]!);
    expect(links.length).toBeGreaterThan(3);
    const browser = await login(app, w, w.bob);
    for (const path of new Set(links))
      expect([path, (await browser.get(path)).statusCode]).toEqual([path, 200]);
  });
});

describe("@-autocomplete", () => {
  it("offers, by the start of a handle or a name, the people and agents the writer may mention there", async () => {
    const { w, scout } = await directoryWorld();
    const json = async (who: World["alice"], query: string) => {
      const res = await app.inject({
        method: "GET",
        url: `/mentionable.json?${query}`,
        headers: { host: w.host, accept: "application/json", authorization: `Bearer ${who.token}` },
      });
      return { status: res.statusCode, type: res.headers["content-type"], body: res.json() };
    };
    const sc = await json(w.bob, "q=sc&studio=general");
    expect(sc.type).toMatch(/^application\/json/);
    expect(sc.body).toEqual({
      mentionable: [{ handle: "scout", name: "Agent scout", kind: "agent", description: DOES }],
    });
    // By name as well as handle; the writer themself is never offered.
    expect((await json(w.bob, "q=Ali&studio=general")).body.mentionable).toEqual([
      { handle: "alice", name: "Alice Adams", kind: "person", description: "" },
    ]);
    expect((await json(w.bob, "q=@b")).body.mentionable).toEqual([]);
    // Carol is not in General, vaultie works only in the vault: neither is offered to bob.
    const all = (await json(w.bob, "q=&studio=general")).body.mentionable.map(
      (m: { handle: string }) => m.handle,
    );
    expect(all.sort()).toEqual(["alice", "keeper", "scout"]);
    expect((await json(w.bob, "q=c")).body.mentionable).toEqual([]);
    // A studio bob is not in answers as every page does: 404, naming nothing.
    expect((await json(w.bob, "q=v&studio=vault")).status).toBe(404);
    expect(
      (await json(w.alice, "q=v&studio=vault")).body.mentionable.map((m: { handle: string }) => m.handle),
    ).toEqual(["vaultie"]);
    // An agent reads the page (through the registry, its label narrowing), never the script's list.
    const { token } = await createApiToken(db(), w.tenant.id, scout.id, "probe", { scope: "read" });
    expect((await json({ ...w.bob, token }, "q=&studio=general")).status).toBe(404);
    // The same list as a page, for markdown readers.
    const listed = await page(w, w.bob, "/mentionable?q=sc&studio=general");
    expect(listed).toContain("`@scout` Agent scout ([@scout](/u/scout)) · AI agent — Finds facts");
  });

  it("every composer asks for it by its studio; the form works without the script", async () => {
    const { w } = await directoryWorld();
    const note = await act(w, w.alice, "/studios/general", "create_note", { title: "Plan", text: "Go" });
    const browser = await login(app, w, w.bob);
    const html = (await browser.get(note.location)).body;
    expect(html).toContain('<script src="/assets/mentions.js" defer></script>');
    // The comment box, a reply's, and the studio's note and decision forms all take mentions.
    const composers = [...html.matchAll(/<textarea[^>]*name="(\w+)"[^>]*data-mentions="([^"]+)"/g)];
    expect(composers.length).toBeGreaterThan(0);
    for (const [, , url] of composers) expect(url).toBe("/mentionable.json?studio=general");
    const studio = (await browser.get("/studios/general")).body;
    expect(studio).toMatch(
      /<textarea[^>]*name="text"[^>]*data-mentions="\/mentionable\.json\?studio=general"/,
    );
    expect(studio).toMatch(/<textarea[^>]*name="description"[^>]*data-mentions=/);
    // Not a field where a handle means nothing: an agent's identity prompt.
    await makeAgent(w, w.bob, "helper");
    const settings = (await browser.get("/subagents/helper")).body;
    expect(settings).not.toMatch(/name="identity_prompt"[^>]*data-mentions/);
    // Without JavaScript the comment form posts as ever, the handle typed in full.
    const posted = await browser.post(note.location, { _action: "add_comment", text: "@scout what next?" });
    expect(posted.statusCode).toBe(303);
    expect(await db().comment.count({ where: { authorId: w.bob.id, text: "@scout what next?" } })).toBe(1);
  });
});
