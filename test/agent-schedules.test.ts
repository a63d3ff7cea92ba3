// Schedules on /subagents/:handle/schedules: adding and listing them in both formats,
// bad input (a 400 naming the problem), next fire times in the schedule's zone (DST
// included), editing, pausing and removing, who may see them, and firing: one run per
// slot however many sweeps race, catch-up once, a paused agent's skipped run, nothing
// from a disabled schedule or an archived agent. No worker runs in this file: sweeps are
// called directly (test/schedule-workers.test.ts runs real worker processes).
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../src/db/prisma.ts";
import { isTransient } from "../src/lib/transient.ts";
import { fireDueSchedules } from "../src/services/agents/automations/schedule-firing.ts";
import { checkSchedule, nextSlot } from "../src/services/agents/automations/schedules.ts";
import { makeAgent, runsOf } from "./helpers/agents.ts";
import { actionNames, buildTestApp, login, makeWorld, md, testPrisma, waitFor } from "./helpers/app.ts";
import { issuesOf } from "./helpers/bad-input.ts";
import { namedPrisma, terminateBackends } from "./helpers/faults.ts";
import { addSchedule, makeDue, schedulesPath, scheduleWorld } from "./helpers/schedules.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app.close();
});

const PAGE = schedulesPath("scout");
const ACTIONS = ["add_schedule", "update_schedule", "pause_schedule", "resume_schedule", "remove_schedule"];
const db = () => testPrisma();

describe("adding and listing", () => {
  it("markdown: adds a weekday 9:00 Paris schedule; the page lists it with its next fire time in the zone and UTC", async () => {
    const { w, post } = await scheduleWorld(app);
    const res = await post("add_schedule", {
      cron: "0 9 * * 1-5",
      time_zone: "europe/paris",
      task: "Summarise yesterday's notes in #general",
    });
    expect(res.statusCode).toBe(201);
    const id = String(res.headers.location).split("#")[1]!;
    expect(res.headers.location).toBe(`${PAGE}#${id}`);
    const s = await db().agentSchedule.findUniqueOrThrow({ where: { id } });
    expect(s).toMatchObject({
      cron: "0 9 * * 1-5",
      timeZone: "Europe/Paris",
      enabled: true,
      createdById: w.alice.id,
    });
    expect(s.tenantId).toBe(w.tenant.id);
    // 9:00 in Paris is 07:00 or 08:00 UTC, on a weekday, in the future.
    expect(s.nextFireAt!.getTime()).toBeGreaterThan(Date.now());
    expect([7, 8]).toContain(s.nextFireAt!.getUTCHours());
    expect(s.nextFireAt!.getUTCMinutes()).toBe(0);
    const page = (await md(app, w, w.alice, "GET", PAGE)).body;
    expect(page).toContain("### `0 9 * * 1-5` in Europe/Paris");
    expect(page).toMatch(
      /\*\*Next fire time:\*\* (Mon|Tue|Wed|Thu|Fri) \d+ \w+ \d{4} 09:00 Europe\/Paris \(\d{4}-\d\d-\d\d 0[78]:00 UTC\)/,
    );
    expect(page).toContain("**Last run:** none yet");
    expect(page).toContain("> Summarise yesterday's notes in #general");
    expect(page).toContain(`Schedule \`${id}\``);
    expect(actionNames(page)).toEqual(ACTIONS);
  });

  it("HTML: the form adds a schedule (time zone defaults to UTC); each is an anchor with its own buttons", async () => {
    const { w } = await scheduleWorld(app);
    const browser = await login(app, w, w.alice);
    const res = await browser.post(`${PAGE}/actions/add_schedule`, {
      cron: "30 6 * * *",
      time_zone: "",
      task: "Morning digest",
    });
    expect(res.statusCode).toBe(303);
    const [s] = await db().agentSchedule.findMany({ where: { tenantId: w.tenant.id } });
    expect(s).toMatchObject({ cron: "30 6 * * *", timeZone: "UTC" });
    const html = (await browser.get(PAGE)).body;
    expect(html).toContain(`<h3 id="${s!.id}">`);
    expect(html).toContain(`name="id" value="${s!.id}"`);
    expect(html).toContain('data-action="pause_schedule"');
    expect(html).toContain('data-action="remove_schedule"');
    // The schedule is chosen by its button, never typed: no panel form asks for an id.
    expect(html).not.toMatch(/<input type="text"[^>]*name="id"/);
  });

  it("the agent's page shows each schedule's next fire time and last run, linking to the schedules page", async () => {
    const { w } = await scheduleWorld(app);
    const s = await addSchedule(app, w, "scout", {
      cron: "0 9 * * *",
      time_zone: "Asia/Tokyo",
      task: "Digest",
    });
    const page = (await md(app, w, w.alice, "GET", "/subagents/scout")).body;
    expect(page).toContain("## Schedules");
    expect(page).toContain(`[0 9 \\* \\* \\* \\(Asia/Tokyo\\)](${PAGE}#${s.id}) · next: `);
    expect(page).toMatch(/09:00 Asia\/Tokyo \(\d{4}-\d\d-\d\d 00:00 UTC\) · last run: none yet/);
  });
});

describe("bad input: a 400 naming the problem", () => {
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ["not cron", { cron: "every day", task: "x" }, "cron", /not a cron expression/],
    ["out of range", { cron: "61 * * * *", task: "x" }, "cron", /not a cron expression/],
    ["seconds field", { cron: "* * * * * *", task: "x" }, "cron", /minimum interval is one minute/],
    ["every 30 s", { cron: "*/30 * * * * *", task: "x" }, "cron", /minimum interval is one minute/],
    ["never fires", { cron: "0 0 31 2 *", task: "x" }, "cron", /never fires/],
    ["bad zone", { cron: "0 9 * * *", time_zone: "Mars/Olympus", task: "x" }, "time_zone", /not a time zone/],
    ["offset zone", { cron: "0 9 * * *", time_zone: "+01:00", task: "x" }, "time_zone", /not a time zone/],
    ["empty task", { cron: "0 9 * * *", task: "  " }, "task", /must not be empty/],
  ];
  it.each(cases)("%s", async (_label, body, field, message) => {
    const { w, post } = await scheduleWorld(app);
    const res = await post("add_schedule", body);
    expect(res.statusCode).toBe(400);
    expect(issuesOf(res.body)[field]).toMatch(message);
    expect(await db().agentSchedule.count({ where: { tenantId: w.tenant.id } })).toBe(0);
  });

  it("HTML: the form comes back with the problem named", async () => {
    const { w } = await scheduleWorld(app);
    const browser = await login(app, w, w.alice);
    const res = await browser.post(`${PAGE}/actions/add_schedule`, {
      cron: "* * * * * *",
      time_zone: "UTC",
      task: "x",
    });
    expect(res.statusCode).toBe(400);
    expect(issuesOf(res.body).cron).toMatch(/minimum interval is one minute/);
  });

  it("one value in a seconds field is fine (once a minute at most)", () => {
    expect(checkSchedule("15 * * * * *", "UTC").cron).toBe("15 * * * * *");
  });
});

describe("next fire time in the schedule's zone", () => {
  it("across the spring-forward night in Paris: 9:00 stays 9:00 local (08:00 UTC, then 07:00 UTC)", () => {
    const before = nextSlot("0 9 * * *", "Europe/Paris", new Date("2026-03-28T10:00:00Z"));
    expect(before!.toISOString()).toBe("2026-03-29T07:00:00.000Z");
    const winter = nextSlot("0 9 * * *", "Europe/Paris", new Date("2026-03-27T10:00:00Z"));
    expect(winter!.toISOString()).toBe("2026-03-28T08:00:00.000Z");
  });

  it("New York weekdays at 9:00 are 14:00 UTC in winter, 13:00 UTC in summer", () => {
    expect(nextSlot("0 9 * * 1-5", "America/New_York", new Date("2026-01-10T00:00:00Z"))!.toISOString()).toBe(
      "2026-01-12T14:00:00.000Z",
    );
    expect(nextSlot("0 9 * * 1-5", "America/New_York", new Date("2026-07-11T00:00:00Z"))!.toISOString()).toBe(
      "2026-07-13T13:00:00.000Z",
    );
  });
});

describe("editing, pausing, removing", () => {
  it("update recomputes the next fire time; pause clears it; resume sets it again; remove deletes", async () => {
    const { w, post } = await scheduleWorld(app);
    const s = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "Digest" });
    const upd = await post("update_schedule", {
      schedule: s.id,
      cron: "0 18 * * *",
      time_zone: "Asia/Tokyo",
    });
    expect(upd.statusCode).toBe(200);
    let row = await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } });
    expect(row).toMatchObject({ cron: "0 18 * * *", timeZone: "Asia/Tokyo", task: "Digest" });
    expect(row.nextFireAt!.getUTCHours()).toBe(9);
    const bad = await post("update_schedule", { id: s.id, cron: "* * * * * *" });
    expect(bad.statusCode).toBe(400);
    expect((await post("pause_schedule", { id: s.id })).statusCode).toBe(200);
    row = await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } });
    expect(row).toMatchObject({ enabled: false, nextFireAt: null });
    expect((await md(app, w, w.alice, "GET", PAGE)).body).toContain("**Next fire time:** paused");
    expect((await post("resume_schedule", { id: s.id })).statusCode).toBe(200);
    row = await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } });
    expect(row.enabled).toBe(true);
    expect(row.nextFireAt!.getTime()).toBeGreaterThan(Date.now());
    const other = await addSchedule(app, w, "scout", { cron: "0 7 * * *", task: "Other" });
    expect((await post("remove_schedule", { id: s.id })).statusCode).toBe(200);
    expect(await db().agentSchedule.count({ where: { id: s.id } })).toBe(0);
    // Gone: a 404, whether or not another schedule is there.
    expect((await post("pause_schedule", { id: s.id })).statusCode).toBe(404);
    expect((await post("remove_schedule", { id: other.id })).statusCode).toBe(200);
    const none = await post("pause_schedule", { id: other.id });
    expect(none.statusCode).toBe(404);
  });

  it("HTML: the Pause button beside a schedule pauses that one", async () => {
    const { w } = await scheduleWorld(app);
    const a = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "A" });
    const b = await addSchedule(app, w, "scout", { cron: "0 10 * * *", task: "B" });
    const browser = await login(app, w, w.alice);
    expect((await browser.post(`${PAGE}/actions/pause_schedule`, { id: b.id })).statusCode).toBe(303);
    const rows = await db().agentSchedule.findMany({
      where: { id: { in: [a.id, b.id] } },
      orderBy: { task: "asc" },
    });
    expect(rows.map((r) => r.enabled)).toEqual([true, false]);
  });
});

describe("who may see and manage schedules", () => {
  it("bob, carol and the agent itself: 404 on the page and every action; another agent's schedule id: 404", async () => {
    const { w, agent, post } = await scheduleWorld(app);
    const s = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "Digest" });
    const bodies: Record<string, Record<string, unknown>> = {
      add_schedule: { cron: "0 9 * * *", task: "x" },
      update_schedule: { id: s.id, task: "hijacked" },
      pause_schedule: { id: s.id },
      resume_schedule: { id: s.id },
      remove_schedule: { id: s.id },
    };
    for (const who of [w.bob, w.carol, agent]) {
      expect((await md(app, w, who, "GET", PAGE)).statusCode).toBe(404);
      for (const a of ACTIONS) expect((await post(a, bodies[a]!, who)).statusCode).toBe(404);
    }
    // Bob's own agent's page with alice's schedule id: not found under bob's agent.
    await makeAgent(w, w.bob, "bobbot");
    await md(app, w, w.bob, "POST", "/subagents/bobbot/schedules/actions/add_schedule", {
      cron: "0 8 * * *",
      task: "Bob's",
    });
    const cross = await md(app, w, w.bob, "POST", "/subagents/bobbot/schedules/actions/remove_schedule", {
      schedule: s.id,
    });
    expect(cross.statusCode).toBe(404);
    const row = await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } });
    expect(row).toMatchObject({ task: "Digest", enabled: true });
    const other = await makeWorld("o");
    expect((await md(app, other, other.alice, "GET", PAGE)).statusCode).toBe(404);
  });
});

describe("firing (sweeps called directly)", () => {
  it("a due schedule fires exactly once however many sweeps race for it; the run says which slot and who woke it", async () => {
    const { w, agent } = await scheduleWorld(app);
    const s = await addSchedule(app, w, "scout", {
      cron: "0 9 * * *",
      time_zone: "Europe/Paris",
      task: "Digest",
    });
    await makeDue(s.id, 1000);
    const slot = (await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } })).nextFireAt!;
    const results = await Promise.all(Array.from({ length: 6 }, () => fireDueSchedules(db())));
    expect(results.reduce((n, r) => n + r.fired, 0)).toBe(1);
    const runs = await runsOf(agent.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      status: "queued",
      triggerKind: "schedule",
      triggerRef: s.id,
      triggerEventId: `schedule:${s.id}:${slot.toISOString()}`,
      initiatedById: w.alice.id,
    });
    expect(runs[0]!.task).toMatch(
      /^Digest\n\nScheduled run for \w{3} \d+ \w{3} \d{4} \d\d:\d\d Europe\/Paris\.$/,
    );
    const after = await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } });
    expect(after.nextFireAt!.getTime()).toBeGreaterThan(Date.now());
    expect(after).toMatchObject({ lastFiredAt: slot, lastRunId: runs[0]!.id });
    const page = (await md(app, w, w.alice, "GET", PAGE)).body;
    expect(page).toContain(
      `**Last run:** [Run ${runs[0]!.id}](/subagents/scout/runs/${runs[0]!.id}) (**queued**)`,
    );
  });

  it("catch-up after downtime: several missed slots fire once, and the next fire time moves into the future", async () => {
    const { w, agent } = await scheduleWorld(app);
    const s = await addSchedule(app, w, "scout", { cron: "*/5 * * * *", task: "Tick" });
    await makeDue(s.id, 47 * 60_000);
    await fireDueSchedules(db());
    await fireDueSchedules(db());
    expect(await runsOf(agent.id)).toHaveLength(1);
    const after = await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } });
    expect(after.nextFireAt!.getTime()).toBeGreaterThan(Date.now());
    expect(after.nextFireAt!.getTime() - Date.now()).toBeLessThanOrEqual(5 * 60_000);
  });

  it("a paused agent's slot is recorded as a skipped run (the schedule still advances)", async () => {
    const { w, agent } = await scheduleWorld(app);
    await md(app, w, w.alice, "POST", "/subagents/scout/actions/pause_subagent", { reason: "holiday" });
    const s = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "Digest" });
    await makeDue(s.id, 1000);
    await fireDueSchedules(db());
    const runs = await runsOf(agent.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      status: "skipped",
      stopReason: "paused",
      triggerKind: "schedule",
      triggerRef: s.id,
    });
    const after = await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } });
    expect(after.lastRunId).toBe(runs[0]!.id);
    expect(after.nextFireAt!.getTime()).toBeGreaterThan(Date.now());
    // Its owner hears of the slot it missed, with the run to retry.
    const told = await db().notification.findMany({ where: { actorId: agent.id } });
    expect(told.map((n) => [n.userId, n.path, n.excerpt])).toEqual([
      [
        w.alice.id,
        `/subagents/scout/runs/${runs[0]!.id}`,
        "did not answer your scheduled run: it is paused. Its owner can resume it on its page, then retry.",
      ],
    ]);
  });

  it("a disabled schedule fires nothing, and neither does an archived agent's", async () => {
    const { w, agent, post } = await scheduleWorld(app);
    const off = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "Off" });
    await post("pause_schedule", { id: off.id });
    await db().agentSchedule.update({
      where: { id: off.id },
      data: { nextFireAt: new Date(Date.now() - 1000) },
    });
    await fireDueSchedules(db());
    expect(await runsOf(agent.id)).toHaveLength(0);
    const on = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "On" });
    await db().user.update({ where: { id: agent.id }, data: { archivedAt: new Date() } });
    await makeDue(on.id, 1000);
    await fireDueSchedules(db());
    expect(await runsOf(agent.id)).toHaveLength(0);
    const after = await db().agentSchedule.findUniqueOrThrow({ where: { id: on.id } });
    expect(after.nextFireAt!.getTime()).toBeGreaterThan(Date.now());
  });

  it("a schedule another worker holds is skipped, not waited for, and fires once when it is free", async () => {
    const { w, agent } = await scheduleWorld(app);
    const s = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "Digest" });
    await makeDue(s.id, 1000);
    const { held, release } = await holdInTransaction(
      (tx) => tx.$queryRaw`SELECT id FROM agent_schedules WHERE id = ${s.id} FOR UPDATE`,
    );
    expect((await fireDueSchedules(db())).fired).toBe(0);
    release();
    await held;
    expect((await fireDueSchedules(db())).fired).toBe(1);
    expect(await runsOf(agent.id)).toHaveLength(1);
  });

  it("a connection dropped mid-fire writes nothing: the schedule stays due and the next sweep fires it once", async () => {
    const { w, agent } = await scheduleWorld(app);
    const s = await addSchedule(app, w, "scout", { cron: "0 9 * * *", task: "Digest" });
    await makeDue(s.id, 1000);
    const due = (await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } })).nextFireAt;
    // The agent's trigger lock held elsewhere: the sweep claims the schedule, then waits inside its transaction.
    const lock = `trigger:${agent.id}`;
    const { held, release } = await holdInTransaction(
      (tx) => tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${lock}))`,
    );
    const faulty = namedPrisma("sched-fault", 2);
    const sweep = fireDueSchedules(faulty).catch((err: unknown) => err);
    await waitFor(
      async () =>
        (
          await db().$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'sched-fault' AND wait_event_type = 'Lock'`
        )[0]!.n > 0,
    );
    await terminateBackends("sched-fault");
    const err = await sweep;
    expect(isTransient(err)).toBe(true);
    release();
    await held;
    await faulty.$disconnect();
    expect(await runsOf(agent.id)).toHaveLength(0);
    expect((await db().agentSchedule.findUniqueOrThrow({ where: { id: s.id } })).nextFireAt).toEqual(due);
    expect((await fireDueSchedules(db())).fired).toBe(1);
    expect(await runsOf(agent.id)).toHaveLength(1);
  });
});

/** Runs `lock` in a transaction of its own and keeps it open until released. */
async function holdInTransaction(lock: (tx: Db) => Promise<unknown>) {
  let release!: () => void;
  const until = new Promise<void>((r) => {
    release = r;
  });
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => {
    locked = r;
  });
  const held = db().$transaction(
    async (tx) => {
      await lock(tx);
      locked();
      await until;
    },
    { timeout: 20_000 },
  );
  await isLocked;
  return { held, release };
}
