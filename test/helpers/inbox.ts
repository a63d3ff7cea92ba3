// A real SMTP server in the test process (smtp-server), parsing what it receives
// (mailparser): the mails the worker sent through nodemailer, as a mailbox sees them. It
// can go away and come back on the same port, as a mail server does.
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";
import { type AgentEnv, startAgents } from "./agents.ts";
import { buildTestApp } from "./app.ts";

export interface Received {
  to: string;
  subject: string;
  text: string;
  html: string;
  raw: string;
  parsed: ParsedMail;
}

export interface Inbox {
  url: string;
  mails: Received[];
  to(address: string): Received[];
  /** Stops accepting connections (the port stays ours to come back on). */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

function server(mails: Received[]) {
  return new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", async () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        const parsed = await simpleParser(raw);
        for (const rcpt of session.envelope.rcptTo)
          mails.push({
            to: rcpt.address,
            subject: parsed.subject ?? "",
            text: parsed.text ?? "",
            html: typeof parsed.html === "string" ? parsed.html : "",
            raw,
            parsed,
          });
        done();
      });
    },
  });
}

export async function startInbox(): Promise<Inbox> {
  const mails: Received[] = [];
  let smtp = server(mails);
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const port = (smtp.server.address() as AddressInfo).port;
  let up = true;
  const stop = async () => {
    if (!up) return;
    up = false;
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  };
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    to: (address) => mails.filter((m) => m.to === address),
    stop,
    async start() {
      if (up) return;
      smtp = server(mails);
      await new Promise<void>((resolve) => smtp.listen(port, "127.0.0.1", resolve));
      up = true;
    },
    close: stop,
  };
}

/** The review links in a mail's text: approve and reject, as paths. */
export function reviewLinks(m: Received): { approve: string; reject: string } {
  const path = (label: string) => {
    const url = new RegExp(`^${label}: (\\S+)$`, "m").exec(m.text)?.[1];
    if (!url) throw new Error(`no ${label} link in:\n${m.text}`);
    return new URL(url).pathname;
  };
  return { approve: path("Approve"), reject: path("Reject") };
}

/**
 * DIGEST_HOUR_UTC for a worker whose own sweep should send digests as soon as there is
 * something to send: the hour it is now (a digest is due from its hour on, once a day). A
 * fixed hour would make the sweep race the test whenever the suite runs after it.
 */
export const digestHourNow = () => String(new Date().getUTCHours());

/**
 * The web app and the workers, both mailing into a new inbox, the digest due this very hour
 * (so the worker's own sweep sends it): the reach tests' stack.
 */
export async function startMailing(name: string): Promise<{
  inbox: Inbox;
  app: FastifyInstance;
  env: AgentEnv;
  close: () => Promise<void>;
}> {
  const inbox = await startInbox();
  const app = await buildTestApp({ SMTP_URL: inbox.url });
  const env = await startAgents(name, {
    SMTP_URL: inbox.url,
    MAIL_FROM: "Cadre <cadre@example.test>",
    DIGEST_HOUR_UTC: digestHourNow(),
  });
  const close = async () => {
    await env.close();
    await app.close();
    await inbox.close();
  };
  return { inbox, app, env, close };
}
