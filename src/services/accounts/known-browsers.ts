// The browsers a person signed in from, as hashes of a long-lived random cookie (never the
// cookie itself): a sign-in from one not among them is a security event mailed to them, so a
// stranger who has their password is noticed. The first sign-in ever is no news.
import type { Db } from "../../db/prisma.ts";
import type { User } from "../../generated/prisma/client.ts";
import { sha256 } from "../../lib/ids.ts";
import { browserName, type SignInFrom } from "../sessions.ts";

/** Enough for every browser a person really uses; the oldest are forgotten first. */
const KEPT = 30;

/**
 * Records that `user` signed in from the browser `browserId`. Returns what to tell them
 * when it is a browser they never signed in from before (and not their first), else null.
 */
export async function noteBrowser(
  db: Db,
  user: Pick<User, "id" | "knownBrowsers">,
  browserId: string,
  from: SignInFrom,
): Promise<string | null> {
  const hash = sha256(`browser:${browserId}`);
  const known = Array.isArray(user.knownBrowsers) ? (user.knownBrowsers as string[]) : [];
  if (known.includes(hash)) return null;
  await db.user.update({ where: { id: user.id }, data: { knownBrowsers: [...known, hash].slice(-KEPT) } });
  if (!known.length) return null;
  return `A new sign-in to your account from ${browserName(from.userAgent)} at ${from.ipAddress || "an unknown address"}.`;
}
