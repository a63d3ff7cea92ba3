// One LISTEN connection per web process, shared by every open stream in it. Postgres sends
// each notification to every listening process, so any number of web processes each hear
// every commit, whichever worker made it. A notification only says what changed; each
// stream reads what it shows from the database. The connection opens with the first
// stream; when it drops, it is opened again with backoff, and every stream is told to read
// afresh (`resync`), since nothing told it what committed meanwhile.
import pg from "pg";
import { LIVE_CHANNEL } from "../events-channel.ts";

export type Notice =
  | { kind: "step"; runId: string; agentId: string; number: number }
  | { kind: "run"; runId: string; agentId: string; threadId: string | null; state: string }
  | { kind: "comment"; threadId: string; commentId: string }
  | { kind: "call"; runId: string; step: number; at: number }
  /** The model's reply so far (text.ts): from Redis, not the Postgres channel. */
  | { kind: "text"; runId: string; step: number; text: string }
  | { kind: "pending"; pendingId: string; agentId: string }
  | { kind: "resync" };

/** Reads a payload of the live channel (the `live_runs` migration and publish.ts); null for one it does not know. */
export function parseNotice(payload: string): Notice | null {
  const [kind, a, b, c, d, e] = payload.split(" ");
  if (!a) return null;
  if (kind === "step" && b) return { kind, runId: a, agentId: b, number: Number(c) };
  if (kind === "run" && b && c && d)
    return { kind, runId: a, agentId: b, threadId: c === "-" ? null : c, state: e ?? d };
  if (kind === "comment" && b) return { kind, threadId: a, commentId: b };
  if (kind === "call") return { kind, runId: a, step: Number(b), at: Number(c) };
  if (kind === "pending" && b) return { kind, pendingId: a, agentId: b };
  return null;
}

/** The topics a notice concerns: a run's page, the lists of its agent's runs and reviews, a thread, a review. */
export function topicsOf(notice: Notice): string[] {
  switch (notice.kind) {
    case "step":
      return [`run:${notice.runId}`, `agent:${notice.agentId}`];
    case "run":
      return [
        `run:${notice.runId}`,
        `agent:${notice.agentId}`,
        ...(notice.threadId ? [`thread:${notice.threadId}`] : []),
      ];
    case "comment":
      return [`thread:${notice.threadId}`];
    case "call":
    case "text":
      return [`run:${notice.runId}`];
    case "pending":
      return [`pending:${notice.pendingId}`, `agent:${notice.agentId}`];
    case "resync":
      return [];
  }
}

type Handler = (n: Notice) => void;

export interface LiveListener {
  /** Calls `fn` for each notice on any of `topics`; resolves once the connection listens, so a read after it misses nothing. */
  subscribe(topics: string[], callback: Handler): Promise<() => void>;
  close(): Promise<void>;
}

export interface ListenerOptions {
  databaseUrl: string;
  reconnectMs?: { min: number; max: number };
  log?: (msg: string, err?: unknown) => void;
}

/** How the connection shows in pg_stat_activity. */
export const LIVE_APPLICATION_NAME = "cadre-live";

export function createLiveListener(listenerOptions: ListenerOptions): LiveListener {
  const backoff = listenerOptions.reconnectMs ?? { min: 100, max: 5000 };
  const byTopic = new Map<string, Set<Handler>>();
  const all = new Set<Handler>();
  let client: pg.Client | null = null;
  let connecting: Promise<void> | null = null;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let wait = backoff.min;
  let closed = false;

  function dispatch(n: Notice) {
    const seen = new Set<Handler>();
    for (const t of topicsOf(n))
      for (const fn of byTopic.get(t) ?? [])
        if (!seen.has(fn)) {
          seen.add(fn);
          fn(n);
        }
  }

  async function open(): Promise<void> {
    const c = new pg.Client({
      connectionString: listenerOptions.databaseUrl,
      application_name: LIVE_APPLICATION_NAME,
      keepAlive: true,
    });
    let lastError: unknown;
    c.on("error", (err) => {
      lastError = err;
    });
    c.on("notification", (notification) => {
      const n = notification.payload ? parseNotice(notification.payload) : null;
      if (n) dispatch(n);
    });
    c.on("end", () => lost(c, lastError));
    try {
      await c.connect();
      await c.query(`LISTEN ${LIVE_CHANNEL}`);
    } catch (err) {
      await c.end().catch(() => undefined);
      throw err;
    }
    if (closed) await c.end();
    else client = c;
  }

  function connect(): Promise<void> {
    if (client) return Promise.resolve();
    connecting ??= open().finally(() => {
      connecting = null;
    });
    return connecting;
  }

  function lost(c: pg.Client, err: unknown) {
    if (client !== c || closed) return;
    client = null;
    // With no stream open, the next one opens the connection again.
    if (!all.size) return;
    listenerOptions.log?.("live listener: lost its database connection, reconnecting", err);
    reconnect();
  }

  function reconnect() {
    clearTimeout(retry);
    retry = setTimeout(async () => {
      try {
        await connect();
      } catch {
        wait = Math.min(wait * 2, backoff.max);
        if (!closed) reconnect();
        return;
      }
      wait = backoff.min;
      listenerOptions.log?.("live listener: reconnected");
      for (const fn of all) fn({ kind: "resync" });
    }, wait);
  }

  return {
    async subscribe(topics, fn) {
      for (const t of topics) {
        const set = byTopic.get(t) ?? new Set<Handler>();
        byTopic.set(t, set);
        set.add(fn);
      }
      all.add(fn);
      const unsubscribe = () => {
        all.delete(fn);
        for (const t of topics) {
          const set = byTopic.get(t);
          set?.delete(fn);
          if (set && !set.size) byTopic.delete(t);
        }
      };
      try {
        await connect();
      } catch (err) {
        unsubscribe();
        throw err;
      }
      return unsubscribe;
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      await connecting?.catch(() => undefined);
      await client?.end().catch(() => undefined);
      client = null;
    },
  };
}
