// The disclosure rule on every surface an agent acts through (its token on the markdown API,
// MCP), every write the catalog has, notifications, and the safe defaults: new agents start
// restrictive, and workspace admins keep actions for people.
import { readdirSync, readFileSync } from "node:fs";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { agentConfig, DEFAULT_CAPABILITIES } from "../src/services/agents/core/settings.ts";
import { GRANTABLE } from "../src/services/agents/policy/capabilities.ts";
import { actions } from "../src/services/catalog/catalog.ts";
import { act, buildTestApp, login, md, testPrisma } from "./helpers/app.ts";
import { permissions } from "./helpers/approvals.ts";

/** A set_human_only body: these actions kept for people. */
const humanOnly = (on: string[]) => Object.fromEntries(GRANTABLE.map((a) => [a, on.includes(a)]));

import { mcpClient } from "./helpers/mcp.ts";
import { SECRET, trustWorld } from "./helpers/trust.ts";

let app: FastifyInstance;
const clients: Client[] = [];
beforeAll(async () => {
  app = await buildTestApp();
  await app.listen({ port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await app.close();
});

describe("every write is labelled", () => {
  it("each action of the catalog that writes says who can read what it writes", () => {
    const unlabelled = actions.filter((a) => a.writes && !a.audience).map((a) => a.name);
    expect(unlabelled).toEqual([]);
    expect(actions.filter((a) => a.writes).length).toBeGreaterThan(50);
  });
});

describe("an agent's token", () => {
  it("after reading the vault, a note, a decision, an option and a commitment in General each wait; the vault itself does not", async () => {
    const t = await trustWorld();
    const decision = await act(t.w, t.w.alice, "/studios/general", "create_decision", { question: "Where?" });
    const scout = { ...t.w.alice, ...t.scout };
    expect((await md(app, t.w, scout, "GET", t.secretPath)).body).toContain(SECRET);
    const token = await testPrisma().apiToken.findFirstOrThrow({ where: { userId: t.scout.id } });
    expect(token.label).toEqual([{ studio: t.vault.id }]);
    const writes: [string, string, Record<string, unknown>, string][] = [
      ["/studios/general", "create_note", { text: SECRET }, "note"],
      ["/studios/general", "create_decision", { question: SECRET }, "decision"],
      [decision.location, "add_option", { title: SECRET.slice(0, 60) }, "option"],
      [
        "/studios/general",
        "create_commitment",
        { title: SECRET.slice(0, 60), critical_mass: 2 },
        "commitment",
      ],
    ];
    for (const [page, action, body, what] of writes) {
      const res = await md(app, t.w, scout, "POST", `${page}/actions/${action}`, body);
      expect(res.statusCode, action).toBe(202);
      const p = await testPrisma().agentPendingAction.findFirstOrThrow({
        where: { agentId: t.scout.id, actionName: action },
      });
      expect(p.disclosure).toMatch(
        new RegExp(`^This ${what} in General would show 1 person \\(Bob Brown \\(@bob\\)\\)`),
      );
    }
    const inside = await md(app, t.w, scout, "POST", "/studios/vault/actions/create_note", {
      text: "a follow-up",
    });
    expect(inside.statusCode).toBe(201);
  });

  it("through MCP: read_page of the vault, then add_comment in General, is queued saying what it would disclose", async () => {
    const t = await trustWorld();
    const c = await mcpClient(app, t.w, t.scout.token);
    clients.push(c);
    const call = (name: string, args: Record<string, unknown>) =>
      c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
    const text = (r: CallToolResult) => r.content.map((x) => (x.type === "text" ? x.text : "")).join("");
    expect(text(await call("read_page", { path: t.secretPath }))).toContain(SECRET);
    const res = text(await call("add_comment", { page: t.bobNotePath, text: SECRET }));
    expect(res).toMatch(/Queued for approval as #\w+: This comment in General would show 1 person/);
    // The disclosure is a sentence; the one after it starts with a capital.
    expect(res).toMatch(/can read\. Your owner decides whether it may\./);
    expect((await testPrisma().comment.findMany({ where: { authorId: t.scout.id } })).length).toBe(0);
  });
});

describe("notifications", () => {
  it("quote a comment only to people who can read it where it was written", async () => {
    const t = await trustWorld();
    const db = testPrisma();
    // bob wrote in the vault, then left it; the agent answers there and names him.
    await db.studioMember.create({
      data: { studioId: t.vault.id, userId: t.w.bob.id, tenantId: t.w.tenant.id },
    });
    const bobs = await act(t.w, t.w.bob, "/studios/vault", "create_note", {
      title: "Left",
      text: "my vault note",
    });
    await db.studioMember.delete({
      where: { studioId_userId: { studioId: t.vault.id, userId: t.w.bob.id } },
    });
    const scout = { ...t.w.alice, ...t.scout };
    await md(app, t.w, scout, "GET", t.secretPath);
    const res = await md(app, t.w, scout, "POST", `${bobs.location}/actions/add_comment`, {
      text: `@bob @alice ${SECRET}`,
    });
    expect(res.statusCode).toBe(201);
    const { notifyForEvent } = await import("../src/services/notifications.ts");
    const e = await db.event.findFirstOrThrow({ where: { actorId: t.scout.id, type: "comment.created" } });
    await notifyForEvent(db, e.id);
    // Bob wrote the note but cannot read the vault now: no comment notice quotes it to him. And
    // @alice, in an agent's text outside any run she woke, is a quote: it notifies nobody.
    expect(await db.notification.findMany({ where: { eventId: e.id } })).toEqual([]);
    // The control: back in the vault, bob hears of the agent's next comment on his note.
    await db.studioMember.create({
      data: { studioId: t.vault.id, userId: t.w.bob.id, tenantId: t.w.tenant.id },
    });
    await md(app, t.w, scout, "POST", `${bobs.location}/actions/add_comment`, { text: "Again." });
    const again = await db.event.findFirstOrThrow({
      where: { actorId: t.scout.id, type: "comment.created", id: { not: e.id } },
    });
    await notifyForEvent(db, again.id);
    const got = await db.notification.findMany({ where: { eventId: again.id } });
    expect(got.map((n) => [n.userId, n.kind])).toEqual([[t.w.bob.id, "comment"]]);
  });
});

describe("safe defaults", () => {
  it("a new agent may read, comment and confirm reads; the rest waits for its owner to grant it", async () => {
    const t = await trustWorld();
    await act(t.w, t.w.alice, "/subagents", "create_subagent", { name: "Newbie", handle: "newbie" });
    const row = await testPrisma().user.findFirstOrThrow({
      where: { tenantId: t.w.tenant.id, handle: "newbie" },
    });
    expect(agentConfig(row).capabilities).toEqual([...DEFAULT_CAPABILITIES]);
    const page = await md(app, t.w, t.w.alice, "GET", "/subagents/newbie");
    expect(page.body).toContain("Besides reading, it may: comment and reply, confirm it read a note.");
    const form = await md(app, t.w, t.w.alice, "GET", "/subagents");
    expect(form.body).toContain("It starts able to read and comment. Grant more under **Capabilities**");
  });

  it("agents made before keep every content action (the migration)", async () => {
    const t = await trustWorld();
    const db = testPrisma();
    const old = await db.user.create({
      data: {
        id: newId(),
        tenantId: t.w.tenant.id,
        handle: "oldie",
        name: "Oldie",
        kind: "subagent",
        parentId: t.w.alice.id,
        agentConfig: { max_steps: 5 },
      },
    });
    const dir = readdirSync("prisma/migrations").find((d) => d.endsWith("_agents_start_restrictive"))!;
    const sql = readFileSync(`prisma/migrations/${dir}/migration.sql`, "utf8");
    await db.$executeRawUnsafe(
      sql.replace(`WHERE "kind" = 'subagent'`, `WHERE "id" = '${old.id}' AND "kind" = 'subagent'`),
    );
    const after = await db.user.findUniqueOrThrow({ where: { id: old.id } });
    expect(agentConfig(after).capabilities).toEqual([...GRANTABLE]);
    expect(agentConfig(after).max_steps).toBe(5);
  });

  it("workspace admins keep actions for people: no agent may use or be granted them, and the capability page greys them out", async () => {
    const t = await trustWorld();
    const db = testPrisma();
    await db.user.update({ where: { id: t.w.alice.id }, data: { tenantAdmin: true } });
    const byBob = await md(
      app,
      t.w,
      t.w.bob,
      "POST",
      "/settings/agents/actions/set_human_only",
      humanOnly(["create_note"]),
    );
    expect(byBob.statusCode).toBe(403);
    const set = await md(
      app,
      t.w,
      t.w.alice,
      "POST",
      "/settings/agents/actions/set_human_only",
      humanOnly(["create_note"]),
    );
    expect(set.statusCode).toBe(200);
    const scout = { ...t.w.alice, ...t.scout };
    const refused = await md(app, t.w, scout, "POST", "/studios/general/actions/create_note", { text: "hi" });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toContain("human-only in this workspace");
    const grant = await md(
      app,
      t.w,
      t.w.alice,
      "POST",
      "/subagents/scout/settings/actions/set_capabilities",
      permissions(["create_note", "add_comment"]),
    );
    expect(grant.statusCode).toBe(400);
    expect(grant.body).toContain("`create_note`: human-only in this workspace");
    const browser = await login(app, t.w, t.w.alice);
    const html = await browser.get("/subagents/scout/settings");
    expect(html.body).toMatch(/<select disabled id="[^"]*-create_note" name="create_note"/);
    expect(html.body).toContain("human-only in this workspace: its admins keep it for people");
  });
});
