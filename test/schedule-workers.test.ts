import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeLlm, startFakeLlm } from "../src/dev/fake-llm.ts";
import { fireDueSchedules } from "../src/services/agents/automations/schedule-firing.ts";
import { sleep, userPrompt } from "./helpers/agent-scripts.ts";
import { runsOf, tool } from "./helpers/agents.ts";
import { buildTestApp, fileDatabaseUrl, md, testPrisma, waitFor } from "./helpers/app.ts";
import { addSchedule, makeDue, scheduleWorld } from "./helpers/schedules.ts";
import { endWorkers, spawnWorker } from "./helpers/workers.ts";

const prefix = `${inject("queuePrefix")}-sched`;
let app: FastifyInstance;
let llm: FakeLlm;

beforeAll(async () => {
  app = await buildTestApp();
  llm = await startFakeLlm({ script: () => tool("finish", { message: "Summarised." }) });
});

afterAll(async () => {
  await endWorkers(prefix);
  await llm?.close();
  await app?.close();
});

/**
 * Every five minutes, except in the next twelve: however slowly the test runs, no real slot
 * comes due while it counts the runs its own made-due slots fired. (Paris is whole hours off
 * UTC, so its minutes are UTC's.)
 */
function everyFiveMinutesButTheNextTwelve() {
  const minute = new Date().getUTCMinutes();
  const minutes = Array.from({ length: 12 }, (_, index) => index * 5).filter(
    (slot) => (slot - minute + 60) % 60 >= 12,
  );
  return `${minutes.join(",")} * * * *`;
}

describe("two worker processes, one database", () => {
  it("each slot yields one run, which completes and links back to its schedule; catch-up fires once", async () => {
    const { w, agent } = await scheduleWorld(app);
    const s = await addSchedule(app, w, "scout", {
      cron: everyFiveMinutesButTheNextTwelve(),
      time_zone: "Europe/Paris",
      task: "Summarise yesterday's notes in #general",
    });
    const workers = [0, 1].map(() =>
      spawnWorker({ databaseUrl: fileDatabaseUrl(), llmUrl: llm.url, prefix }),
    );
    await Promise.all(workers.map((x) => x.ready));
    // Down for most of an hour: several slots missed.
    await makeDue(s.id, 47 * 60_000);
    const run = await waitFor(
      async () => (await runsOf(agent.id)).find((r) => r.status === "completed"),
      20_000,
    );
    expect(run).toMatchObject({ triggerKind: "schedule", triggerRef: s.id, initiatedById: w.alice.id });
    expect(run.finalMessage).toBe("Summarised.");
    expect(run.task).toMatch(/Scheduled run for .* Europe\/Paris\.$/);
    // The model was told the task and which slot fired.
    expect(
      llm.requests.some((r) =>
        /Summarise yesterday's notes[\s\S]*Scheduled run for/.test(userPrompt(r.body)),
      ),
    ).toBe(true);
    // Several sweeps of both workers later, still one run, and the next slot is ahead.
    await sleep(2000);
    expect(await runsOf(agent.id)).toHaveLength(1);
    const after = await testPrisma().agentSchedule.findUniqueOrThrow({ where: { id: s.id } });
    expect(after.nextFireAt!.getTime()).toBeGreaterThan(Date.now());
    expect(after.lastRunId).toBe(run.id);

    // Another slot due: one more run, not two.
    await makeDue(s.id, 60_000);
    await waitFor(
      async () => (await runsOf(agent.id)).filter((r) => r.status === "completed").length === 2,
      20_000,
    );
    await sleep(1500);
    expect(await runsOf(agent.id)).toHaveLength(2);

    const page = (await md(app, w, w.alice, "GET", `/subagents/scout/runs/${run.id}`)).body;
    expect(page).toContain(`[schedule](/subagents/scout/schedules#${s.id})`);
    const list = (await md(app, w, w.alice, "GET", "/subagents/scout/schedules")).body;
    expect(list).toMatch(
      /\*\*Last run:\*\* \[Run \w+\]\(\/subagents\/scout\/runs\/\w+\) \(\*\*completed\*\*\)/,
    );
    // Nothing left for a sweep to find.
    expect((await fireDueSchedules(testPrisma())).fired).toBe(0);
  }, 180_000);
});
