// GET /mentionable.json?q=sc&studio=general: the @-autocomplete's list for public/mentions.js,
// the same people and agents /mentionable shows as a page (pages/mentionable.ts), as JSON:
// pages have no JSON form of their own (http/format.ts), and a script wants only this.
import type { FastifyInstance } from "fastify";
import { mentionableFor } from "../services/pages/mentionable.ts";
import { ctxOf } from "./page-context.ts";

/** As many as a dropdown shows at once. */
const SHOWN = 8;

export default async function mentionableRoutes(app: FastifyInstance) {
  app.get<{ Querystring: Record<string, string> }>("/mentionable.json", async (req, reply) => {
    const query = {
      q: String(req.query.q ?? ""),
      ...(req.query.studio && { studio: String(req.query.studio) }),
    };
    const { found } = await mentionableFor(ctxOf(req), query, SHOWN);
    // Who may be mentioned changes as people come and go: never from a cache.
    return reply
      .header("Cache-Control", "private, no-store")
      .type("application/json; charset=utf-8")
      .send({ mentionable: found });
  });
}
