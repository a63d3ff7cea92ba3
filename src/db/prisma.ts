import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import type { Config } from "../config.ts";
import { Prisma, PrismaClient } from "../generated/prisma/client.ts";
import { ConflictError } from "../lib/errors.ts";

export type { Prisma } from "../generated/prisma/client.ts";
export { PrismaClient };

/** A transaction client or the root client: services accept either. */
export type Db = Omit<PrismaClient, "$connect" | "$disconnect" | "$on" | "$transaction" | "$extends">;

/** Distinct statement texts a process names; past that (createMany batches vary in size) they go unnamed. */
const MAX_NAMED_STATEMENTS = 500;

/**
 * Names each distinct SQL text, so a connection parses it once and Postgres can reuse its
 * plan instead of planning it on every call: the agent worker's hot statements (the
 * ledger's, a studio's page) cost more to plan than to run. The names live per process,
 * like the connections that prepared them.
 */
function statementNamer(max = MAX_NAMED_STATEMENTS) {
  const names = new Map<string, string>();
  return (query: { sql: string }): string => {
    let name = names.get(query.sql);
    if (name === undefined && names.size < max) {
      name = `cadre_${names.size}`;
      names.set(query.sql, name);
    }
    // Unnamed: pg runs it as an unnamed statement, parsed and planned each time.
    return name as string;
  };
}

// The pool and statement names behind each root client, for `hotQuery`.
const pools = new WeakMap<
  object,
  {
    pool: pg.Pool;
    writes: pg.Pool;
    name?: (query: { sql: string }) => string;
    /** Interactive transactions' limits (ms): a hot transaction waits for a connection and runs its statements within them too. */
    transactions: { maxWait: number; timeout: number };
  }
>();

/** A hot transaction's handle (hotTransaction) and the connection it runs on, with its client's pool entry. */
const txClients = new WeakMap<object, { client: pg.PoolClient; name?: (query: { sql: string }) => string }>();

/** Connections for group commits (db/group-commit.ts): one per kind of group (claims, steps, calls), each with one batch in flight. */
const WRITE_CONNECTIONS = 3;

export interface PrismaOptions {
  namedStatements?: boolean;
  /** Interactive transactions: how long one waits for a connection, and may then take (ms). */
  transactions?: { maxWait: number; timeout: number };
}

/** The web's and the worker's client, sized and limited as configured. */
export function prismaFromConfig(
  config: Pick<
    Config,
    | "DATABASE_URL"
    | "DATABASE_POOL_SIZE"
    | "DATABASE_NAMED_STATEMENTS"
    | "DATABASE_TX_MAX_WAIT_MS"
    | "DATABASE_TX_TIMEOUT_MS"
  >,
): PrismaClient {
  return createPrisma(config.DATABASE_URL, config.DATABASE_POOL_SIZE, {
    namedStatements: config.DATABASE_NAMED_STATEMENTS,
    transactions: { maxWait: config.DATABASE_TX_MAX_WAIT_MS, timeout: config.DATABASE_TX_TIMEOUT_MS },
  });
}

/** Transaction limits when none are configured: config.ts's defaults (DATABASE_TX_*). */
const TRANSACTIONS = { maxWait: 20_000, timeout: 15_000 };

/**
 * A connection the server closes (a restart, pg_terminate_backend) leaves the pool, and the
 * next statement opens another; a statement in flight fails with a transient error. pg also
 * emits the loss as an `error` event on the client, and one that finds no listener crashes
 * the process: a fresh-clone CI run once died of a terminated backend's error (run-faults),
 * on a client with none. Every client, and the pool, get one that does nothing.
 */
function survivingPool(pool: pg.Pool): pg.Pool {
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

export function createPrisma(databaseUrl: string, max = 10, opts: PrismaOptions = {}): PrismaClient {
  const pool = survivingPool(new pg.Pool({ connectionString: databaseUrl, max }));
  const name = opts.namedStatements === false ? undefined : statementNamer();
  const adapter = new PrismaPg(pool, { statementNameGenerator: name, disposeExternalPool: true });
  const client = new PrismaClient({ adapter, transactionOptions: opts.transactions ?? TRANSACTIONS });
  // The group commits write on connections of their own, so the steps of running runs never
  // queue behind a burst of claims or page reads for the shared pool: in the benchmark's
  // ramp, 200 runs' first steps were recorded only after all 200 claims, and each run's
  // second step waited for its first. Opened when first used (a web process never does).
  const writes = survivingPool(new pg.Pool({ connectionString: databaseUrl, max: WRITE_CONNECTIONS }));
  const disconnect = client.$disconnect.bind(client);
  client.$disconnect = async () => {
    await disconnect();
    // Prisma ends the pool only if it ever used it: a client that ran nothing but hot
    // statements would otherwise keep its connections.
    if (!pool.ending) await pool.end();
    await writes.end();
  };
  pools.set(client, { pool, writes, name, transactions: opts.transactions ?? TRANSACTIONS });
  return client;
}

/**
 * Runs a statement on the client's pool directly, bypassing the Prisma client's runtime,
 * which costs about 0.3 ms of CPU per statement (more with many parameters): for the few
 * statements every agent step runs. A transaction client has no pool of its own, so there
 * the statement goes through Prisma. The two paths type results differently (int8 is a
 * bigint through Prisma, a string through pg), so hot statements return int, text, boolean
 * or json, and callers convert counts with Number() or BigInt(). Dates are sent as UTC
 * ISO strings, which is how Prisma writes them to zone-less timestamp columns.
 */
export async function hotQuery<T>(
  db: Db,
  sql: Prisma.Sql,
  options: { groupCommit?: boolean } = {},
): Promise<T[]> {
  const direct = pools.get(db);
  const inTx = direct ? undefined : txClients.get(db);
  if (!direct && !inTx) return db.$queryRaw<T[]>(sql);
  const values = sql.values.map((v) => (v instanceof Date ? v.toISOString() : v));
  const target = inTx ? inTx.client : options.groupCommit ? direct!.writes : direct!.pool;
  // Sql's text is a getter that joins its parts on every read: joined once, for the name and pg alike.
  const text = sql.text;
  const res = await target.query({ name: (direct ?? inTx)!.name?.({ sql: text }), text, values });
  return res.rows as T[];
}

/** What a hot transaction's handle answers to anything but hotQuery: a bug, said at once. */
const HOT_ONLY: ProxyHandler<object> = {
  get: (_, prop) => {
    throw new Error(`a hot transaction runs hot statements only (hotQuery), not ${String(prop)}`);
  },
};

/**
 * `fn` in a transaction on one pooled connection, its statements sent by hotQuery: for short
 * transactions on a hot path whose every statement is a hot one (a trigger's guards), which
 * through Prisma's interactive transaction cost its runtime's work per statement and a round
 * trip each for BEGIN and COMMIT. The handle answers nothing but hotQuery. In a caller's
 * transaction (`db` is one) it runs there, as inTransaction does. Each statement is held to
 * the interactive transactions' timeout (DATABASE_TX_TIMEOUT_MS), a lock wait among them.
 */
export async function hotTransaction<T>(db: PrismaClient | Db, callback: (tx: Db) => Promise<T>): Promise<T> {
  const direct = pools.get(db);
  if (!direct) return inTransaction(db, callback);
  const client = await connectWithin(direct.pool, direct.transactions.maxWait);
  const tx = new Proxy({}, HOT_ONLY) as Db;
  txClients.set(tx, { client, name: direct.name });
  let broken: Error | undefined;
  try {
    await client.query(`BEGIN; SET LOCAL statement_timeout = ${Math.round(direct.transactions.timeout)}`);
    const out = await callback(tx);
    await client.query("COMMIT");
    return out;
  } catch (err) {
    // A connection that cannot even roll back is closed, not handed to the next caller.
    await client.query("ROLLBACK").catch((error: Error) => {
      broken = error;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * A pooled connection, or a transient error after `ms` (lib/transient.ts knows its words), as
 * Prisma's interactive transactions give up after their maxWait: a request behind an
 * exhausted pool gets a 503 and a job is retried, rather than waiting without end. A
 * connection that comes after the wait goes straight back to the pool.
 */
function connectWithin(pool: pg.Pool, milliseconds: number): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      reject(
        new Error(`Unable to start a transaction: no database connection was free within ${milliseconds} ms`),
      );
    }, milliseconds);
    pool.connect().then(
      (client) => {
        clearTimeout(timer);
        if (late) client.release();
        else resolve(client);
      },
      (err: Error) => {
        clearTimeout(timer);
        if (!late) reject(err);
      },
    );
  });
}

/** Takes the transaction-scoped advisory lock named `key` (a hot statement: hotTransaction runs it). */
export async function advisoryLock(tx: Db, key: string): Promise<void> {
  // In FROM, so the row has a column Prisma can read (pg_advisory_xact_lock returns void).
  await hotQuery(tx, Prisma.sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtext(${key}))`);
}

/** Whether `db` is a root client with its own pool (hotQuery's direct path), not a transaction. */
export const ownsPool = (db: Db) => pools.has(db);

/** A concurrent request inserted the same key after our check: a conflict, not a 500. */
export function conflictOnDuplicate(message: string) {
  return (error: unknown): never => {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002")
      throw new ConflictError(message);
    throw error;
  };
}

/** Runs `fn` in `db`'s transaction when `db` is one, else in a new transaction of its own. */
export function inTransaction<T>(db: PrismaClient | Db, work: (tx: Db) => Promise<T>): Promise<T> {
  return "$transaction" in db ? db.$transaction(work) : work(db);
}
