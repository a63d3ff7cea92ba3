// Redis away, as the log tells it: one structured line when an outage starts and one when
// Redis answers again, never a line (or a stack) per reconnect attempt. The job queues, the
// workers and the rate limiter all report their outages through this one function.
/** The part of a pino (or Fastify) logger an outage writes to. */
export interface OutageLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

export interface OutageMessages {
  /** Said once when Redis stops answering. */
  down: string;
  /** Said once when it answers again. */
  back: string;
}

export type Outages = ReturnType<typeof redisOutages>;

export function redisOutages(log: OutageLog, messages: OutageMessages) {
  let since: number | null = null;
  return {
    /** Whether an outage is under way (said, and not yet over). */
    isDown: () => since !== null,
    failed(error: unknown) {
      if (since !== null) return;
      since = Date.now();
      // The message alone: a stack says nothing about a refused connection.
      log.warn({ error: error instanceof Error ? error.message : String(error) }, messages.down);
    },
    answered() {
      if (since === null) return;
      log.info({ downMs: Date.now() - since }, messages.back);
      since = null;
    },
  };
}

/** Errors that mean Redis is unreachable, as ioredis and BullMQ phrase them. */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (
    (typeof code === "string" &&
      /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH)$/.test(code)) ||
    /ECONNREFUSED|Connection is closed/.test(error.message)
  );
}

/**
 * A BullMQ Queue's or Worker's Redis errors, through `outages`: one that means Redis is
 * unreachable opens (or continues) an outage; any other is said on a line of its own
 * (`other`). The outage ends when the client it uses is ready again.
 */
export function watchRedis(
  part: {
    on(event: "error", listener: (error: Error) => void): unknown;
    client: Promise<{ on(event: "ready", listener: () => void): unknown }>;
  },
  outages: Outages,
  other: (error: Error) => void = outages.failed,
): void {
  part.on("error", (error) => (isConnectionError(error) ? outages.failed(error) : other(error)));
  part.client.then(
    (client) => client.on("ready", outages.answered),
    () => undefined, // closed before it ever connected: nothing to watch
  );
}
