// Rate limits for calls made with an API token — the markdown API and /mcp alike — per
// token and per workspace, counted in Redis by @fastify/rate-limit's store, so every web
// process shares one count. A call over either limit is a 429 with Retry-After, in the
// request's format (plugins/errors.ts).
//
// People browsing with a session are not counted: they are not who floods an API, a page
// view fetches no more than a person clicks, and failed logins have their own limit in
// Postgres. Webhook deliveries are limited per webhook, also in Postgres (routes/webhooks.ts).
//
// Redis away must not take the app down with it: the limiter then lets every call through
// (fails open), says so once in the log, and says once more when Redis answers again.
import fastifyRateLimit from "@fastify/rate-limit";
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import type { Redis } from "ioredis";
import { createRedis } from "../db/redis.ts";
import { redisOutages } from "../db/redis-outages.ts";
import { TooManyRequestsError } from "../lib/errors.ts";
import { rateLimited } from "../metrics/metrics.ts";

export interface RateLimitOptions {
  redisUrl: string;
  /** Keys live under `<prefix>:rate-limit:`. */
  prefix: string;
  perToken: number;
  perTenant: number;
  windowSeconds: number;
}

/** While Redis is away, it is asked again at most this often; calls meanwhile are not counted. */
const RETRY_MS = 2000;

/** Redis's outages as the log tells them (db/redis-outages.ts), and when to ask it again. */
function outages(log: FastifyBaseLogger) {
  const said = redisOutages(log, {
    down: "rate limiter: Redis is unavailable; API calls are not limited until it answers",
    back: "rate limiter: Redis answers again; API calls are limited",
  });
  let retryAt = 0;
  return {
    /** Whether to skip Redis for now (it failed less than RETRY_MS ago). */
    skipping: () => said.isDown() && Date.now() < retryAt,
    failed(err: unknown) {
      retryAt = Date.now() + RETRY_MS;
      said.failed(err);
    },
    answered: said.answered,
  };
}

type Check = ReturnType<FastifyInstance["createRateLimit"]>;
type Result = Awaited<ReturnType<Check>>;

/**
 * One limit: the library's own plugin in a scope of its own, so each limit has its own key,
 * maximum and Redis keys (`<prefix>:rate-limit:token:<id>`), counted by the library's store.
 */
async function limiter(
  app: FastifyInstance,
  o: {
    redis: Redis;
    prefix: string;
    max: number;
    windowSeconds: number;
    key: (req: FastifyRequest) => string;
  },
): Promise<Check> {
  let check: Check | undefined;
  await app.register(async (scope) => {
    await scope.register(fastifyRateLimit, {
      global: false,
      redis: o.redis,
      nameSpace: `${o.prefix}:rate-limit:`,
      keyGenerator: o.key,
      max: o.max,
      timeWindow: o.windowSeconds * 1000,
      skipOnError: false, // the error reaches us, so the outage is logged
    });
    check = scope.createRateLimit();
  });
  if (!check) throw new Error("rate limit: the limiter's scope did not load");
  return check;
}

function tell(reply: FastifyReply, r: Extract<Result, { isAllowed: false }>) {
  reply.header("x-ratelimit-limit", r.max);
  reply.header("x-ratelimit-remaining", r.remaining);
  reply.header("x-ratelimit-reset", r.ttlInSeconds);
}

export default fp<RateLimitOptions>(
  async (app, rateLimitOptions) => {
    const redis = createRedis(rateLimitOptions.redisUrl, "producer");
    redis.on("error", () => undefined); // an outage is logged by the limiter, once
    const outage = outages(app.log);
    const wanted = [
      {
        limit: "token",
        max: rateLimitOptions.perToken,
        key: (req: FastifyRequest) => `token:${req.tokenId}`,
      },
      {
        limit: "tenant",
        max: rateLimitOptions.perTenant,
        key: (req: FastifyRequest) => `tenant:${req.tenant?.id}`,
      },
    ].filter((l) => l.max > 0);
    if (!wanted.length) return;
    await redis.connect().catch((err) => outage.failed(err));
    app.addHook("onClose", () => redis.disconnect());
    // One after the other: registering both at once (Promise.all) returned the second limiter
    // before its scope had loaded, so its `check` was undefined and no limit held.
    const limits: ((typeof wanted)[number] & { check: Check })[] = [];
    for (const l of wanted)
      limits.push({ ...l, check: await limiter(app, { ...rateLimitOptions, ...l, redis }) });

    // After auth's hook (auth is registered first): the token is known by then.
    app.addHook("onRequest", async (req, reply) => {
      if (req.authVia !== "token" || outage.skipping()) return;
      let results: Result[];
      try {
        // Each check inside an async function: one that throws at once becomes a rejection
        // Promise.all awaits, never a sibling promise left to reject unheard.
        results = await Promise.all(limits.map(async (l) => l.check(req)));
      } catch (err) {
        outage.failed(err);
        return;
      }
      outage.answered();
      for (const [index, l] of limits.entries()) {
        const r = results[index]!;
        if (r.isAllowed) continue;
        if (l.limit === "token") tell(reply, r);
        if (!r.isExceeded) continue;
        rateLimited.inc({ limit: l.limit });
        const who = l.limit === "token" ? "this API token" : "this workspace's API tokens together";
        throw new TooManyRequestsError(
          `Too many requests: ${who} may make ${l.max} calls every ${rateLimitOptions.windowSeconds} s. Try again in ${r.ttlInSeconds} s.`,
          Math.max(1, r.ttlInSeconds),
        );
      }
    });
  },
  { name: "rate-limit", dependencies: ["auth"] },
);
