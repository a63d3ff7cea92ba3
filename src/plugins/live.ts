// Live pages (server-sent events): the process's one LISTEN connection, opened by the first
// stream, and the open streams, which one timer keeps alive with heartbeats. Closing the
// app ends every stream first: a server waits for its open responses, and these never end
// by themselves.
import fp from "fastify-plugin";
import type { LiveHub, LiveStream } from "../http/sse.ts";
import { createLiveListener, type LiveListener } from "../services/live/listener.ts";

declare module "fastify" {
  interface FastifyInstance {
    live: LiveHub;
  }
}

export interface LiveOptions {
  databaseUrl: string;
  heartbeatMs: number;
  maxAgeMs: number;
}

export default fp<LiveOptions>(
  async (app, o) => {
    let listener: LiveListener | null = null;
    const log = (msg: string, err?: unknown) => app.log.warn({ err }, msg);
    const streams = new Set<LiveStream>();
    const hub: LiveHub = {
      listener: () => {
        listener ??= createLiveListener({ databaseUrl: o.databaseUrl, log });
        return listener;
      },
      streams,
      maxAgeMs: o.maxAgeMs,
      log,
    };
    const timer = setInterval(() => {
      const now = Date.now();
      for (const s of streams) s.tick(now);
    }, o.heartbeatMs);
    timer.unref();
    app.decorate("live", hub);
    app.addHook("preClose", async () => {
      clearInterval(timer);
      for (const s of [...streams]) s.end();
    });
    app.addHook("onClose", async () => listener?.close());
  },
  { name: "live" },
);
