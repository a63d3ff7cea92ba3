// Account mails (a set-up link, an invitation, a reset, a security notice) go through the same
// outbox as every other mail (services/reach/mail.ts sends them): a row written in the
// transaction of what it tells of, so an invitation and its mail exist together or not at all,
// and a mail server that is down only delays it. The web process has no queue of its own: the
// row is written already due, and the worker's sweep (every SWEEP_INTERVAL_MS) sends it.
import type { Db } from "../../db/prisma.ts";
import { newId } from "../../lib/ids.ts";

export interface AccountMail {
  /** Null only for a sign-up's confirmation: no workspace yet. */
  tenantId: string | null;
  /** A person of the workspace (their address as it is when sent), or none: `to` is used. */
  userId?: string | null;
  /** The address for someone not in the workspace yet. */
  to?: string | null;
  /** `X-Cadre-Kind` of the mail: `account.invite`, `account.security.role_changed`… */
  kind: string;
  subject: string;
  /** Paragraphs; a link is a paragraph of its own, `Label: url` in text and a link in HTML. */
  paragraphs: (string | { label: string; url: string })[];
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (character) =>
      ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[character] ?? character,
  );

/** The mail's text and HTML from its paragraphs: short and plain, as every Cadre mail. */
export function renderAccountMail(mail: Pick<AccountMail, "paragraphs">): { text: string; html: string } {
  const text = mail.paragraphs
    .map((paragraph) => (typeof paragraph === "string" ? paragraph : `${paragraph.label}: ${paragraph.url}`))
    .join("\n\n");
  const body = mail.paragraphs
    .map((paragraph) =>
      typeof paragraph === "string"
        ? `<p>${escapeHtml(paragraph)}</p>`
        : `<p><a href="${escapeHtml(paragraph.url)}" style="display:inline-block;padding:8px 16px;border-radius:6px;text-decoration:none;background:#1f5f99;color:#fff">${escapeHtml(paragraph.label)}</a></p>`,
    )
    .join("\n");
  const html = `<!doctype html><html><body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#222;max-width:560px">
${body}
</body></html>`;
  return { text, html };
}

/**
 * Writes the mail row in `tx` and returns its id. Written due a minute ago: the worker's sweep
 * takes mails whose job is overdue by a minute, and this one has no job to wait for.
 */
export async function queueAccountMail(tx: Db, mail: AccountMail): Promise<string> {
  if (!mail.userId && !mail.to) throw new Error("an account mail needs a person or an address");
  const id = newId();
  const { text, html } = renderAccountMail(mail);
  await tx.outboundEmail.create({
    data: {
      id,
      tenantId: mail.tenantId,
      userId: mail.userId ?? null,
      toAddress: mail.to?.toLowerCase() ?? null,
      // One mail per row: account mails tell of no event, and are never deduplicated by one.
      eventId: `account-${id}`,
      kind: mail.kind,
      subject: mail.subject,
      text,
      html,
      nextAttemptAt: new Date(Date.now() - 61_000),
    },
  });
  return id;
}
