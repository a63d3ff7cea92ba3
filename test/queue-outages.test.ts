// The job queues while Redis is away: one structured line in the log for the outage (not a
// stack per queue and reconnect attempt), and one when Redis answers again. Redis here is a
// private redis-server of the test's own, killed and restarted by its pid.
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { createRedis } from "../src/db/redis.ts";
import { closeQueues, createQueues } from "../src/jobs/queues.ts";
import { waitFor } from "./helpers/app.ts";
import { privateRedis } from "./helpers/faults.ts";
import { captureLog } from "./helpers/logs.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the job queues while Redis is away", () => {
  it("say the outage once, with no stack, however often they reconnect, and once more when Redis is back", async () => {
    const redisServer = await privateRedis();
    const connection = createRedis(redisServer.url, "worker");
    let connectionErrors = 0;
    connection.on("error", () => connectionErrors++);
    const captured = captureLog();
    const queues = createQueues(connection, `${inject("queuePrefix")}-outage`, captured.logger);
    // Anything printed beside the log (BullMQ's last resort is console.error) is a stack dump.
    const printed: unknown[] = [];
    vi.spyOn(console, "error").mockImplementation((...args) => void printed.push(args));
    vi.spyOn(console, "warn").mockImplementation((...args) => void printed.push(args));
    let down = false;
    try {
      await queues.events.add("event", { eventId: "before-outage" });
      redisServer.kill();
      down = true;
      // Several reconnect attempts, each an error: the log still says the outage once.
      await waitFor(async () => connectionErrors >= 3, 30_000);
      const downLines = captured.lines.filter((line) => line.msg.startsWith("queues: Redis is unavailable"));
      expect(downLines).toHaveLength(1);
      expect(downLines[0]).toMatchObject({
        level: 40,
        error: expect.stringMatching(/ECONNREFUSED|ECONNRESET|closed/),
      });
      expect(captured.raw.join("\n")).not.toMatch(/\n\s+at /); // no stack in any line
      expect(printed).toEqual([]);

      await redisServer.start();
      down = false;
      await waitFor(
        async () => captured.lines.some((line) => line.msg === "queues: Redis answers again"),
        30_000,
      );
      await queues.events.add("event", { eventId: "after-outage" });
      expect(captured.messages()).toEqual([
        "queues: Redis is unavailable; jobs wait until it answers",
        "queues: Redis answers again",
      ]);
      expect(printed).toEqual([]);
    } finally {
      if (down) await redisServer.start(); // else closing would wait for it
      await closeQueues(queues);
      connection.disconnect();
      redisServer.kill();
    }
  });
});
