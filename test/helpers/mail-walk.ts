// The account walks' stack (test/browser-walk-accounts, browser-walk-move-in): the web app on a
// free port that its mails and printed links point at, the workers sending those mails into an
// inbox in this process, and Chromium. Screenshots go to tmp/walk/ (look()) and `shots`.
import { mkdirSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import type { Browser } from "playwright-core";
import { type AgentEnv, startAgents } from "./agents.ts";
import { buildTestApp } from "./app.ts";
import { launchChromium } from "./browser.ts";
import { type Inbox, startInbox } from "./inbox.ts";
import { freePort } from "./ports.ts";
import { look, type Walker } from "./walk.ts";

export interface MailWalk {
  app: FastifyInstance;
  env: AgentEnv;
  inbox: Inbox;
  browser: Browser;
  port: number;
  /** look() at the page, and keep a full-page screenshot `<shots><width>-<name>.png`. */
  shot(walk: Walker, name: string): Promise<void>;
  close(): Promise<void>;
}

export async function startMailWalk(name: string, shots: string): Promise<MailWalk> {
  const inbox = await startInbox();
  const port = await freePort();
  const mailing = { SMTP_URL: inbox.url, PUBLIC_PORT: String(port) };
  const app = await buildTestApp(mailing);
  await app.listen({ port, host: "127.0.0.1" });
  const env = await startAgents(name, mailing);
  const browser = await launchChromium();
  mkdirSync(shots, { recursive: true });
  return {
    app,
    env,
    inbox,
    browser,
    port,
    async shot(walk, shotName) {
      await look(walk, shotName);
      await walk.page.screenshot({ path: `${shots}${walk.width}-${shotName}.png`, fullPage: true });
    },
    async close() {
      await browser.close();
      await env.close();
      await app.close();
      await inbox.close();
    },
  };
}
