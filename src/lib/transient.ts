// Which failures pass by themselves. One classification serves the agent runs, the approval
// executor, the event relay and the web app: a transient failure (the database or Redis
// briefly out of reach, a pool or transaction timeout under a burst, a deadlock or
// serialization conflict) rolled back whatever it interrupted, so the work is tried again
// (or answered 503 with Retry-After); anything else — validation, authorization, a bug —
// is permanent and is not retried.

/** SQLSTATEs that say "try again": connection exceptions (08…), serialization failure,
 * deadlock, too many connections, and the server shutting down or starting up. */
const PG_TRANSIENT = /^(08\w{3}|40001|40P01|53300|57P0[123])$/;

/** Prisma's own codes for the same: pool timeout, transaction start/expiry, write
 * conflict or deadlock, database unreachable or timed out, connection closed. */
const PRISMA_TRANSIENT = new Set(["P1001", "P1002", "P1008", "P1017", "P2024", "P2028", "P2034"]);

/** What @prisma/adapter-pg calls the same conditions. */
const ADAPTER_TRANSIENT = new Set([
  "TransactionWriteConflict",
  "DatabaseNotReachable",
  "ConnectionClosed",
  "SocketTimeout",
  "TooManyConnections",
]);

const SOCKET_TRANSIENT = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/** Errors that carry no code, from pg (a connection that died) and ioredis (Redis away). */
const MESSAGE_TRANSIENT =
  /Connection terminated|not queryable|timeout exceeded when trying to connect|Connection is closed|Stream isn't writeable|max retries per request|Unable to start a transaction|expired transaction|Transaction already closed/i;

interface Shape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  errors?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: unknown; originalCode?: unknown } } };
}

function transientHere(shape: Shape): boolean {
  const code = typeof shape.code === "string" ? shape.code : "";
  if (PG_TRANSIENT.test(code) || PRISMA_TRANSIENT.has(code) || SOCKET_TRANSIENT.has(code)) return true;
  const adapter = shape.meta?.driverAdapterError?.cause;
  if (adapter) {
    if (typeof adapter.kind === "string" && ADAPTER_TRANSIENT.has(adapter.kind)) return true;
    if (typeof adapter.originalCode === "string" && PG_TRANSIENT.test(adapter.originalCode)) return true;
  }
  if (shape.name === "MaxRetriesPerRequestError") return true;
  return typeof shape.message === "string" && MESSAGE_TRANSIENT.test(shape.message);
}

/** Whether `err` (or what caused it) is a failure that passes: retrying may succeed. */
export function isTransient(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 5) return false;
  const shape = err as Shape;
  if (transientHere(shape)) return true;
  if (Array.isArray(shape.errors) && shape.errors.some((x) => isTransient(x, depth + 1))) return true;
  return isTransient(shape.cause, depth + 1);
}

/** Exponential backoff with full jitter: attempt 1 waits up to `base`, doubling to `cap`. */
export function backoffMs(attempt: number, base = 100, cap = 5000): number {
  return Math.random() * Math.min(cap, base * 2 ** Math.max(0, attempt - 1));
}

/** Sleeps `ms`, or less if `signal` aborts first. */
export function pause(milliseconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, milliseconds);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Runs `fn` again after a transient failure, with backoff, until `until` (a Date.now()
 * value, or a function giving one, read at each failure) or `signal` says stop; then, or
 * on a permanent failure, the error is thrown.
 */
export async function retryTransient<T>(
  callback: () => Promise<T>,
  options: {
    until: number | (() => number);
    signal?: AbortSignal;
    onRetry?: (err: unknown, attempt: number, waitMs: number) => void;
  },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await callback();
    } catch (err) {
      const wait = backoffMs(attempt);
      const until = typeof options.until === "function" ? options.until() : options.until;
      if (!isTransient(err) || options.signal?.aborted || Date.now() + wait >= until) throw err;
      options.onRetry?.(err, attempt, wait);
      await pause(wait, options.signal);
    }
  }
}
