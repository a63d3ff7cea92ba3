import { Redis } from "ioredis";

/**
 * Workers block on Redis and must never give up a command (BullMQ requires
 * maxRetriesPerRequest: null); the web process fails fast, so a request is answered without
 * it (a producer with 503, the rate limiter by letting it through). It connects when told to.
 */
export function createRedis(url: string, role: "worker" | "producer"): Redis {
  return role === "worker"
    ? new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: false })
    : new Redis(url, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        connectTimeout: 2000,
        // A Redis that accepts but does not answer must not hold a request either.
        commandTimeout: 1000,
        lazyConnect: true,
      });
}
