// The worker's log: JSON lines from pino, the logger Fastify gives the web server, so both
// processes' lines read the same. What a run logs goes through a child of it that carries
// the run, its agent and its tenant (process-agent-run.ts), so an operator can follow one
// run, or one tenant, through every line the worker wrote about it.
import { type DestinationStream, type Logger, pino } from "pino";

export type { Logger };

export function createLogger(level: string, stream?: DestinationStream): Logger {
  return pino({ level, name: "worker" }, stream);
}

/** For code whose caller gave no logger (tests that do not read the log). */
export const silentLogger: Logger = pino({ level: "silent" });
