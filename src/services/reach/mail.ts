// Sends a queued mail through SMTP (nodemailer). A mail is claimed while it is being sent, so
// a second job for it (a retry racing the sweep) sends nothing; a failure releases it with
// the next time it should be tried, and the job is retried with backoff. A mail is never
// given up: while the SMTP server is away it waits, and goes once it is back.
import nodemailer from "nodemailer";
import type { Db } from "../../db/prisma.ts";
import type { OutboundEmail } from "../../generated/prisma/client.ts";

export interface MailTransport {
  sendMail(mail: {
    from: string;
    to: string;
    subject: string;
    text: string;
    html: string;
    headers?: Record<string, string>;
  }): Promise<unknown>;
  close?(): void;
}

export function createMailTransport(smtpUrl: string): MailTransport {
  // Bounded waits: a server that accepts and then hangs must not hold a sender for minutes.
  return nodemailer.createTransport(smtpUrl, {
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  } as Parameters<typeof nodemailer.createTransport>[1]) as unknown as MailTransport;
}

/** The address mails come from: MAIL_FROM, else Cadre at the workspaces' domain. */
export const mailFrom = (config: { MAIL_FROM?: string; BASE_DOMAIN: string }) =>
  config.MAIL_FROM ??
  `Cadre <cadre@${config.BASE_DOMAIN === "localhost" ? "cadre.localhost" : config.BASE_DOMAIN}>`;

const CLAIM_SECONDS = 120;

type Claimed = OutboundEmail & { to: string | null };

async function claim(db: Db, id: string): Promise<Claimed | null> {
  const [row] = await db.$queryRaw<Claimed[]>`
    UPDATE outbound_emails e SET claimed_until = now() + make_interval(secs => ${CLAIM_SECONDS}),
      attempts = e.attempts + 1
    WHERE e.id = ${id} AND e.status = 'queued'
      AND (e.claimed_until IS NULL OR e.claimed_until < now())
    -- A person's mail goes to their address as it is now; an account mail to someone not in
    -- the workspace yet (an invitation) to the address it was written for.
    RETURNING e.id, e.subject, e.text, e.html, e.kind, e.attempts,
      COALESCE((SELECT u.email FROM users u WHERE u.id = e.user_id), e.to_address) AS "to"`;
  return row ?? null;
}

/**
 * Sends one queued mail. "sent"; "skipped" when it is not queued or another sender holds it.
 * Throws when the server refused or was unreachable, after recording why and when to retry.
 */
export async function sendQueuedMail(
  db: Db,
  transport: MailTransport,
  from: string,
  id: string,
): Promise<"sent" | "skipped"> {
  const claimed = await claim(db, id);
  if (!claimed) return "skipped";
  if (claimed.to) {
    try {
      await transport.sendMail({
        from,
        to: claimed.to,
        subject: claimed.subject,
        text: claimed.text,
        html: claimed.html,
        headers: { "X-Cadre-Kind": claimed.kind },
      });
    } catch (err) {
      const why = (err as Error).message.slice(0, 500);
      // Tried again by the job's own backoff; past this time the sweep sends another job.
      await db.$executeRaw`
        UPDATE outbound_emails SET claimed_until = NULL, last_error = ${why},
          next_attempt_at = now() + make_interval(secs => LEAST(60 + power(2, attempts)::int, 3600))
        WHERE id = ${id}`;
      throw new Error(`mail ${id} not sent yet: ${why}`);
    }
  }
  await db.outboundEmail.update({
    where: { id },
    data: {
      status: "sent",
      sentAt: new Date(),
      claimedUntil: null,
      lastError: claimed.to ? null : "the person has no address any more",
    },
  });
  return "sent";
}
