// What a page says live (server-sent events): a feed names the topics whose notifications
// may change the page, and reads from the database what changed after a position. The
// position is the id of the last event a client saw, so a client that reconnects with
// `Last-Event-ID` (or a page that embeds where it stands) gets exactly what it has not seen.
import { createHash } from "node:crypto";
import type { Notice } from "./listener.ts";

export interface LiveEvent {
  event: string;
  /** The position after this event: reading from it yields what follows. */
  id: string;
  data: unknown;
}

export interface LiveBatch {
  events: LiveEvent[];
  /** More follows at once (a long run's steps come in batches, so one read holds little memory). */
  more?: boolean;
  /** Nothing will ever follow (a finished run): the stream closes. */
  ended?: boolean;
}

export interface LiveFeed {
  topics: string[];
  /** What follows position `since` (null: from the start); `first` on a stream's first read. */
  read(since: string | null, first?: boolean): Promise<LiveBatch>;
  /** An event a notice carries whole (an LLM call started), sent without a read; null to read instead. */
  direct?(notice: Notice, since: string): LiveEvent | null;
  /** The least time between two reads: a list need not be read again for each notice of a burst. */
  minIntervalMs?: number;
}

/** A short stable digest of a value: the position of a feed whose position is its state. */
export const digestOf = (value: unknown) =>
  createHash("sha1").update(JSON.stringify(value)).digest("hex").slice(0, 16);

/**
 * A feed that says `changed` whenever its state differs from the position: for a list or a
 * thread, whose page is read again whole. The page embeds the same digest, so a change
 * between the page's read and the stream's first read is not lost.
 */
export function changesFeed(
  topics: string[],
  state: () => Promise<{ digest: string; data: unknown }>,
  minIntervalMs = 300,
): LiveFeed {
  return {
    topics,
    minIntervalMs,
    async read(since) {
      const current = await state();
      return {
        events:
          current.digest === since ? [] : [{ event: "changed", id: current.digest, data: current.data }],
      };
    },
  };
}

/**
 * Reads shared by the streams of one process that stand at the same position of the same
 * feed: a step watched by a hundred tabs is read once, not a hundred times.
 */
export function sharedReads<T>() {
  const inFlight = new Map<string, Promise<T>>();
  return (key: string, read: () => Promise<T>): Promise<T> => {
    let pending = inFlight.get(key);
    if (!pending) {
      pending = read().finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  };
}
