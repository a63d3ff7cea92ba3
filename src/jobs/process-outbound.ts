// The outbound queue's consumer: mails (SMTP) and outgoing webhooks' deliveries, each by
// its row's id (services/reach/). Every failure is retried with backoff, transient or not:
// a receiver answering 500, or an SMTP server that is away, is the normal case here.
import type { Job } from "bullmq";
import type { Config } from "../config.ts";
import type { PrismaClient } from "../db/prisma.ts";
import { workspaceOrigin } from "../lib/origin.ts";
import { deliver } from "../services/reach/deliveries.ts";
import { queueDigests } from "../services/reach/digest.ts";
import type { ReachOptions } from "../services/reach/fanout.ts";
import { createMailTransport, type MailTransport, mailFrom, sendQueuedMail } from "../services/reach/mail.ts";
import { overdueOutbound } from "../services/reach/sweep.ts";
import { type JobPayloads, outboundJobs, type Queues } from "./queues.ts";

export type OutboundConfig = Pick<
  Config,
  | "SMTP_URL"
  | "MAIL_FROM"
  | "BASE_DOMAIN"
  | "PUBLIC_SCHEME"
  | "PUBLIC_PORT"
  | "PORT"
  | "DEFAULT_WORKSPACE"
  | "DIGEST_HOUR_UTC"
  | "OUTBOUND_ATTEMPTS"
  | "OUTBOUND_BACKOFF_MS"
  | "OUTBOUND_DISABLE_AFTER"
  | "OUTBOUND_TIMEOUT_MS"
>;

/** What the worker needs to reach people: mail when SMTP_URL is set, webhooks always. */
export interface Outbound {
  reach: ReachOptions;
  transport: MailTransport | null;
  from: string;
  config: OutboundConfig;
}

export function outboundFrom(outboundConfig: OutboundConfig, transport?: MailTransport): Outbound {
  const mail = transport ?? (outboundConfig.SMTP_URL ? createMailTransport(outboundConfig.SMTP_URL) : null);
  return {
    reach: { mail: Boolean(mail), origin: (subdomain) => workspaceOrigin(outboundConfig, subdomain) },
    transport: mail,
    from: mailFrom(outboundConfig),
    config: outboundConfig,
  };
}

const deliveryRetries = (config: OutboundConfig) => ({
  attempts: config.OUTBOUND_ATTEMPTS,
  backoffMs: config.OUTBOUND_BACKOFF_MS,
});

/** Queues the jobs for mails and deliveries just written; Redis away: the sweep sends them later. */
export async function queueOutbound(
  queues: Pick<Queues, "outbound">,
  outbound: Outbound,
  ids: { emails: string[]; deliveries: string[] },
  bucket?: number,
): Promise<void> {
  const jobs = outboundJobs(ids, deliveryRetries(outbound.config), bucket);
  if (jobs.length) await queues.outbound.addBulk(jobs).catch(() => undefined);
}

export function outboundProcessor(prisma: PrismaClient, outbound: Outbound) {
  const config = outbound.config;
  return async (job: Job<JobPayloads["outbound"]>) => {
    if ("emailId" in job.data) {
      if (!outbound.transport) return { skipped: "mail is not set up (SMTP_URL)" };
      return { mail: await sendQueuedMail(prisma, outbound.transport, outbound.from, job.data.emailId) };
    }
    return {
      delivery: await deliver(prisma, job.data.deliveryId, {
        timeoutMs: config.OUTBOUND_TIMEOUT_MS,
        maxAttempts: config.OUTBOUND_ATTEMPTS,
        backoffMs: config.OUTBOUND_BACKOFF_MS,
        disableAfter: config.OUTBOUND_DISABLE_AFTER,
      }),
    };
  };
}

/** The maintenance sweep's part: due digests, and mails or deliveries whose job was lost. */
export async function sweepOutbound(
  prisma: PrismaClient,
  queues: Pick<Queues, "outbound">,
  outbound: Outbound,
) {
  const digests = outbound.transport
    ? await queueDigests(prisma, { hourUtc: outbound.config.DIGEST_HOUR_UTC, origin: outbound.reach.origin })
    : [];
  const overdue = await overdueOutbound(prisma);
  await queueOutbound(queues, outbound, { emails: digests, deliveries: [] });
  await queueOutbound(queues, outbound, overdue, Math.floor(Date.now() / 60_000));
  return digests.length + overdue.emails.length + overdue.deliveries.length;
}
