// Group commit for the writes an agent worker makes by the hundred: claims, steps and the
// ledger rows of LLM calls. Hundreds of runs in one worker each record a step a few times
// a second; one statement apiece made Postgres and the worker spend more on round trips,
// commits and wake-ups than on the rows. Writes submitted while a batch is in flight go
// together as the next batch, so a lone write is sent at once and a burst costs a few
// statements, not hundreds.
import pg from "pg";
import { Prisma } from "../generated/prisma/client.ts";
import { type Db, ownsPool } from "./prisma.ts";

/** Rows per statement: a step carries up to a few KB of page text. */
const MAX_BATCH = 64;

export interface GroupCommitOptions<T, R> {
  /** Writes a batch in one statement; returns one result per item, in order. */
  write(items: T[]): Promise<R[]>;
  /**
   * Items with the same key never share a batch, and keep their order: one statement
   * cannot upsert a row twice, and the second of an agent's calls must see the first's total.
   */
  key(item: T): string;
  max: number;
  /**
   * Whether a failed batch was rolled back, so its items may be written again one by one.
   * A lost connection says nothing of whether the batch committed: its items fail.
   */
  rolledBack(err: unknown): boolean;
}

interface Pending<T, R> {
  item: T;
  key: string;
  resolve(result: R): void;
  reject(error: unknown): void;
}

export function groupCommit<T, R>(groupCommitOptions: GroupCommitOptions<T, R>): (item: T) => Promise<R> {
  let queue: Pending<T, R>[] = [];
  let busy = false;

  async function send(batch: Pending<T, R>[]) {
    try {
      const results = await groupCommitOptions.write(batch.map((p) => p.item));
      for (const [index, pending] of batch.entries()) pending.resolve(results[index]!);
    } catch (err) {
      if (batch.length === 1 || !groupCommitOptions.rolledBack(err)) {
        for (const pending of batch) pending.reject(err);
        return;
      }
      // One bad item must not fail the others: each is written alone, and fails alone.
      await Promise.all(batch.map((p) => send([p])));
    }
  }

  function pump() {
    if (busy || !queue.length) return;
    const batch: Pending<T, R>[] = [];
    const rest: Pending<T, R>[] = [];
    const keys = new Set<string>();
    for (const pending of queue) {
      // Once a key waits, its later items wait too, so each key's items stay in order.
      if (batch.length < groupCommitOptions.max && !keys.has(pending.key)) batch.push(pending);
      else rest.push(pending);
      keys.add(pending.key);
    }
    queue = rest;
    busy = true;
    void send(batch).finally(() => {
      busy = false;
      pump();
    });
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, key: groupCommitOptions.key(item), resolve, reject });
      pump();
    });
}

/**
 * Writes an item through `write`: on a root client, in that client's group commit; in a
 * transaction, at once as a batch of one, since its statements belong to the transaction.
 * A statement Postgres answered with an error was rolled back; any other failure may have
 * committed.
 */
export function grouped<T, R>(options: {
  write(db: Db, items: T[]): Promise<R[]>;
  key(item: T): string;
}): (db: Db, item: T) => Promise<R> {
  const groups = new WeakMap<Db, (item: T) => Promise<R>>();
  return async (db, item) => {
    if (!ownsPool(db)) return (await options.write(db, [item]))[0]!;
    let group = groups.get(db);
    if (!group) {
      group = groupCommit({
        write: (items) => options.write(db, items),
        key: options.key,
        max: MAX_BATCH,
        rolledBack: (error) => error instanceof pg.DatabaseError,
      });
      groups.set(db, group);
    }
    return group(item);
  };
}

/**
 * `LIMIT n` for a batch's rows (`jsonb_to_recordset`), n the batch's size rounded up to a
 * power of two: a set-returning function is planned as 100 rows, so Postgres planned every
 * batch, of one row or ten, with hash joins over sequential scans of the runs, users and
 * keys (auto_explain in the 1,000-run benchmark), where a few index lookups do. Sized, each
 * size class is a statement of its own (7 at most), planned for about its rows.
 */
export function batchRows(count: number): Prisma.Sql {
  return Prisma.raw(`LIMIT ${2 ** Math.ceil(Math.log2(Math.max(1, count)))}`);
}
