// CSV export of the usage ledger: every call in the dashboard's 30 days (the same UTC days
// its tables sum, so the file adds up to the page), streamed in keyset-paged batches so a
// big tenant's export never sits in memory at once.
import { Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { PrismaClient } from "../db/prisma.ts";
import { Prisma } from "../generated/prisma/client.ts";
import { loadAgent } from "../services/agents/core/ownership.ts";
import { type UsageFilter, usageWhere, windowStart } from "../services/money/dashboard.ts";
import { usageFilter } from "../services/pages/usage.ts";
import { ctxOf } from "./page-context.ts";

const BATCH = 5000;
const HEADER = [
  "time_utc",
  "agent",
  "run_id",
  "step",
  "model",
  "priced",
  "key",
  "input_tokens",
  "cached_input_tokens",
  "output_tokens",
  "cost_usd",
  "latency_ms",
];

/** Quoted when needed; a leading = + - @ is defused so a spreadsheet never runs a label as a formula. */
export function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? "" : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

interface Row {
  id: string;
  created_at: Date;
  handle: string;
  run_id: string | null;
  step_number: number;
  model: string;
  priced: boolean;
  key: string | null;
  input_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  cost_micros: bigint;
  latency_ms: number;
}

async function* csvLines(db: PrismaClient, f: UsageFilter, from: Date): AsyncGenerator<string> {
  yield `${HEADER.join(",")}\n`;
  let after: { at: Date; id: string } | null = null;
  for (;;) {
    const page: Row[] = await db.$queryRaw<Row[]>`
      SELECT u.id, u.created_at, a.handle, u.run_id, u.step_number, u.model, u.priced,
             -- ASCII "...": spreadsheets that guess the encoding (Excel) would garble "…".
             CASE WHEN k.id IS NULL THEN 'shared' ELSE k.label || ' (...' || k.key_hint || ')' END AS key,
             u.input_tokens, u.cached_tokens, u.output_tokens, u.cost_micros, u.latency_ms
      FROM llm_usage u
      JOIN users a ON a.id = u.agent_id
      LEFT JOIN agent_api_keys k ON k.id = u.api_key_id
      WHERE ${usageWhere(f)} AND u.created_at >= ${from}
        ${after ? Prisma.sql`AND (u.created_at, u.id) > (${after.at}, ${after.id})` : Prisma.empty}
      ORDER BY u.created_at, u.id
      LIMIT ${BATCH}`;
    if (!page.length) return;
    yield page
      .map((row) =>
        [
          row.created_at.toISOString(),
          // The bare handle: with its `@` every agent cell would start like a formula and be defused.
          row.handle,
          row.run_id,
          row.step_number,
          row.model,
          row.priced,
          row.key,
          row.input_tokens,
          row.cached_tokens,
          row.output_tokens,
          (Number(row.cost_micros) / 1e6).toFixed(6),
          row.latency_ms,
        ]
          .map(csvCell)
          .join(","),
      )
      .join("\n")
      .concat("\n");
    const last = page[page.length - 1]!;
    after = { at: last.created_at, id: last.id };
    if (page.length < BATCH) return;
  }
}

export default async function usageCsvRoutes(app: FastifyInstance) {
  const send = async (req: FastifyRequest, f: UsageFilter, name: string) => {
    const now = new Date();
    const from = windowStart(now);
    const day = now.toISOString().slice(0, 10);
    return {
      body: Readable.from(csvLines(req.server.prisma, f, from)),
      filename: `${name}-usage-${day}.csv`,
    };
  };
  app.get<{ Params: { handle: string } }>("/subagents/:handle/usage.csv", async (req, reply) => {
    const ctx = ctxOf(req);
    const agent = await loadAgent(ctx, req.params.handle, { adminReads: true });
    const out = await send(req, { kind: "agent", tenantId: ctx.tenant.id, agentId: agent.id }, agent.handle);
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="${out.filename}"`)
      .send(out.body);
  });
  app.get<{ Querystring: Record<string, string> }>("/usage.csv", async (req, reply) => {
    const ctx = ctxOf(req);
    const f = usageFilter(ctx, req.query);
    const out = await send(req, f, f.kind === "tenant" ? ctx.tenant.subdomain : ctx.actor.handle);
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="${out.filename}"`)
      .send(out.body);
  });
}
