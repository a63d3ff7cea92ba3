// A page's live feed as server-sent events. Each stream works through what it was told
// one read at a time: notices that arrive meanwhile only mark it dirty, so a burst costs
// one read, the memory a stream holds stays bounded whatever the rate, and events go out
// in the order of the database. A read that meets a transient fault is tried again; the
// stream stays open. A client that stops reading holds back only its own stream.
import type { ServerResponse } from "node:http";
import type { FastifyReply, FastifyRequest } from "fastify";
import { backoffMs, isTransient, pause } from "../lib/transient.ts";
import type { LiveBatch, LiveEvent, LiveFeed } from "../services/live/feed.ts";
import type { LiveListener, Notice } from "../services/live/listener.ts";

/** What the web process shares between its streams (plugins/live.ts). */
export interface LiveHub {
  listener(): LiveListener;
  streams: Set<LiveStream>;
  /** A stream ends after this long; its client reconnects with `Last-Event-ID` and is authorized afresh. */
  maxAgeMs: number;
  log(msg: string, err?: unknown): void;
}

// How long EventSource waits before it reconnects.
const RETRY_MS = 2000;

const HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  vary: "Accept",
  // Proxies that buffer responses (nginx) would hold events back.
  "x-accel-buffering": "no",
};

/** One event as the SSE wire format has it. JSON never holds a raw newline, so `data` is one line. */
export function eventText(liveEvent: LiveEvent): string {
  return `event: ${liveEvent.event}\nid: ${liveEvent.id}\ndata: ${JSON.stringify(liveEvent.data)}\n\n`;
}

export class LiveStream {
  private last: string | null;
  private dirty = false;
  private direct: Notice | null = null;
  private started = false;
  private busy = false;
  private closed = false;
  private draining = false;
  private lastRead = 0;
  private failures = 0;
  private unsubscribe: () => void = () => undefined;
  private readonly born = Date.now();

  constructor(
    private readonly feed: LiveFeed,
    since: string | null,
    private readonly res: ServerResponse,
    private readonly hub: LiveHub,
  ) {
    this.last = since;
  }

  notice(n: Notice) {
    if (this.closed) return;
    // A notice that carries its event whole is sent after any read in progress, made then
    // from where the stream stands; any other notice means "read again".
    if (n.kind !== "resync" && this.feed.direct?.(n, this.last ?? "")) this.direct = n;
    else this.dirty = true;
    void this.pump();
  }

  start(first: LiveBatch, unsubscribe: () => void) {
    this.unsubscribe = unsubscribe;
    this.hub.streams.add(this);
    this.res.on("close", () => this.close());
    this.started = true;
    void this.pump(first);
  }

  /** The heartbeat: a comment line keeps proxies from timing the connection out; an old stream ends. */
  tick(now: number) {
    if (this.closed) return;
    if (now - this.born > this.hub.maxAgeMs) return this.end();
    if (!this.draining && !this.busy) this.res.write(": ping\n\n");
  }

  end() {
    if (!this.res.writableEnded) this.res.end();
    this.close();
  }

  private close() {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    this.hub.streams.delete(this);
  }

  private async send(events: LiveEvent[], prefix = "") {
    if (!events.length && !prefix) return;
    this.last = events.at(-1)?.id ?? this.last;
    if (this.res.write(prefix + events.map(eventText).join(""))) return;
    this.draining = true;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      this.res.on("drain", done);
      this.res.on("close", done);
    });
    this.draining = false;
  }

  private async apply(liveBatch: LiveBatch, prefix = "") {
    await this.send(liveBatch.events, prefix);
    if (liveBatch.more) this.dirty = true;
    if (liveBatch.ended && !liveBatch.more) this.end();
  }

  private async pump(first?: LiveBatch) {
    if (this.busy || !this.started) return;
    this.busy = true;
    try {
      if (first) await this.apply(first, `retry: ${RETRY_MS}\n\n`);
      while (!this.closed && (this.dirty || this.direct)) {
        if (this.dirty) {
          const wait = (this.feed.minIntervalMs ?? 0) - (Date.now() - this.lastRead);
          if (wait > 0) await pause(wait);
          this.dirty = false;
          this.lastRead = Date.now();
          await this.readOnce();
        } else {
          const n = this.direct!;
          this.direct = null;
          const e = this.last === null ? null : this.feed.direct!(n, this.last);
          if (e) await this.send([e]);
        }
      }
    } finally {
      this.busy = false;
    }
  }

  private async readOnce() {
    try {
      await this.apply(await this.feed.read(this.last));
      this.failures = 0;
    } catch (err) {
      if (!isTransient(err)) {
        this.hub.log("live stream: a read failed, closing the stream", err);
        return this.end();
      }
      // The database is away for a moment: the stream waits and reads again.
      this.dirty = true;
      await pause(backoffMs(++this.failures));
    }
  }
}

/**
 * Serves `feed` on this request: listens first, then reads, so nothing committed between
 * the two is missed. A feed that has ended with nothing left to say answers 204, which
 * tells EventSource to stop reconnecting.
 */
export async function serveLive(
  req: FastifyRequest,
  reply: FastifyReply,
  hub: LiveHub,
  feed: LiveFeed,
  since: string | null,
) {
  const stream = new LiveStream(feed, since, reply.raw, hub);
  const unsubscribe = await hub.listener().subscribe(feed.topics, (n) => stream.notice(n));
  let first: LiveBatch;
  try {
    first = await feed.read(since, true);
  } catch (err) {
    unsubscribe();
    throw err;
  }
  if (first.ended && !first.more && !first.events.length) {
    unsubscribe();
    return reply.code(204).header("Vary", "Accept").send();
  }
  reply.hijack();
  reply.raw.writeHead(200, HEADERS);
  req.log.debug({ topics: feed.topics }, "live stream opened");
  stream.start(first, unsubscribe);
}
