import { Redis } from "ioredis";

/**
 * Workers block on Redis and must never give up a command (BullMQ requires
 * maxRetriesPerRequest: null); web producers fail fast so a request can answer 503.
 */
export function createRedis(url: string, role: "worker" | "producer"): Redis {
  return role === "worker"
    ? new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: false })
    : new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000 });
}
