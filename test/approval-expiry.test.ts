// Expiry is checked when it matters, not when the sweep runs: reviewing an action past its
// expiry is refused and marks it expired (its waiting run resumes as the sweep would have
// it), the executor never runs an approval given after the expiry, and one given before it
// still runs however late the worker gets to it. The maintenance sweep is held off for
// this whole file (a ten-minute interval), so nothing here can pass because it ran.
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXPIRED_UNREVIEWED, executeApproved } from "../src/services/agents/policy/approvals.ts";
import { registry } from "../src/services/catalog/catalog.ts";
import { type AgentEnv, makeAgent, startAgents } from "./helpers/agents.ts";
import { buildTestApp, login, makeWorld, md, testPrisma, type World } from "./helpers/app.ts";
import {
  type Harness,
  NOTE,
  notesBy,
  pendingRow,
  queued,
  resumed,
  review,
  waitPending,
} from "./helpers/approvals.ts";

let app: FastifyInstance;
let env: AgentEnv;
beforeAll(async () => {
  app = await buildTestApp();
  env = await startAgents("expiry", { SWEEP_INTERVAL_MS: "600000" });
});
afterAll(async () => {
  await env.close();
  await app.close();
});

const db = testPrisma;
const h: Harness = { app: () => app, env: () => env };
const ago = (ms: number) => new Date(Date.now() - ms);

/** A create_note @scout asked for with its own token (no run), its expiry a second gone and no sweep since. */
async function overdue(w: World, handle = "scout") {
  const scout = await makeAgent(w, w.alice, handle, { requires_approval: ["create_note"] });
  const res = await md(app, w, scout, "POST", "/studios/general/actions/create_note", NOTE);
  expect(res.statusCode).toBe(202);
  const p = await waitPending(scout.id);
  await db().agentPendingAction.update({ where: { id: p.id }, data: { expiresAt: ago(1000) } });
  expect((await pendingRow(p.id)).status).toBe("pending");
  return { scout, p };
}

describe("reviewing past the expiry, before any sweep", () => {
  it("approve: 409 saying it expired, nothing runs, and the waiting run resumes with “expired”", async () => {
    const { w, scout, run, p } = await queued(h, { approval_mode: "wait" });
    await db().agentPendingAction.update({ where: { id: p.id }, data: { expiresAt: ago(1000) } });
    expect((await pendingRow(p.id)).status).toBe("pending");
    const res = await review(app, w, w.alice, "approve_action", { id: p.id });
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain(`#${p.id} expired at`);
    expect(await pendingRow(p.id)).toMatchObject({ status: "expired", reviewedById: null, executedAt: null });
    const { run: done, prompts } = await resumed(h, w, scout.id);
    expect(done).toMatchObject({ id: run.id, status: "completed" });
    expect(prompts.at(-1)).toContain(`review of #${p.id} (create_note): expired — ${EXPIRED_UNREVIEWED}`);
    expect(await notesBy(scout.id)).toEqual([]);
    expect(await executeApproved(registry, db(), p.id)).toBeNull();
  });

  it("approve with edits and reject are refused the same way; the pages show it expired, with no forms", async () => {
    const w = await makeWorld();
    const edited = await overdue(w, "editor");
    const rejected = await overdue(w, "rejected");
    const page = (await md(app, w, w.alice, "GET", "/approvals")).body;
    expect(page).toContain("## Waiting for your review (0)");
    expect(page).toContain(
      `\`create_note\` by @${edited.scout.handle} on [the studio General](/studios/general) — **expired**`,
    );
    const detailUrl = `/subagents/${edited.scout.handle}/pending/${edited.p.id}`;
    expect((await md(app, w, w.alice, "GET", detailUrl)).body).toContain("· **expired**");
    const html = (await (await login(app, w, w.alice)).get(detailUrl)).body;
    expect(html).toContain('<strong class="status status-expired">expired</strong>');
    expect(html).not.toContain(`Approve #${edited.p.id}`);
    const tries = [
      review(app, w, w.alice, "approve_action", {
        id: edited.p.id,
        params: { text: "Edited" },
      }),
      review(app, w, w.alice, "reject_action", { id: rejected.p.id, reason: "Too late anyway" }),
    ];
    for (const res of await Promise.all(tries)) {
      expect(res.statusCode).toBe(409);
      expect(res.body).toContain("expired at");
    }
    for (const { scout, p } of [edited, rejected]) {
      expect(await pendingRow(p.id)).toMatchObject({
        status: "expired",
        editedParams: null,
        reviewNote: null,
      });
      expect(await notesBy(scout.id)).toEqual([]);
    }
  });
});

describe("executing", () => {
  it("an approval given after the expiry never runs: the executor marks it expired", async () => {
    const w = await makeWorld();
    const { scout, p } = await overdue(w);
    // As an older version (or a hand edit) could leave it: approved, but only after it expired.
    await db().agentPendingAction.update({
      where: { id: p.id },
      data: { status: "approved", reviewedById: w.alice.id, reviewedAt: new Date() },
    });
    expect(await executeApproved(registry, db(), p.id)).toMatchObject({ status: "expired" });
    expect(await pendingRow(p.id)).toMatchObject({ status: "expired", executedAt: null });
    expect(await notesBy(scout.id)).toEqual([]);
  });

  it("an approval given in time still runs when the worker gets to it after the expiry", async () => {
    const w = await makeWorld();
    const { scout, p } = await overdue(w);
    await db().agentPendingAction.update({
      where: { id: p.id },
      data: { status: "approved", reviewedById: w.alice.id, reviewedAt: ago(5000) },
    });
    expect(await executeApproved(registry, db(), p.id)).toMatchObject({ status: "executed" });
    expect(await notesBy(scout.id)).toHaveLength(1);
  });
});
