// A browser test file's world, started before its tests and closed after them: the app on a
// real listener, a worker running agents against the fake LLM, and Chromium.
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { type AgentEnv, startAgents } from "./agents.ts";
import { buildTestApp, type World } from "./app.ts";
import { launchChromium, listen } from "./browser.ts";

export interface BrowserSuite {
  app: FastifyInstance;
  env: AgentEnv;
  browser: Browser;
  /** The address of a world's tenant on the listener. */
  baseOf: (w: World) => string;
}

/** Registers the file's setup and teardown; the fields are set once `beforeAll` has run. */
export function browserWithAgents(
  queue: string,
  /** The worker's settings, knowing the listener's port (links in mails point there). */
  workerEnv: (port: number) => Record<string, string> | Promise<Record<string, string>> = () => ({}),
  appEnv: Record<string, string> = {},
): BrowserSuite {
  const suite = {} as Partial<BrowserSuite>;
  beforeAll(async () => {
    suite.app = await buildTestApp(appEnv);
    suite.baseOf = await listen(suite.app);
    suite.env = await startAgents(queue, await workerEnv((suite.app.server.address() as AddressInfo).port));
    suite.browser = await launchChromium();
  });
  afterAll(async () => {
    await suite.browser?.close();
    await suite.env?.close();
    await suite.app?.close();
  });
  return suite as BrowserSuite;
}
