// The audit trail's HTTP side: after each call made with an API token is answered, its row
// (tenant, token, actor, what it asked for, status, latency, time) goes to the batched writer
// (services/audit.ts), so the answer never waits for it. A call refused before it was
// authenticated (a bad token) belongs to no token and has no row.
import fp from "fastify-plugin";
import type { Db } from "../db/prisma.ts";
import { targetOf } from "../http/page-target.ts";
import { type AuditWriter, createAuditWriter } from "../services/audit.ts";

/**
 * What a call asked for, as its audit row names it. The contract for every route a token can
 * call: set it in the handler (replace it, or fill its fields). The markdown routes set the
 * page and, at `<page>/actions/<name>`, the action, from their URL; /mcp sets the tool it
 * called and the page and action that tool read or ran. A call whose handler set nothing (one
 * refused before it ran: a 429) is recorded with the page its URL names.
 *
 * `status`: the call's own outcome when the HTTP answer carries several kinds of them (an
 * MCP tool's 403 travels in a 200 JSON-RPC answer); otherwise the answer's status is the row's.
 */
export interface AuditNote {
  page?: string;
  action?: string;
  tool?: string;
  status?: number;
}

declare module "fastify" {
  interface FastifyInstance {
    auditLog: AuditWriter;
  }
  interface FastifyRequest {
    audit: AuditNote;
  }
}

export default fp<{ db: Db; flushMs: number; batchSize: number }>(
  async (app, o) => {
    const writer = createAuditWriter({ db: o.db, log: app.log, flushMs: o.flushMs, batchSize: o.batchSize });
    app.decorate("auditLog", writer);
    app.decorateRequest("audit", null as unknown as AuditNote);
    app.addHook("onRequest", async (req) => {
      req.audit = {};
    });
    app.addHook("onResponse", async (req, reply) => {
      if (req.authVia !== "token" || !req.tokenId || !req.tenant || !req.actor) return;
      const { status, ...named } = req.audit;
      const note = named.page || named.tool ? named : fromUrl(req.url);
      // A refusal before the handler (401, 429) or an error past it stays the answer's own.
      const outcome = status !== undefined && reply.statusCode < 300 ? status : reply.statusCode;
      writer.push({
        tenantId: req.tenant.id,
        tokenId: req.tokenId,
        actorId: req.actor.id,
        method: req.method,
        ...note,
        status: outcome,
        latencyMs: reply.elapsedTime,
        at: new Date(),
      });
    });
    // After the server stopped taking requests: every answered call is in the buffer by then.
    app.addHook("onClose", async () => writer.close());
  },
  { name: "audit" },
);

function fromUrl(url: string): AuditNote {
  try {
    return targetOf(url);
  } catch {
    return { page: url.split("?")[0] }; // %-escapes that are not UTF-8, kept as sent
  }
}
