// The one HTTP adapter for every registry page and action:
//   GET  <page>                  the page (HTML, or markdown by Accept / `.md`)
//   GET  <page>/actions/<name>   what the action takes
//   POST <page>/actions/<name>   run it with a JSON or form body (page-actions.ts)
// Validation lives in each action's zod schema inside the registry, shared with the
// internal markdown API, so the routes declare only the envelope.

import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { takeFlash } from "../http/flash.ts";
import { type Format, pageFormat, wantsEvents } from "../http/format.ts";
import { parseUrl, splitAction, targetOf } from "../http/page-target.ts";
import { sendLayout } from "../http/render.ts";
import { serveLive } from "../http/sse.ts";
import { AppError, NotFoundError } from "../lib/errors.ts";
import { backoffMs, isTransient, pause } from "../lib/transient.ts";
import { registry } from "../services/catalog/catalog.ts";
import { actionForm, escapeHtml } from "../services/registry/html.ts";
import { renderActionMarkdown } from "../services/registry/markdown.ts";
import { fields } from "../services/registry/params.ts";
import type { Query } from "../services/registry/types.ts";
import { postAction } from "./page-actions.ts";
import { ctxOf, showPage } from "./page-context.ts";

/**
 * The page's live feed as server-sent events. A client resumes after the last event it saw
 * (`Last-Event-ID`, which EventSource sends when it reconnects); on its first connection,
 * after the position the page it shows was rendered at (`?last_event_id=`, from the page).
 */
async function streamPage(req: FastifyRequest, reply: FastifyReply, path: string, query: Query) {
  const { last_event_id, ...rest } = query;
  const header = req.headers["last-event-id"];
  const since = (typeof header === "string" && header ? header : last_event_id)?.slice(0, 200) || null;
  const feed = await registry.live(ctxOf(req), path, rest);
  return serveLive(req, reply, req.server.live, feed, since);
}

/** GET <page>/actions/<name>: what the action takes, as markdown or as its form on a page of its own. */
async function describeAction(
  req: FastifyRequest,
  reply: FastifyReply,
  format: Format,
  target: { page: string; action: string },
) {
  const ctx = ctxOf(req);
  const { action, resolved } = await registry.describe(ctx, target.page, target.action);
  const view = await registry.render(ctx, resolved, {});
  if (format === "markdown")
    return reply
      .header("Vary", "Accept")
      .type("text/markdown; charset=utf-8")
      .send(renderActionMarkdown(action, target.page, view.breadcrumb));
  const form = actionForm(action, {
    path: target.page,
    csrf: req.csrfToken,
    only: fields(action.params).map((field) => field.name),
  });
  return sendLayout(req, reply, {
    title: action.description,
    breadcrumb: [
      ...view.breadcrumb.slice(0, -1),
      { label: view.title, path: target.page },
      { label: action.name },
    ],
    content: `<p>Action <code>${action.name}</code> on <a href="${escapeHtml(target.page)}">${escapeHtml(view.title)}</a>.</p>${form}`,
  });
}

/** GET <page>: its live stream, an action's description, or the page itself with the flash a redirect left. */
async function getPage(req: FastifyRequest, reply: FastifyReply) {
  const raw = parseUrl(req.url);
  if (wantsEvents(req, raw.path)) return streamPage(req, reply, raw.path, raw.query);
  const { format, path } = pageFormat(req, raw.path);
  const target = splitAction(path);
  req.audit = target ?? { page: path };
  if (target) return describeAction(req, reply, format, target);
  const query = new URLSearchParams(raw.query as Record<string, string>).toString();
  const flash = takeFlash(req, reply);
  return showPage(req, reply, format, `${path}${query ? `?${query}` : ""}`, {
    notice: flash?.notice,
    warning: flash?.warning,
  });
}

/**
 * PUT, PATCH or DELETE on a page: 405 naming what it answers (RFC 9110 wants `Allow`), not a
 * 404 that says the page is not there. Read from the pattern alone, so it tells nothing of
 * whether the thing the path names exists or may be seen.
 */
async function wrongMethod(req: FastifyRequest, reply: FastifyReply) {
  let target: ReturnType<typeof targetOf> | null = null;
  try {
    target = targetOf(req.url);
  } catch {
    // %-escapes that are not UTF-8 name no page.
  }
  const page = target && registry.pageAt(target.page);
  if (!target || !page) throw new NotFoundError(`No page at ${req.url}`);
  const allow = target.action === undefined ? "GET, HEAD" : "GET, HEAD, POST";
  reply.header("Allow", allow);
  const actions = `${target.page === "/" ? "" : target.page}/actions/<name>`;
  throw new AppError(
    405,
    target.action === undefined
      ? `${req.method} is not allowed on ${target.page}: read it with GET, and use its actions with POST ${actions}.`
      : `${req.method} is not allowed on an action: GET describes it, POST runs it.`,
  );
}

export default async function pageRoutes(app: FastifyInstance) {
  // A read that met a dropped connection is read again once: a page is safe to repeat. After a
  // short pause, so that the pool has heard of its other connections that died with it.
  app.get("/*", async (req, reply) => {
    try {
      return await getPage(req, reply);
    } catch (err) {
      if (!isTransient(err) || reply.sent) throw err;
      req.log.warn({ err }, "transient failure on a read, reading again");
      await pause(50 + backoffMs(1));
      return getPage(req, reply);
    }
  });

  app.post("/*", { config: { reshowsOverLimitForms: true } }, postAction);
  app.route({ method: ["PUT", "PATCH", "DELETE"], url: "/*", handler: wrongMethod });
}
