// One error handler: typed service errors become their status with a body in the
// request's format; anything unexpected is logged and answered as a bare 500.
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { FORM_READ_LIMIT, tooLarge } from "../http/body-parsers.ts";
import { isFormBody, negotiate, prefersJson } from "../http/format.ts";
import { sendLayout } from "../http/render.ts";
import {
  AppError,
  NotFoundError,
  TooManyRequestsError,
  UnauthorizedError,
  ValidationError,
} from "../lib/errors.ts";
import { isTransient } from "../lib/transient.ts";
import { escapeHtml } from "../services/registry/html.ts";
import { errorMarkdown, ERROR_TITLES as TITLES } from "../services/registry/markdown.ts";

const RETRY_AFTER_SECONDS = 2;

export async function sendError(
  req: FastifyRequest,
  reply: FastifyReply,
  status: number,
  message: string,
  err?: unknown,
) {
  const { format } = negotiate(req, (req.url.split("?")[0] ?? "/") as string);
  reply.code(status).header("Vary", "Accept");
  if (format === "html" && prefersJson(req.headers.accept))
    return reply.type("application/json; charset=utf-8").send({ error: { status, message } });
  if (format === "markdown")
    return reply.type("text/markdown; charset=utf-8").send(errorMarkdown(status, message, err));
  // A person in a browser goes to the login form; an API client that sent a token hears why it was refused.
  if (status === 401 && req.method === "GET" && req.tenant && !req.headers.authorization)
    return reply.redirect(`/login?next=${encodeURIComponent(req.url)}`, 303);
  const body =
    err instanceof ValidationError
      ? `<ul class="errors">${err.issues.map((i) => `<li data-field="${escapeHtml(i.field)}">${i.label || i.field ? `<strong>${escapeHtml(i.label ?? i.field)}</strong>: ` : ""}${escapeHtml(i.message)}</li>`).join("")}</ul>`
      : `<p>${escapeHtml(message)}</p>`;
  if (!req.tenant)
    return reply
      .type("text/html; charset=utf-8")
      .send(`<!doctype html><title>${status}</title><h1>${status} ${TITLES[status] ?? ""}</h1>${body}`);
  return sendLayout(req, reply, {
    title: `${TITLES[status] ?? "Error"}`,
    breadcrumb: [{ label: "Home", path: "/" }, { label: `Error ${status}` }],
    content: `${body}<p><a href="/">Back to the start</a></p>`,
    error: true,
  });
}

export default fp(
  async (app) => {
    app.setErrorHandler(async (error: FastifyError, req, reply) => {
      if (error instanceof TooManyRequestsError) reply.header("Retry-After", String(error.retryAfterSeconds));
      if (error instanceof AppError) return sendError(req, reply, error.status, error.message, error);
      // The database or Redis out of reach for a moment: nothing was written (a transaction
      // rolls back), so the client may simply send it again.
      if (isTransient(error)) {
        req.log.warn({ err: error }, "transient failure, answered 503");
        reply.header("Retry-After", String(RETRY_AFTER_SECONDS));
        return sendError(
          req,
          reply,
          503,
          "The service is briefly unavailable (its database or queue did not answer). Nothing was changed: try again in a moment.",
        );
      }
      const status = error.statusCode ?? 500;
      // Fastify's own "Request body is too large" names no limit; a form's is read further (body-parsers.ts).
      if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE")
        return sendError(
          req,
          reply,
          413,
          tooLarge(null, isFormBody(req) ? FORM_READ_LIMIT : req.routeOptions.bodyLimit),
        );
      if (status >= 400 && status < 500) return sendError(req, reply, status, error.message);
      req.log.error({ err: error }, "unhandled error");
      return sendError(req, reply, 500, `Something went wrong on our side (request ${req.id}).`);
    });
    app.setNotFoundHandler(async (req, reply) =>
      sendError(req, reply, 404, new NotFoundError(`No page at ${req.url}`).message),
    );
  },
  { name: "errors" },
);

export { UnauthorizedError };
