import type { Db } from "../db/prisma.ts";
import { newId, randomToken, sha256 } from "../lib/ids.ts";

export async function createSession(db: Db, tenantId: string, userId: string, ttlHours: number) {
  const token = randomToken(32);
  const expiresAt = new Date(Date.now() + ttlHours * 3600_000);
  await db.session.create({ data: { id: newId(), tenantId, userId, tokenHash: sha256(token), expiresAt } });
  return { token, expiresAt };
}

/** A live session of a live person in this tenant, or null. */
export async function findSession(db: Db, tenantId: string, token: string) {
  const s = await db.session.findUnique({ where: { tokenHash: sha256(token) }, include: { user: true } });
  if (
    !s ||
    s.tenantId !== tenantId ||
    s.expiresAt < new Date() ||
    s.user.archivedAt ||
    s.user.kind !== "person"
  )
    return null;
  return s;
}

export async function deleteSession(db: Db, id: string) {
  await db.session.deleteMany({ where: { id } });
}
