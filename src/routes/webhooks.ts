// POST /hooks/:id on a tenant's host: another system delivers a signed body and one of
// the tenant's agents starts a run. Not a registry page: it authenticates by signature,
// not a session or token, and must see the raw bytes it signed. Its own plugin context,
// so its body parsers (raw, 64 KB) and its JSON errors stay here; machine clients read
// the answer, so every answer is JSON, errors included.
import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import { AppError, NotFoundError, TooManyRequestsError } from "../lib/errors.ts";
import { isTransient } from "../lib/transient.ts";
import {
  checkDelivery,
  deliver,
  findWebhook,
  type WebhookWithAgent,
} from "../services/agents/automations/webhooks.ts";

export const WEBHOOK_BODY_LIMIT = 64 * 1024;
const TYPES = { "application/json": "json", "text/plain": "text" } as const;
// Unknown, disabled, archived, agents off, or another tenant's: one answer, so it tells nothing.
const NO_SUCH = "No such webhook.";

declare module "fastify" {
  interface FastifyRequest {
    webhook?: WebhookWithAgent;
  }
}

const fail = (reply: FastifyReply, status: number, error: string) =>
  reply.code(status).type("application/json; charset=utf-8").send({ error });

export default async function webhookRoutes(app: FastifyInstance, opts: { scheme: "http" | "https" }) {
  app.decorateRequest("webhook", undefined);
  app.removeAllContentTypeParsers();
  for (const type of Object.keys(TYPES))
    app.addContentTypeParser(type, { parseAs: "buffer", bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    );

  app.setErrorHandler(async (err: FastifyError, req, reply) => {
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE")
      return fail(reply, 415, "Send the body as application/json or text/plain.");
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE")
      return fail(reply, 413, `The body is larger than ${WEBHOOK_BODY_LIMIT / 1024} KB.`);
    if (err instanceof TooManyRequestsError) reply.header("Retry-After", String(err.retryAfterSeconds));
    if (err instanceof AppError) return fail(reply, err.status, err.message);
    if (isTransient(err)) {
      req.log.warn({ err }, "transient failure on a webhook delivery, answered 503");
      reply.header("Retry-After", "2");
      return fail(reply, 503, "Briefly unavailable; nothing was recorded. Deliver it again in a moment.");
    }
    if (err.statusCode && err.statusCode < 500) return fail(reply, err.statusCode, err.message);
    req.log.error({ err }, "webhook delivery failed");
    return fail(reply, 500, `Something went wrong on our side (request ${req.id}).`);
  });

  // Before the body is read: an unknown webhook is a 404 whatever was sent to it.
  app.addHook("onRequest", async (req) => {
    const { id } = req.params as { id?: string };
    const hook =
      req.tenant && id && /^[a-z0-9]{6,32}$/.test(id)
        ? await findWebhook(app.prisma, req.tenant.id, id)
        : null;
    // Agents switched off for the workspace: the delivery is still a trigger, recorded as a skipped run (deliver).
    if (!hook) throw new NotFoundError(NO_SUCH);
    req.webhook = hook;
  });

  app.post("/hooks/:id", { config: { signed: true }, bodyLimit: WEBHOOK_BODY_LIMIT }, async (req, reply) => {
    const hook = req.webhook!;
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const type = (req.headers["content-type"] ?? "")
      .split(";")[0]!
      .trim()
      .toLowerCase() as keyof typeof TYPES;
    const kind = TYPES[type];
    if (!kind) return fail(reply, 415, "Send the body as application/json or text/plain.");
    const checked = checkDelivery(hook, kind, req.headers, body);
    if ("refused" in checked) return fail(reply, checked.refused.status, checked.refused.message);
    // GitHub says hello when the webhook is added there: signed, answered, and nothing runs.
    if (checked.ping) return reply.code(200).send({ ok: true, ping: "pong" });
    const out = await deliver(app.prisma, hook, checked.delivery);
    if ("retryAfterSeconds" in out)
      throw new TooManyRequestsError(
        `More than ${hook.ratePerMinute} deliveries a minute to this webhook.`,
        out.retryAfterSeconds,
      );
    const path = `/subagents/${hook.agent.handle}/runs/${out.run.id}`;
    return reply
      .code(202)
      .header("Location", path)
      .send({ run: out.run.id, url: `${opts.scheme}://${req.headers.host}${path}`, status: out.run.status });
  });
}
