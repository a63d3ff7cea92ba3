// Personal API tokens: `cadre_<prefix>_<secret>`. Only a sha256 of the whole token is
// stored; the prefix is kept so people can tell their tokens apart in the list.
import type { Db } from "../db/prisma.ts";
import type { TokenScope } from "../generated/prisma/client.ts";
import { newId, randomToken, sha256 } from "../lib/ids.ts";

const LAST_USED_RESOLUTION_MS = 60_000;

export interface TokenOptions {
  /** What it may do (services/registry/token-scope.ts); the column's default, `act`, when absent. */
  scope?: TokenScope;
  /** When it stops working; null or absent: until revoked. */
  expiresAt?: Date | null;
}

export async function createApiToken(
  db: Db,
  tenantId: string,
  userId: string,
  name: string,
  opts: TokenOptions = {},
) {
  const prefix = newId(8);
  const token = `cadre_${prefix}_${randomToken(24)}`;
  const row = await db.apiToken.create({
    data: {
      id: newId(),
      tenantId,
      userId,
      name,
      prefix,
      tokenHash: sha256(token),
      ...(opts.scope && { scope: opts.scope }),
      expiresAt: opts.expiresAt ?? null,
    },
  });
  return { token, row };
}

/** The token's user, id and scope, when the token is live and belongs to this tenant; null otherwise. */
export async function verifyApiToken(db: Db, tenantId: string, token: string) {
  if (!/^cadre_[a-z0-9]{8}_[A-Za-z0-9_-]{20,}$/.test(token)) return null;
  const row = await db.apiToken.findUnique({
    where: { tokenHash: sha256(token) },
    include: { user: { include: { parent: { select: { deactivatedAt: true } } } } },
  });
  if (!row || row.revokedAt || row.tenantId !== tenantId || row.user.archivedAt) return null;
  // A person let go stops at once, and so does every agent of theirs acting with a token.
  if (row.user.deactivatedAt || row.user.parent?.deactivatedAt) return null;
  if (row.expiresAt && row.expiresAt <= new Date()) return null;
  // Touch last-used at most once a minute: a busy agent should not write on every request.
  if (!row.lastUsedAt || Date.now() - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await db.apiToken.update({ where: { id: row.id }, data: { lastUsedAt: new Date() } });
  }
  const { parent: _parent, ...user } = row.user;
  return { user, tokenId: row.id, scope: row.scope, label: row.label, agentLabel: user.agentLabel };
}
