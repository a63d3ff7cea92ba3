// Reading the account mails the SMTP inbox received: the link a mail carries, as a path.

import { waitFor } from "./app.ts";
import type { Inbox, Received } from "./inbox.ts";

/** The path of the link labelled `label` in a mail's text (`Label: url`). */
export function linkIn(mail: Received, label: string): string {
  const url = new RegExp(`^${label}: (\\S+)$`, "m").exec(mail.text)?.[1];
  if (!url) throw new Error(`no ${label} link in:\n${mail.text}`);
  return new URL(url).pathname;
}

/** Waits for the `count`-th mail to `address` whose subject matches, as the SMTP server received it. */
export async function mailTo(inbox: Inbox, address: string, subject: RegExp, count = 1): Promise<Received> {
  return waitFor(async () => {
    const mails = inbox.to(address).filter((mail) => subject.test(mail.subject));
    return mails.length >= count ? mails[count - 1]! : null;
  }, 30_000);
}
