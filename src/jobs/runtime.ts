// Starts everything a worker process runs; worker.ts and the tests both use it.
import { Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { PrismaClient } from "../db/prisma.ts";
import { startEventRelay } from "./event-relay.ts";
import { eventProcessor } from "./process-event.ts";
import { closeQueues, createQueues } from "./queues.ts";

export interface RuntimeOptions {
  prisma: PrismaClient;
  databaseUrl: string;
  connection: Redis;
  prefix: string;
  concurrency?: number;
  log?: (msg: string, err?: unknown) => void;
}

export async function startRuntime(o: RuntimeOptions) {
  const queues = createQueues(o.connection, o.prefix);
  const workers = [
    new Worker("events", eventProcessor(o.prisma), {
      connection: o.connection,
      prefix: o.prefix,
      concurrency: o.concurrency ?? 8,
    }),
  ];
  for (const w of workers) w.on("failed", (job, err) => o.log?.(`job ${w.name}/${job?.id} failed`, err));
  const relay = startEventRelay({ prisma: o.prisma, databaseUrl: o.databaseUrl, queues, log: o.log });
  await relay.ready;
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  return {
    queues,
    relay,
    async close() {
      await relay.stop();
      await Promise.all(workers.map((w) => w.close()));
      await closeQueues(queues);
    },
  };
}
