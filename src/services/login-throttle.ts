// Failed logins, counted per workspace for the account (a hash of the email as typed, known
// or not: people type passwords into the wrong field) and for the client's address, in PostgreSQL: every web process shares the counts, they
// survive restarts, and a login still works when Redis is away (the web's Redis client is
// a producer that fails fast, which would leave the throttle open or logins shut).
//
// A window starts at its first attempt and lasts LOGIN_WINDOW_SECONDS. Attempts are
// counted before the password is checked, in one upsert of both rows, so parallel guesses
// cannot all slip past the limit; a success takes its attempt back. Once a window holds
// the limit's worth of failures, further attempts are refused until it ends:
// - an account's window never grows, so whoever hammers someone's account can keep them
//   out for at most one window after they stop (there is no permanent lock to abuse);
// - an address's next window doubles when it fills again within a window of the last
//   one ending, up to LOGIN_ADDRESS_MAX_LOCK_SECONDS: the backoff lands on the guesser.
// A success resets the account, not the address: anyone with an account of their own
// could otherwise clear their address's count between guesses at other people's.
import type { Config } from "../config.ts";
import type { Db } from "../db/prisma.ts";
import { Prisma } from "../generated/prisma/client.ts";
import { sha256 } from "../lib/ids.ts";

export type ThrottleSettings = Pick<
  Config,
  | "LOGIN_ACCOUNT_MAX_FAILURES"
  | "LOGIN_ADDRESS_MAX_FAILURES"
  | "LOGIN_WINDOW_SECONDS"
  | "LOGIN_ADDRESS_MAX_LOCK_SECONDS"
>;

/**
 * The `tenantId` of what is counted before there is a workspace: sign-up at the base host
 * (routes/signup.ts), per address asked about and per client, as a login is.
 */
export const NO_WORKSPACE = "";

export interface LoginAttempt {
  tenantId: string;
  email: string;
  address: string;
}

export interface AttemptCount {
  /** Refused before the password is looked at: seconds until the lock ends. */
  waitSeconds?: number;
  /** If this attempt fails, the lock it completes, in seconds. */
  lockSeconds?: number;
}

/** SQL over a row `t`: its limit, when its window ends, and when it stops mattering. */
function rules(throttleSettings: ThrottleSettings) {
  const window = throttleSettings.LOGIN_WINDOW_SECONDS;
  const cap = Math.max(throttleSettings.LOGIN_ADDRESS_MAX_LOCK_SECONDS, window);
  // An address's window grows; every other scope (an account, a person's re-confirmations) keeps its own.
  const limit = Prisma.sql`(CASE t.scope WHEN 'address' THEN ${throttleSettings.LOGIN_ADDRESS_MAX_FAILURES}::int
    ELSE ${throttleSettings.LOGIN_ACCOUNT_MAX_FAILURES}::int END)`;
  const span = Prisma.sql`make_interval(secs => CASE t.scope WHEN 'address'
    THEN LEAST(${window}::float8 * power(2, t.strikes), ${cap}::float8) ELSE ${window}::float8 END)`;
  const windowEnd = Prisma.sql`(t.window_start + ${span})`;
  // Past this, the next attempt starts afresh with no strikes: the row can go.
  const forgotten = Prisma.sql`(${windowEnd} + make_interval(secs => ${window}::float8))`;
  return { limit, windowEnd, forgotten };
}

/** Counts an attempt for its account and its address, before the password is checked. */
export async function countAttempt(
  db: Db,
  settings: ThrottleSettings,
  loginAttempt: LoginAttempt,
): Promise<AttemptCount> {
  const { limit, windowEnd, forgotten } = rules(settings);
  const ended = Prisma.sql`now() >= ${windowEnd}`;
  // Both rows in one statement, always account then address, so concurrent attempts lock
  // them in the same order.
  const rows = await db.$queryRaw<{ failures: number; lim: number; seconds: number }[]>`
    INSERT INTO login_throttles AS t (tenant_id, scope, key, failures, window_start, strikes)
    VALUES (${loginAttempt.tenantId}, 'account', ${sha256(loginAttempt.email)}, 1, now(), 0),
           (${loginAttempt.tenantId}, 'address', ${addressKey(loginAttempt.address)}, 1, now(), 0)
    ON CONFLICT (tenant_id, scope, key) DO UPDATE SET
      failures = CASE WHEN ${ended} THEN 1 ELSE t.failures + 1 END,
      window_start = CASE WHEN ${ended} THEN now() ELSE t.window_start END,
      strikes = CASE WHEN NOT (${ended}) THEN t.strikes
                     WHEN t.failures >= ${limit} AND now() < ${forgotten} THEN LEAST(t.strikes + 1, 30)
                     ELSE 0 END
    RETURNING t.failures, ${limit} AS lim,
      GREATEST(1, ceil(extract(epoch FROM ${windowEnd} - now())))::int AS seconds`;
  const wait = rows.filter((r) => r.failures > r.lim).map((r) => r.seconds);
  if (wait.length) return { waitSeconds: Math.max(...wait) };
  const lock = rows.filter((r) => r.failures >= r.lim).map((r) => r.seconds);
  return lock.length ? { lockSeconds: Math.max(...lock) } : {};
}

/** The password was right: the account starts over, and the address gets its attempt back. */
export async function loginSucceeded(db: Db, attempt: LoginAttempt): Promise<void> {
  // Two statements, one row each: locking both at once in another order than
  // countAttempt's could deadlock with it.
  await db.$executeRaw`DELETE FROM login_throttles
    WHERE tenant_id = ${attempt.tenantId} AND scope = 'account' AND key = ${sha256(attempt.email)}`;
  await db.$executeRaw`UPDATE login_throttles SET failures = failures - 1
    WHERE tenant_id = ${attempt.tenantId} AND scope = 'address' AND key = ${addressKey(attempt.address)} AND failures > 0`;
}

/** Whose re-confirmations are counted (accounts/step-up.ts): a person, in their workspace. */
export interface ConfirmAttempt {
  tenantId: string;
  userId: string;
}

/**
 * A re-confirmation before a sensitive change, counted as an account's login is (same limit,
 * same window that never grows) but in its own scope, `confirm`, per person: whoever holds a
 * stolen session can guess no faster than at the login form, and mistakes at one never lock
 * the other. Counted before the proof is checked, like a login.
 */
export async function countConfirmAttempt(
  db: Db,
  settings: ThrottleSettings,
  attempt: ConfirmAttempt,
): Promise<AttemptCount> {
  const { limit, windowEnd } = rules(settings);
  const ended = Prisma.sql`now() >= ${windowEnd}`;
  const [row] = await db.$queryRaw<{ failures: number; lim: number; seconds: number }[]>`
    INSERT INTO login_throttles AS t (tenant_id, scope, key, failures, window_start, strikes)
    VALUES (${attempt.tenantId}, 'confirm', ${attempt.userId}, 1, now(), 0)
    ON CONFLICT (tenant_id, scope, key) DO UPDATE SET
      failures = CASE WHEN ${ended} THEN 1 ELSE t.failures + 1 END,
      window_start = CASE WHEN ${ended} THEN now() ELSE t.window_start END
    RETURNING t.failures, ${limit} AS lim,
      GREATEST(1, ceil(extract(epoch FROM ${windowEnd} - now())))::int AS seconds`;
  if (!row) return {};
  if (row.failures > row.lim) return { waitSeconds: row.seconds };
  return row.failures >= row.lim ? { lockSeconds: row.seconds } : {};
}

/** The proof was right: the person's re-confirmations start over. */
export async function confirmSucceeded(db: Db, attempt: ConfirmAttempt): Promise<void> {
  await db.$executeRaw`DELETE FROM login_throttles
    WHERE tenant_id = ${attempt.tenantId} AND scope = 'confirm' AND key = ${attempt.userId}`;
}

/** Deletes rows that no longer change anything (the maintenance job runs it). */
export async function tidyLoginThrottles(db: Db, settings: ThrottleSettings): Promise<number> {
  const { forgotten } = rules(settings);
  // Every forgotten row started at least two windows ago: the index narrows it to those.
  return db.$executeRaw`DELETE FROM login_throttles t
    WHERE t.window_start < now() - make_interval(secs => ${2 * settings.LOGIN_WINDOW_SECONDS}::float8)
      AND now() >= ${forgotten}`;
}

/**
 * The key an address is counted under. An IPv6 client usually holds a whole /64, so
 * counting single addresses would give it billions of limits.
 */
export function addressKey(address: string): string {
  const bare = address.replace(/%.*$/, "").toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  if (mapped) return mapped[1]!;
  if (!bare.includes(":")) return bare;
  const [head = "", tail = ""] = bare.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = bare.includes("::")
    ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}
