// A model's reply as it streams, from the worker to the run pages watching it. Text never
// goes to Postgres piece by piece: the worker keeps the reply so far in a Redis key (a page
// opened mid-step reads it) and publishes it on the run's own channel, at most every
// TEXT_EVERY_MS; the step, when recorded, is the row it always was. Redis, not pg_notify: a
// NOTIFY is a statement and a commit on the database every step already waits on (and its
// payload stops at 8 kB), while Redis is the transport the worker already holds; a run's
// channel costs nothing while no page watches it, and each web process subscribes only to
// the runs its open streams show. Everything here is best-effort: with Redis away the page
// shows "Thinking…" and then the step, as before.
import type { Redis } from "ioredis";
import type { LiveListener, Notice } from "./listener.ts";

/** The most often a run's text is published: a page redraws ten times a second at most. */
export const TEXT_EVERY_MS = 100;
/** A key outlives the step it belongs to by this much when its end was never said (a killed worker). */
const TEXT_TTL_MS = 120_000;
/** What a page shows of one reply at most. */
const TEXT_CHARS = 16_000;

export interface StreamedText {
  step: number;
  text: string;
}

// Not under QUEUE_PREFIX: run ids are unique across deployments, and the web process and the
// workers then meet whatever prefixes they were given.
const keyOf = (runId: string) => `cadre:live-text:${runId}`;
const channelOf = keyOf;

export interface TextPublisher {
  /** The reply of step `step` so far (masked by the caller), its whole text each time. */
  publish(runId: string, step: number, text: string): void;
  /** The step's call ended: its text is the step's now. */
  end(runId: string): void;
}

/**
 * The worker's side: per run, the newest text, sent at once and then at most every
 * TEXT_EVERY_MS, through `mask` (the secret masking every stored model text goes through).
 */
export function textPublisher(redis: Redis, mask: (text: string) => string): TextPublisher {
  const runs = new Map<string, { latest: StreamedText; sent: StreamedText | null; timer?: NodeJS.Timeout }>();
  const send = (runId: string, streamedText: StreamedText) => {
    const value = JSON.stringify({
      step: streamedText.step,
      text: mask(streamedText.text.slice(0, TEXT_CHARS)),
    });
    redis
      .pipeline()
      .set(keyOf(runId), value, "PX", TEXT_TTL_MS)
      .publish(channelOf(runId), value)
      .exec()
      .catch(() => undefined);
  };
  const flush = (runId: string) => {
    const run = runs.get(runId);
    if (!run) return;
    if (run.sent === run.latest) {
      run.timer = undefined;
      return;
    }
    send(runId, run.latest);
    run.sent = run.latest;
    run.timer = setTimeout(() => flush(runId), TEXT_EVERY_MS);
    run.timer.unref();
  };
  return {
    publish(runId, step, text) {
      const run = runs.get(runId) ?? { latest: { step, text }, sent: null };
      run.latest = { step, text };
      runs.set(runId, run);
      if (!run.timer) flush(runId);
    },
    end(runId) {
      const run = runs.get(runId);
      if (!run) return;
      clearTimeout(run.timer);
      runs.delete(runId);
      redis.del(keyOf(runId)).catch(() => undefined);
    },
  };
}

type Watch = (streamed: StreamedText) => void;

/**
 * The web process's side: one subscriber connection (and one for reads), subscribed to the
 * channels of the runs its open streams show. A stream starts with the text so far.
 */
export function textWatcher(sub: Redis, reads: Redis) {
  const watching = new Map<string, Set<Watch>>();
  const parse = (raw: string | null): StreamedText | null => {
    try {
      const streamed = raw ? (JSON.parse(raw) as StreamedText) : null;
      return streamed && typeof streamed.step === "number" && typeof streamed.text === "string"
        ? streamed
        : null;
    } catch {
      return null;
    }
  };
  // Connected with the first stream that watches a run (the web process's connections are lazy).
  const connected = (redis: Redis) => (redis.status === "wait" ? redis.connect() : Promise.resolve());
  sub.on("message", (channel: string, raw: string) => {
    const streamed = parse(raw);
    const callbacks = watching.get(channel);
    if (streamed && callbacks) for (const callback of callbacks) callback(streamed);
  });
  return {
    async watch(runId: string, callback: Watch): Promise<() => void> {
      await Promise.all([connected(sub), connected(reads)]);
      const channel = channelOf(runId);
      let callbacks = watching.get(channel);
      if (!callbacks) {
        callbacks = new Set();
        watching.set(channel, callbacks);
        await sub.subscribe(channel);
      }
      callbacks.add(callback);
      const now = parse(await reads.get(keyOf(runId)));
      if (now) callback(now);
      return () => {
        const set = watching.get(channel);
        set?.delete(callback);
        if (set && !set.size) {
          watching.delete(channel);
          sub.unsubscribe(channel).catch(() => undefined);
        }
      };
    },
  };
}

/**
 * `base` with streamed text: a stream on a run's topic also hears `text` notices for that
 * run. Without Redis, a stream still opens (and shows the steps as they are recorded).
 */
export function withText(base: LiveListener, watcher: ReturnType<typeof textWatcher>): LiveListener {
  return {
    async subscribe(topics, callback) {
      const off = await base.subscribe(topics, callback);
      const runs = topics.filter((topic) => topic.startsWith("run:")).map((topic) => topic.slice(4));
      // Not awaited: a stream opens at once, Redis or not; the text so far follows when it comes.
      const stops = runs.map((runId) =>
        watcher
          .watch(runId, (streamed) =>
            callback({ kind: "text", runId, step: streamed.step, text: streamed.text } satisfies Notice),
          )
          .catch(() => () => undefined),
      );
      return () => {
        off();
        for (const stopping of stops) void stopping.then((stop) => stop());
      };
    },
    close: () => base.close(),
  };
}
