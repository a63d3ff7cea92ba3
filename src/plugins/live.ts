// Live pages (server-sent events): the process's one LISTEN connection, opened by the first
// stream, and the open streams, which one timer keeps alive with heartbeats. Closing the
// app ends every stream first: a server waits for its open responses, and these never end
// by themselves.
import fp from "fastify-plugin";
import type { Redis } from "ioredis";
import { createRedis } from "../db/redis.ts";
import type { LiveHub, LiveStream } from "../http/sse.ts";
import { createLiveListener, type LiveListener } from "../services/live/listener.ts";
import { textWatcher, withText } from "../services/live/text.ts";

declare module "fastify" {
  interface FastifyInstance {
    live: LiveHub;
  }
}

export interface LiveOptions {
  databaseUrl: string;
  /** Where workers publish a model's reply as it streams (services/live/text.ts). */
  redisUrl: string;
  heartbeatMs: number;
  maxAgeMs: number;
}

export default fp<LiveOptions>(
  async (app, liveOptions) => {
    let listener: LiveListener | null = null;
    let redis: Redis[] = [];
    const log = (msg: string, err?: unknown) => app.log.warn({ err }, msg);
    const streams = new Set<LiveStream>();
    const hub: LiveHub = {
      listener: () => {
        if (listener) return listener;
        // Redis for the streamed text: connected by the first stream that shows a run.
        redis = [
          createRedis(liveOptions.redisUrl, "producer"),
          createRedis(liveOptions.redisUrl, "producer"),
        ];
        for (const r of redis) r.on("error", () => undefined); // a page without live text, not an outage
        const [sub, reads] = redis as [Redis, Redis];
        listener = withText(
          createLiveListener({ databaseUrl: liveOptions.databaseUrl, log }),
          textWatcher(sub, reads),
        );
        return listener;
      },
      streams,
      maxAgeMs: liveOptions.maxAgeMs,
      log,
    };
    const timer = setInterval(() => {
      const now = Date.now();
      for (const liveStream of streams) liveStream.tick(now);
    }, liveOptions.heartbeatMs);
    timer.unref();
    app.decorate("live", hub);
    app.addHook("preClose", async () => {
      clearInterval(timer);
      for (const s of [...streams]) s.end();
    });
    app.addHook("onClose", async () => {
      await listener?.close();
      for (const r of redis) r.disconnect();
    });
  },
  { name: "live" },
);
