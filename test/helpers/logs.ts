// A worker log the test can read: the same pino logger the worker uses, writing its JSON
// lines into memory instead of stdout.
import { createLogger, type Logger } from "../../src/lib/logger.ts";

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export interface CapturedLog {
  logger: Logger;
  lines: LogLine[];
  /** The lines as written (JSON text): what a leak check reads. */
  raw: string[];
  /** Each line's message. */
  messages(): string[];
}

export function captureLog(level = "info"): CapturedLog {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const logger = createLogger(level, {
    write: (line: string) => {
      raw.push(line);
      lines.push(JSON.parse(line));
    },
  });
  return { logger, lines, raw, messages: () => lines.map((l) => l.msg) };
}
