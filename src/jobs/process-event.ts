import type { Job } from "bullmq";
import type { PrismaClient } from "../db/prisma.ts";
import { notifyForEvent } from "../services/notifications.ts";
import type { JobPayloads } from "./queues.ts";

export function eventProcessor(prisma: PrismaClient) {
  return async (job: Job<JobPayloads["events"]>) => {
    const notified = await notifyForEvent(prisma, job.data.eventId);
    return { notified };
  };
}
