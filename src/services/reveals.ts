// A secret a browser's form made, shown once on a page of its own. The form's POST stashes
// it here (sealed) and redirects to `/secrets/:id`; that GET empties the row as it shows
// it, so a reload (or Back) finds "shown once" instead of the secret, and a reload of the
// form's page re-posts nothing. Never in a cookie, a URL or a log: only its row id travels.
import type { Db } from "../db/prisma.ts";
import { newId } from "../lib/ids.ts";
import { open, revealAad, seal } from "../lib/secrets.ts";
import { keyring } from "./money/keyring.ts";

/** Long enough for the redirect to land; a page never shown within it is deleted unseen. */
export const REVEAL_MINUTES = 10;

export interface Reveal {
  label: string;
  /** The page the person came from, to go back to. */
  location: string;
  secret: string;
  /** Markdown shown with it (how to use it), which may quote it. */
  help?: string;
}

export async function stashSecret(db: Db, session: { tenantId: string; sessionId: string }, reveal: Reveal) {
  const id = newId(24);
  const sealed = seal(
    keyring().master,
    JSON.stringify({ secret: reveal.secret, help: reveal.help }),
    revealAad(session.tenantId, id),
  );
  await db.secretReveal.create({
    data: {
      id,
      tenantId: session.tenantId,
      sessionId: session.sessionId,
      label: reveal.label,
      location: reveal.location,
      sealed: new Uint8Array(sealed.ciphertext),
      keyVersion: sealed.keyVersion,
      expiresAt: new Date(Date.now() + REVEAL_MINUTES * 60_000),
    },
  });
  return id;
}

export type Taken = { shown: false; reveal: Reveal } | { shown: true; label: string; location: string };

/**
 * The secret, the one time: the statement that reads it empties the row, so of two loads at
 * once one shows it and the other says it was shown. Null for another session's, an unknown
 * or an expired one (one answer for all).
 */
export async function takeSecret(
  db: Db,
  session: { tenantId: string; sessionId: string; id: string },
): Promise<Taken | null> {
  const [row] = await db.$queryRaw<
    { label: string; location: string; sealed: Uint8Array | null; key_version: number }[]
  >`
    WITH old AS (
      SELECT id, sealed FROM secret_reveals
      WHERE id = ${session.id} AND tenant_id = ${session.tenantId} AND session_id = ${session.sessionId} AND expires_at > now()
      FOR UPDATE)
    UPDATE secret_reveals r SET sealed = NULL, shown_at = coalesce(r.shown_at, now())
    FROM old WHERE r.id = old.id
    RETURNING r.label, r.location, old.sealed, r.key_version`;
  if (!row) return null;
  if (!row.sealed) return { shown: true, label: row.label, location: row.location };
  const plain = open(
    keyring().master,
    { ciphertext: Buffer.from(row.sealed), keyVersion: row.key_version },
    revealAad(session.tenantId, session.id),
  );
  const { secret, help } = JSON.parse(plain) as { secret: string; help?: string };
  return { shown: false, reveal: { label: row.label, location: row.location, secret, help } };
}

/** Rows past their expiry, shown or not (the maintenance job). */
export async function pruneReveals(db: Db): Promise<number> {
  return (await db.secretReveal.deleteMany({ where: { expiresAt: { lte: new Date() } } })).count;
}
