// GET /mentionable.json?q=sc&studio=general: the @-autocomplete's list for public/mentions.js,
// the same people and agents /mentionable shows as a page (pages/mentionable.ts), as JSON:
// pages have no JSON form of their own (http/format.ts), and a script wants only this. People
// only: an agent reads the page, through the registry, where what it reads narrows its label.
import type { FastifyInstance } from "fastify";
import { NotFoundError } from "../lib/errors.ts";
import { mentionableFor } from "../services/pages/mentionable.ts";
import { ctxOf } from "./page-context.ts";

/** As many as a dropdown shows at once. */
const SHOWN = 8;

export default async function mentionableRoutes(app: FastifyInstance) {
  app.get<{ Querystring: Record<string, string> }>("/mentionable.json", async (req, reply) => {
    const ctx = ctxOf(req);
    if (ctx.actor.kind !== "person")
      throw new NotFoundError(
        "The autocomplete list is for people's composers: an agent reads /mentionable.",
      );
    const query = {
      q: String(req.query.q ?? ""),
      ...(req.query.studio && { studio: String(req.query.studio) }),
    };
    const { found } = await mentionableFor(ctx, query, SHOWN);
    // Who may be mentioned changes as people come and go: never from a cache.
    return reply
      .header("Cache-Control", "private, no-store")
      .type("application/json; charset=utf-8")
      .send({ mentionable: found });
  });
}
