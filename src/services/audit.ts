// The audit trail of API tokens: one row per call made with a token (plugins/audit.ts says
// what a row holds). A request never waits for its row: rows are buffered in the web process
// and written in batches, every `flushMs` or as soon as `batchSize` are waiting, and on
// shutdown. A batch the database could not take for a passing reason stays in the buffer and
// is tried again at the next flush; one it refused for good is dropped and logged, so one bad
// row cannot block the rest forever.
import type { FastifyBaseLogger } from "fastify";
import { type Db, hotQuery } from "../db/prisma.ts";
import { Prisma } from "../generated/prisma/client.ts";
import { newId } from "../lib/ids.ts";
import { storable } from "../lib/text.ts";
import { isTransient } from "../lib/transient.ts";
import { auditDropped } from "../metrics/metrics.ts";

export interface AuditRow {
  tenantId: string;
  tokenId: string;
  actorId: string;
  method: string;
  page?: string;
  tool?: string;
  action?: string;
  status: number;
  latencyMs: number;
  at: Date;
}

/** While the database is away the buffer grows to this, then its oldest rows go first. */
const MAX_BUFFERED = 50_000;
const MAX_TEXT = 500;

export interface AuditWriter {
  push(row: AuditRow): void;
  /** Writes what is buffered now (tests read the trail after it). */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left, trying for up to `withinMs`. */
  close(withinMs?: number): Promise<void>;
}

// What a client sent may hold text Postgres refuses (a NUL in a path): kept, marked.
const text = (value: string | undefined) =>
  value === undefined ? null : storable(value, "\ufffd").slice(0, MAX_TEXT);

/** Inserts a batch. A row whose token is gone by now (its tenant deleted) is skipped, never the batch. */
async function insert(db: Db, rows: AuditRow[]): Promise<void> {
  const input = rows.map((auditRow) => ({
    id: newId(),
    tenant_id: auditRow.tenantId,
    token_id: auditRow.tokenId,
    actor_id: auditRow.actorId,
    method: auditRow.method,
    page: text(auditRow.page),
    tool: text(auditRow.tool),
    action: text(auditRow.action),
    status: auditRow.status,
    latency_ms: Math.round(auditRow.latencyMs),
    created_at: auditRow.at.toISOString(),
  }));
  await hotQuery(
    db,
    Prisma.sql`
    INSERT INTO api_calls (id, tenant_id, token_id, actor_id, method, page, tool, action, status, latency_ms, created_at)
    SELECT x.id, x.tenant_id, x.token_id, x.actor_id, x.method, x.page, x.tool, x.action, x.status, x.latency_ms, x.created_at
    FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS x(id text, tenant_id text, token_id text,
      actor_id text, method text, page text, tool text, action text, status int, latency_ms int, created_at timestamp)
    JOIN api_tokens t ON t.id = x.token_id AND t.tenant_id = x.tenant_id`,
  );
}

export function createAuditWriter(options: {
  db: Db;
  log: FastifyBaseLogger;
  flushMs: number;
  batchSize: number;
}): AuditWriter {
  let buffer: AuditRow[] = [];
  let running: Promise<void> | null = null;
  let failingSince: number | null = null;

  function drop(count: number, why: string, err?: unknown) {
    auditDropped.inc(count);
    options.log.error({ err, rows: count }, `audit trail: ${count} rows dropped (${why})`);
  }

  async function writeAll(): Promise<void> {
    while (buffer.length) {
      const batch = buffer.splice(0, options.batchSize);
      try {
        await insert(options.db, batch);
      } catch (err) {
        if (!isTransient(err)) {
          drop(batch.length, "the database refused them", err);
          continue;
        }
        buffer = [...batch, ...buffer];
        if (failingSince === null) {
          failingSince = Date.now();
          options.log.warn(
            { err },
            "audit trail: the database is unavailable; keeping calls to write them later",
          );
        }
        return;
      }
      if (failingSince !== null) {
        options.log.info({ downMs: Date.now() - failingSince }, "audit trail: writing again");
        failingSince = null;
      }
    }
  }

  /** One write at a time; a flush asked for meanwhile waits for it, then writes what came since. */
  function flush(): Promise<void> {
    running ??= writeAll().finally(() => {
      running = null;
    });
    return running;
  }

  const timer = setInterval(() => void flush(), options.flushMs);
  timer.unref();

  return {
    push(row) {
      buffer.push(row);
      if (buffer.length > MAX_BUFFERED)
        drop(buffer.splice(0, buffer.length - MAX_BUFFERED).length, "buffer full");
      if (buffer.length >= options.batchSize) void flush();
    },
    flush,
    async close(withinMs = 5000) {
      clearInterval(timer);
      const until = Date.now() + withinMs;
      await flush();
      while (buffer.length && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        await flush();
      }
      if (buffer.length) drop(buffer.length, "still unwritten at shutdown");
    },
  };
}

/** The maintenance sweep: rows older than the retention, at most `limit` per sweep so no sweep runs long. */
export async function pruneApiCalls(db: Db, retentionDays: number, limit = 10_000): Promise<number> {
  return db.$executeRaw`DELETE FROM api_calls WHERE id IN (
    SELECT id FROM api_calls WHERE created_at < now() - make_interval(days => ${retentionDays}::int) LIMIT ${limit}::int)`;
}

/**
 * A token's calls, narrowed by `?status=` on its page: one status (`403`), or `refused`
 * (every 4xx: what a leaked token trying what it may not would leave). Anything else: all.
 */
export function callsWhere(tenantId: string, tokenId: string, status: string | undefined) {
  const base = { tenantId, tokenId };
  if (status === "refused") return { filter: "refused", where: { ...base, status: { gte: 400, lt: 500 } } };
  const code = /^[1-5]\d\d$/.test(status ?? "") ? Number(status) : null;
  return code ? { filter: String(code), where: { ...base, status: code } } : { filter: null, where: base };
}
