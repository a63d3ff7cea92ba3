// Studios named twice ("General" and "General"): pickers and confirmations name each with its
// handle, and the irreversible transfer's question names its studio in full and who takes it.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../src/lib/ids.ts";
import { makeAgent } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, testPrisma } from "./helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(() => app.close());

describe("two studios with one name", () => {
  it("are told apart by handle in the agent's pickers and in the transfer's confirmation", async () => {
    const w = await makeWorld("names");
    const db = testPrisma();
    await db.studio.create({
      data: {
        id: newId(),
        tenantId: w.tenant.id,
        handle: "general-2",
        name: "General",
        inviteCode: newId(10),
        createdById: w.alice.id,
        members: { create: [{ userId: w.alice.id, tenantId: w.tenant.id, role: "admin" }] },
      },
    });
    // makeAgent puts it in the world's General (`general`).
    const scout = await makeAgent(w, w.alice, "scout");
    const browser = await login(app, w, w.alice);
    const page = (await browser.get("/subagents/scout")).body;
    // Add to studio: only the one it is not in, by its handle; give it to: both, each by handle.
    expect(page).toContain('<option value="general-2">General (general-2)</option>');
    expect(page).toContain('<option value="general">General (general)</option>');
    expect(page).not.toMatch(/<option value="general(-2)?">General<\/option>/);
    expect(page).toContain("Take out of General (general)");

    const asked = await browser.post("/subagents/scout", {
      _action: "transfer_subagent",
      studio: "general-2",
    });
    expect(asked.statusCode).toBe(200);
    expect(asked.body).toContain(
      "Give @scout to the studio General (general-2)? Its admin, Alice Adams (@alice), will manage it from then on.",
    );
    expect((await db.user.findUnique({ where: { id: scout.id } }))?.ownerStudioId).toBeNull();
  });
});
