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
  // Positional: what each word is depends on the kind (publish.ts writes them).
  const [kind, first, second, third, fourth, fifth] = payload.split(" ");
  if (!first) return null;
  if (kind === "step" && second) return { kind, runId: first, agentId: second, number: Number(third) };
  if (kind === "run" && second && third && fourth)
    return {
      kind,
      runId: first,
      agentId: second,
      threadId: third === "-" ? null : third,
      state: fifth ?? fourth,
    };
  if (kind === "comment" && second) return { kind, threadId: first, commentId: second };
  if (kind === "call") return { kind, runId: first, step: Number(second), at: Number(third) };
  if (kind === "pending" && second) return { kind, pendingId: first, agentId: second };
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

type Handler = (notice: Notice) => void;

export interface LiveListener {
  /** Calls `callback` for each notice on any of `topics`; resolves once the connection listens, so a read after it misses nothing. */
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

/** The listener's state, shared by its steps: one connection for every stream of the process. */
interface Listener {
  options: ListenerOptions;
  backoff: { min: number; max: number };
  byTopic: Map<string, Set<Handler>>;
  /** Every subscribed stream, told to read afresh after a reconnection. */
  all: Set<Handler>;
  client: pg.Client | null;
  connecting: Promise<void> | null;
  retry: ReturnType<typeof setTimeout> | undefined;
  /** The wait before the next reconnection attempt. */
  wait: number;
  closed: boolean;
}

export function createLiveListener(listenerOptions: ListenerOptions): LiveListener {
  const backoff = listenerOptions.reconnectMs ?? { min: 100, max: 5000 };
  const listener: Listener = {
    options: listenerOptions,
    backoff,
    byTopic: new Map(),
    all: new Set(),
    client: null,
    connecting: null,
    retry: undefined,
    wait: backoff.min,
    closed: false,
  };
  return {
    async subscribe(topics, callback) {
      const unsubscribe = addHandler(listener, topics, callback);
      try {
        await connect(listener);
      } catch (err) {
        unsubscribe();
        throw err;
      }
      return unsubscribe;
    },
    async close() {
      listener.closed = true;
      clearTimeout(listener.retry);
      await listener.connecting?.catch(() => undefined);
      await listener.client?.end().catch(() => undefined);
      listener.client = null;
    },
  };
}

/** Adds `callback` under each of `topics`; returns what takes it away again. */
function addHandler(listener: Listener, topics: string[], callback: Handler): () => void {
  for (const topic of topics) {
    const handlers = listener.byTopic.get(topic) ?? new Set<Handler>();
    listener.byTopic.set(topic, handlers);
    handlers.add(callback);
  }
  listener.all.add(callback);
  return () => {
    listener.all.delete(callback);
    for (const topic of topics) {
      const handlers = listener.byTopic.get(topic);
      handlers?.delete(callback);
      if (handlers && !handlers.size) listener.byTopic.delete(topic);
    }
  };
}

/** Each handler once per notice, however many of its topics the notice concerns. */
function dispatch(listener: Listener, notice: Notice) {
  const seen = new Set<Handler>();
  for (const topic of topicsOf(notice))
    for (const handler of listener.byTopic.get(topic) ?? [])
      if (!seen.has(handler)) {
        seen.add(handler);
        handler(notice);
      }
}

async function open(listener: Listener): Promise<void> {
  const client = new pg.Client({
    connectionString: listener.options.databaseUrl,
    application_name: LIVE_APPLICATION_NAME,
    keepAlive: true,
  });
  let lastError: unknown;
  client.on("error", (err) => {
    lastError = err;
  });
  client.on("notification", (notification) => {
    const notice = notification.payload ? parseNotice(notification.payload) : null;
    if (notice) dispatch(listener, notice);
  });
  client.on("end", () => lost(listener, client, lastError));
  try {
    await client.connect();
    await client.query(`LISTEN ${LIVE_CHANNEL}`);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  if (listener.closed) await client.end();
  else listener.client = client;
}

/** Opens the connection unless it is open; streams subscribing meanwhile share one attempt. */
function connect(listener: Listener): Promise<void> {
  if (listener.client) return Promise.resolve();
  listener.connecting ??= open(listener).finally(() => {
    listener.connecting = null;
  });
  return listener.connecting;
}

function lost(listener: Listener, client: pg.Client, err: unknown) {
  if (listener.client !== client || listener.closed) return;
  listener.client = null;
  // With no stream open, the next one opens the connection again.
  if (!listener.all.size) return;
  listener.options.log?.("live listener: lost its database connection, reconnecting", err);
  reconnect(listener);
}

function reconnect(listener: Listener) {
  clearTimeout(listener.retry);
  listener.retry = setTimeout(async () => {
    try {
      await connect(listener);
    } catch {
      listener.wait = Math.min(listener.wait * 2, listener.backoff.max);
      if (!listener.closed) reconnect(listener);
      return;
    }
    listener.wait = listener.backoff.min;
    listener.options.log?.("live listener: reconnected");
    for (const handler of listener.all) handler({ kind: "resync" });
  }, listener.wait);
}
