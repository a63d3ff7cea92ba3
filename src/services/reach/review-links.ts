// One-click review from a mail. A link names one pending action, the params it was asked
// with, the person it was sent to and what it does (approve or reject). Its GET only shows
// the action (a mail scanner that follows it decides nothing); the signed-in recipient's one
// click decides through the same review as the approvals page, so exactly-once holds across
// the mail, the page and the API. Only the token's hash is kept; a link is used once and
// dies with its action's expiry or decision. A recipient who no longer manages the agent
// (removed from its studio, demoted, the agent handed on) holds a dead link: it shows
// nothing of the action and decides nothing, checked afresh on every GET and POST.
import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../../db/prisma.ts";
import { canonical } from "../../lib/canonical-json.ts";
import { ConflictError, ForbiddenError, NotFoundError } from "../../lib/errors.ts";
import { newId } from "../../lib/ids.ts";
import { managedBy } from "../agents/core/ownership.ts";

export type LinkDecision = "approve" | "reject";

const hashOf = (token: string) => createHash("sha256").update(token).digest("hex");
export const paramsHash = (params: unknown) => createHash("sha256").update(canonical(params)).digest("hex");

/** A review link's path, from its token (the token is in the mail only). */
export const reviewPath = (token: string) => `/review/${token}`;

/** Tokens for an approve and a reject link to one pending action, for one person; stored hashed. */
export async function mintReviewLinks(
  tx: Db,
  pending: { tenantId: string; pendingId: string; userId: string; params: unknown; expiresAt: Date },
): Promise<Record<LinkDecision, string>> {
  const tokens = {
    approve: randomBytes(24).toString("base64url"),
    reject: randomBytes(24).toString("base64url"),
  };
  await tx.reviewLink.createMany({
    data: (["approve", "reject"] as const).map((decision) => ({
      id: newId(),
      tenantId: pending.tenantId,
      pendingId: pending.pendingId,
      userId: pending.userId,
      decision,
      tokenHash: hashOf(tokens[decision]),
      paramsHash: paramsHash(pending.params),
      expiresAt: pending.expiresAt,
    })),
  });
  return tokens;
}

/** A link of this workspace by its token, with its action; null when it never existed. */
export async function findLink(db: Db, tenantId: string, token: string) {
  if (!/^[A-Za-z0-9_-]{16,64}$/.test(token)) return null;
  return db.reviewLink.findFirst({
    where: { tenantId, tokenHash: hashOf(token) },
    include: { pending: { include: { agent: true } }, user: { select: { handle: true } } },
  });
}
export type FoundLink = NonNullable<Awaited<ReturnType<typeof findLink>>>;

/** Whether `actorId` manages the link's agent now: the one owner rule, read afresh. */
export async function stillManages(db: Db, link: FoundLink, actorId: string): Promise<boolean> {
  const found = await db.user.count({
    where: { id: link.pending.agentId, tenantId: link.tenantId, ...managedBy(actorId) },
  });
  return found > 0;
}

/**
 * Why this link cannot decide now, in words (null: it can), checked for `actorId` at `now`;
 * `manages`: whether the actor manages the agent now (stillManages).
 */
export function linkRefusal(
  link: FoundLink,
  actorId: string,
  manages: boolean,
  now = new Date(),
): string | null {
  const pending = link.pending;
  if (link.userId !== actorId)
    return `This link was sent to @${link.user.handle}. Sign in as them, or review #${pending.id} on your approvals page.`;
  if (!manages)
    return `You no longer manage @${pending.agent.handle}: this link shows nothing of the action and decides nothing.`;
  if (link.usedAt) return `This link was already used, at ${link.usedAt.toISOString()}.`;
  if (pending.status !== "pending")
    return `#${pending.id} is already ${pending.status}: there is nothing left to decide.`;
  if (link.expiresAt <= now || pending.expiresAt <= now)
    return `This link expired with #${pending.id}, at ${pending.expiresAt.toISOString()}: the action will not run.`;
  if (paramsHash(pending.params) !== link.paramsHash)
    return `#${pending.id} changed since this link was sent: review it on its page.`;
  return null;
}

/**
 * Takes the link for its one use, in the review's transaction: a second use (or a second
 * click racing the first) finds it used and decides nothing.
 */
export async function useLink(
  tx: Db,
  tenantId: string,
  token: string,
  actorId: string,
  decision: LinkDecision,
) {
  const link = await findLink(tx, tenantId, token);
  if (!link) throw new NotFoundError("No such review link: check that the whole address was copied.");
  if (link.decision !== decision) throw new ConflictError(`This link is for “${link.decision}”.`);
  const manages = await stillManages(tx, link, actorId);
  const refusal = linkRefusal(link, actorId, manages);
  if (refusal)
    throw link.userId !== actorId || !manages ? new ForbiddenError(refusal) : new ConflictError(refusal);
  const taken = await tx.reviewLink.updateMany({
    where: { id: link.id, usedAt: null },
    data: { usedAt: new Date() },
  });
  if (!taken.count) throw new ConflictError("This link was already used.");
  return link;
}
