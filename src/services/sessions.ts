// A person's sessions: one row per sign-in, only a hash of the cookie's token stored. A session
// ends at the first of its limits: idle (no request for SESSION_IDLE_HOURS) or absolute
// (SESSION_ABSOLUTE_HOURS after sign-in, however busy), or when it is ended (sign-out, the
// security page, a password change or reset, a deactivation) — ending deletes the row, so the
// cookie is dead on its next request.
import type { Db } from "../db/prisma.ts";
import type { SessionStage, SignInMethod } from "../generated/prisma/client.ts";
import { newId, randomToken, sha256 } from "../lib/ids.ts";

/**
 * A session short of full (the second step, enrolment) lives this long: enough to open an
 * authenticator app, too short to be worth stealing.
 */
export const HALF_SESSION_MINUTES = 10;

/** Seen at most this often: a person clicking around should not write a row per request. */
const LAST_SEEN_RESOLUTION_MS = 60_000;

export interface SessionLimits {
  idleHours: number;
  absoluteHours: number;
}

/** What the security page shows of where a session signed in from. */
export interface SignInFrom {
  userAgent: string;
  ipAddress: string;
}

export async function createSession(
  db: Db,
  tenantId: string,
  userId: string,
  limits: SessionLimits,
  from: SignInFrom,
  how: { stage?: SessionStage; method?: SignInMethod } = {},
) {
  const token = randomToken(32);
  const stage = how.stage ?? "full";
  const expiresAt = new Date(
    Date.now() + (stage === "full" ? limits.absoluteHours * 3600_000 : HALF_SESSION_MINUTES * 60_000),
  );
  // Not signed in yet: a half session does not count as the person being seen.
  if (stage === "full")
    await db.user.updateMany({ where: { id: userId, tenantId }, data: { lastSeenAt: new Date() } });
  const row = await db.session.create({
    data: {
      id: newId(),
      tenantId,
      userId,
      tokenHash: sha256(token),
      expiresAt,
      // Bounded: a header is whatever the client sends.
      userAgent: from.userAgent.slice(0, 500),
      ipAddress: from.ipAddress.slice(0, 100),
      stage,
      method: how.method ?? "password",
    },
  });
  return { token, expiresAt, id: row.id };
}

/**
 * A half session that passed its step becomes full, under a new token: whatever saw the
 * old cookie (before the second factor) holds nothing. Null when it is gone or already full.
 */
export async function promoteSession(db: Db, id: string, limits: SessionLimits) {
  const token = randomToken(32);
  const expiresAt = new Date(Date.now() + limits.absoluteHours * 3600_000);
  const { count } = await db.session.updateMany({
    where: { id, stage: { not: "full" }, expiresAt: { gt: new Date() } },
    data: { stage: "full", tokenHash: sha256(token), expiresAt, lastSeenAt: new Date() },
  });
  return count ? { token, expiresAt } : null;
}

/**
 * A live session of a live person in this tenant, or null; touches its last-seen time now and
 * then. Its `stage` says whether it is signed in (full) or on the way (plugins/auth.ts).
 */
export async function findSession(db: Db, tenantId: string, token: string, limits: SessionLimits) {
  const session = await db.session.findUnique({
    where: { tokenHash: sha256(token) },
    include: { user: true },
  });
  const now = Date.now();
  if (
    !session ||
    session.tenantId !== tenantId ||
    session.expiresAt.getTime() <= now ||
    session.lastSeenAt.getTime() + limits.idleHours * 3600_000 <= now ||
    session.user.archivedAt ||
    session.user.deactivatedAt ||
    session.user.kind !== "person"
  )
    return null;
  if (now - session.lastSeenAt.getTime() > LAST_SEEN_RESOLUTION_MS) {
    // The person's too, at the same pace: it outlives the session (the people page shows it).
    const seen = new Date(now);
    await db.session.updateMany({ where: { id: session.id }, data: { lastSeenAt: seen } });
    await db.user.updateMany({ where: { id: session.userId }, data: { lastSeenAt: seen } });
  }
  return session;
}

export async function deleteSession(db: Db, id: string) {
  await db.session.deleteMany({ where: { id } });
}

/** Ends every session of a person but `keep` (the one asking, after a password change): returns how many. */
export async function endSessions(db: Db, tenantId: string, userId: string, keep?: string): Promise<number> {
  const { count } = await db.session.deleteMany({
    where: { tenantId, userId, ...(keep && { id: { not: keep } }) },
  });
  return count;
}

/** Sessions past either limit, for the maintenance job: they answer nothing, so they can go. */
export async function tidySessions(db: Db, limits: SessionLimits): Promise<number> {
  const idleSince = new Date(Date.now() - limits.idleHours * 3600_000);
  const { count } = await db.session.deleteMany({
    where: { OR: [{ expiresAt: { lte: new Date() } }, { lastSeenAt: { lte: idleSince } }] },
  });
  return count;
}

/**
 * "Firefox on Linux" from a User-Agent, simply: the browser and system a person recognises
 * their own session by. Order matters: Edge and Opera say Chrome too, Chrome says Safari.
 */
export function browserName(userAgent: string): string {
  const browsers: [RegExp, string][] = [
    [/Edg(e|A|iOS)?\//, "Edge"],
    [/OPR\/|Opera/, "Opera"],
    [/Firefox\/|FxiOS\//, "Firefox"],
    [/Chrome\/|CriOS\/|Chromium\//, "Chrome"],
    [/Safari\//, "Safari"],
    [/curl\//, "curl"],
  ];
  const systems: [RegExp, string][] = [
    [/Android/, "Android"],
    [/iPhone|iPad|iPod/, "iOS"],
    [/Windows/, "Windows"],
    [/Mac OS X|Macintosh/, "macOS"],
    [/CrOS/, "ChromeOS"],
    [/Linux/, "Linux"],
  ];
  const browser = browsers.find(([pattern]) => pattern.test(userAgent))?.[1];
  const system = systems.find(([pattern]) => pattern.test(userAgent))?.[1];
  if (!browser) return system ? `A browser on ${system}` : "Unknown browser";
  return system ? `${browser} on ${system}` : browser;
}
