// The leak tests' stack (test/*-leak.test.ts): the web app and the workers, both logging at
// trace level into lines the test then searches for tokens, both mailing into a new inbox.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { buildApp } from "../../src/app.ts";
import { type AgentEnv, startAgents } from "./agents.ts";
import { testConfig, testPrisma } from "./app.ts";
import { type Inbox, startInbox } from "./inbox.ts";
import { type CapturedLog, captureLog } from "./logs.ts";

export interface LeakStack {
  app: FastifyInstance;
  env: AgentEnv;
  inbox: Inbox;
  /** The web app's log lines, raw JSON. */
  appLog: string[];
  workerLog: CapturedLog;
  close(): Promise<void>;
}

export async function startLeakStack(name: string, config: Record<string, string> = {}): Promise<LeakStack> {
  const appLog: string[] = [];
  const workerLog = captureLog("trace");
  const inbox = await startInbox();
  const app = await buildApp({
    config: testConfig({ LOG_LEVEL: "trace", SMTP_URL: inbox.url, ...config }),
    prisma: testPrisma(),
    logger: { stream: { write: (line: string) => void appLog.push(line) } },
  });
  await app.ready();
  const env = await startAgents(name, { SMTP_URL: inbox.url }, [], workerLog.logger);
  return {
    app,
    env,
    inbox,
    appLog,
    workerLog,
    async close() {
      await env.close();
      await app.close();
      await inbox.close();
    },
  };
}

/** Each form of a token a leak could take: as is, and hex-encoded. */
export const formsOf = (token: string) => [token, Buffer.from(token).toString("hex")];

/** No form of any of these tokens in any of these texts (`where` names them in a failure). */
export function expectClean(where: string, texts: string[], tokens: string[]) {
  for (const text of texts)
    for (const needle of tokens.flatMap(formsOf))
      expect(text.includes(needle), `${where}: ${text.slice(0, 300)}`).toBe(false);
}

/** Every answer as a leak could carry a token: its headers and its body. */
export const answers = (seen: LightMyRequestResponse[]) =>
  seen.map((res) => `${JSON.stringify(res.headers)}\n${res.body}`);
